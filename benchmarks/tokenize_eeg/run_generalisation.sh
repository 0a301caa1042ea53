#!/usr/bin/env bash
# The generalisation study's one-factor runs (RESULTS.md, "Study: generalisation fixes"): choosing
# splits A and B x seeds 0 and 1, two processes side by side, one torch thread each.
#   bash benchmarks/tokenize_eeg/run_generalisation.sh            # the one-factor variants
#   VARIANTS='combo:...' TAG=combo bash benchmarks/tokenize_eeg/run_generalisation.sh
set -u
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
D="batch_size=16,contrastive=false,warmup_epochs=5"
VARIANTS=${VARIANTS:-"base:$D;wd01:weight_decay=0.1,$D;wd1:weight_decay=1.0,$D;drop01:dropout=0.1,$D;drop03:dropout=0.3,$D;depth0:depth=0,$D"}
TAG=${TAG:-gen}
run() {
  OMP_NUM_THREADS=1 "$PY" benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 40 \
    --variants "$VARIANTS" --out "benchmarks/tokenize_eeg/results/study/${1}_${TAG}_s$2.yaml" \
    2> "/tmp/eeg12_${TAG}_$1_s$2.log" > /dev/null
}
(run A 0; run B 1) &
(run B 0; run A 1) &
wait

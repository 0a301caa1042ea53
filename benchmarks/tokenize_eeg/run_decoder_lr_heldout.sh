#!/usr/bin/env bash
# Held-out split H for the eeg17 study (RESULTS.md "Study: decoder depth, peak learning rate and length
# at today's defaults"), run after the verdict: base (today's defaults with the crop-leak fix) and the
# adopted candidate (or the best one if none passed), seeds 0-2, floor in the same run; two processes
# side by side (seeds 0 and 1, each base then candidate; then seed 2's base and candidate).
#   bash benchmarks/tokenize_eeg/run_decoder_lr_heldout.sh TAG EPOCHS EXTRA   e.g. e280 280 ''
# then: python benchmarks/tokenize_eeg/summarise_heldout.py benchmarks/tokenize_eeg/results/heldout_declr_*_s*.yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
TAG=$1 EPOCHS=$2 EXTRA=${3:-}
W=warm_start_epochs=16,random_crop=true
run() {  # tag epochs variant seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --epochs "$2" --variant "$3" --seed "$4" \
    --parts recon --out "benchmarks/tokenize_eeg/results/heldout_declr_$1_s$4.yaml" 2> "/tmp/eeg17_h_$1_s$4.log"
}
(run base 160 $W 0; run "$TAG" "$EPOCHS" "$W${EXTRA:+,$EXTRA}" 0) &
(run base 160 $W 1; run "$TAG" "$EPOCHS" "$W${EXTRA:+,$EXTRA}" 1) &
wait
run base 160 $W 2 &
run "$TAG" "$EPOCHS" "$W${EXTRA:+,$EXTRA}" 2 &
wait

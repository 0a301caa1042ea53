#!/usr/bin/env bash
# Held-out split H for the eeg18 study (RESULTS.md "Study: the tokens-only amplitude"), run after the
# verdict: base (today's defaults) and the adopted candidate (or the best one if none passed), seeds
# 0-2, floor in the same run, one process at a time (per seed: the candidate, then base unless BASE=0;
# base at weight 0 is today's default, the eeg17 run's heldout_declr_base_sN.yaml, deterministic).
#   bash benchmarks/tokenize_eeg/run_amp_signal_heldout.sh TAG WEIGHT   e.g. as25 0.25
# then: python benchmarks/tokenize_eeg/summarise_heldout.py benchmarks/tokenize_eeg/results/heldout_ampsig_*_s*.yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
TAG=$1 WEIGHT=$2
SEEDS=${SEEDS:-0 1 2}
W=warm_start_epochs=16,random_crop=true
run() {  # tag variant seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --epochs 160 --variant "$2" --seed "$3" \
    --parts recon --out "benchmarks/tokenize_eeg/results/heldout_ampsig_$1_s$3.yaml" 2> "/tmp/eeg18_h_$1_s$3.log"
}
for s in $SEEDS; do
  run "$TAG" "$W,signal_amplitude_weight=$WEIGHT" "$s"
done
if [ "${BASE:-1}" = 1 ]; then
  for s in $SEEDS; do run base "$W,signal_amplitude_weight=0" "$s"; done
fi

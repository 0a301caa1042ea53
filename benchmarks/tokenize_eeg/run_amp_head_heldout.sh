#!/usr/bin/env bash
# Held-out split H for the eeg20 study (RESULTS.md "Study: an amplitude head"), run after the verdict:
# the adopted candidate (or, if none passed, the one with the lowest mean max ratio) at today's defaults
# otherwise, seeds 0-2, floor in the same run, one process at a time; then base (today's defaults,
# eeg18's heldout_ampsig_as10_sN.yaml, deterministic) unless BASE=0.
#   CORTEXKIT_SHARED_DATA=/work/shared/data bash benchmarks/tokenize_eeg/run_amp_head_heldout.sh TAG VARIANT
#   e.g. ... ahead amplitude_head=true,signal_amplitude_weight=0
# then: python benchmarks/tokenize_eeg/summarise_heldout.py benchmarks/tokenize_eeg/results/heldout_amphead_*_s*.yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
TAG=$1 VARIANT=$2
SEEDS=${SEEDS:-0 1 2}
W=warm_start_epochs=16,random_crop=true
run() {  # tag variant seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --epochs 160 --variant "$2" --seed "$3" \
    --parts recon --out "benchmarks/tokenize_eeg/results/heldout_amphead_$1_s$3.yaml" 2> "/tmp/eeg20_h_$1_s$3.log"
}
for s in $SEEDS; do run "$TAG" "$W,$VARIANT" "$s"; done
if [ "${BASE:-1}" = 1 ]; then
  for s in $SEEDS; do run base "$W,signal_amplitude_weight=0.1" "$s"; done
fi

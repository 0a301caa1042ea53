#!/usr/bin/env bash
# Held-out split H for the 2026-12-07 study (reported, not deciding): the old default (warm start 16,
# 40 epochs) and the new one, seeds 0-2, reconstruction only, one torch thread per process.
#   bash benchmarks/tokenize_eeg/run_warm_length_heldout.sh old          # seeds 0-2 one after another
#   bash benchmarks/tokenize_eeg/run_warm_length_heldout.sh new EPOCHS VARIANT TAG   # seeds 0-2 side by side
# (the old runs were started while the study's pass 2 ran and not read before the decision; the new
# ones after it.) Then: python benchmarks/tokenize_eeg/summarise_heldout.py benchmarks/tokenize_eeg/results/heldout_wlen_*_s*.yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
h() {  # epochs variant tag seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --epochs "$1" --variant "$2" --seed "$4" \
    --parts recon --out "benchmarks/tokenize_eeg/results/heldout_wlen_$3_s$4.yaml" 2> "/tmp/eeg14r_h_$3_s$4.log"
}
if [ "$1" = old ]; then
  for seed in 0 1 2; do h 40 warm_start_epochs=16 old $seed; done
else
  for seed in 0 1 2; do h "$2" "$3" "$4" $seed & done
  wait
fi

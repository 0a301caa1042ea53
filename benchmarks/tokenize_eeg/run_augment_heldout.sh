#!/usr/bin/env bash
# Held-out split H for the augmentation study (RESULTS.md "Study: more distinct training windows"),
# run after the decision: the old default (warm start 16, 160 epochs) and the new one (+ random
# crop) in the same batch, seeds 0-2, two processes side by side (old, new), one torch thread each.
#   bash benchmarks/tokenize_eeg/run_augment_heldout.sh            (SEEDS="3 4 5" for more seeds)
# then: python benchmarks/tokenize_eeg/summarise_heldout.py benchmarks/tokenize_eeg/results/heldout_aug_*_s*.yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
run() {  # tag variant seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --epochs 160 --variant "$2" --seed "$3" \
    --parts recon --out "benchmarks/tokenize_eeg/results/heldout_aug_$1_s$3.yaml" 2> "/tmp/eeg15_h_$1_s$3.log"
}
SEEDS=${SEEDS:-0 1 2}
(for s in $SEEDS; do run old warm_start_epochs=16 $s; done) &
(for s in $SEEDS; do run crop warm_start_epochs=16,random_crop=true $s; done) &
wait

#!/usr/bin/env bash
# Held-out split H for the eeg21 study (RESULTS.md "Study: more temporal context per window"), run after
# the verdict: today's defaults (eeg20's adet) at PATCHES patches per window, seeds 0-2 (SEEDS), the
# k-means floor on the same windows' patches in the same run, one process at a time. The 4-patch
# reference is eeg20's results/heldout_amphead_adet_sN.yaml (deterministic at one thread).
#   CORTEXKIT_SHARED_DATA=/work/shared/data PATCHES=8 bash benchmarks/tokenize_eeg/run_patches_heldout.sh
# then: python benchmarks/tokenize_eeg/summarise_heldout.py benchmarks/tokenize_eeg/results/heldout_patches8_s*.yaml \
#           benchmarks/tokenize_eeg/results/heldout_amphead_adet_s[012].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
P=${PATCHES:-8}
for s in ${SEEDS:-0 1 2}; do
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --epochs 160 --patches "$P" --seed "$s" --parts recon \
    --cache "${CACHE:-/tmp/eeg21/cache}" \
    --variant warm_start_epochs=16,random_crop=true,amplitude_head=true,amplitude_head_detach=true,signal_amplitude_weight=0 \
    --out "benchmarks/tokenize_eeg/results/heldout_patches${P}_s$s.yaml" 2> "/tmp/eeg21/h_p${P}_s$s.log"
done

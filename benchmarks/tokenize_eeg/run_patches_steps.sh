#!/usr/bin/env bash
# Information only, after the eeg21 verdict (RESULTS.md "Study: more temporal context per window"): p8 at the
# 4-patch reference's optimiser steps (epochs, warm-start and warmup epochs x 7/4 on A, x 6/3 on B: A 1120,
# B 960 steps), to tell the window's context from the fewer steps the same epochs give. Cells A0, B0.
#   CORTEXKIT_SHARED_DATA=/work/shared/data bash benchmarks/tokenize_eeg/run_patches_steps.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
V='amplitude_head=true,amplitude_head_detach=true,signal_amplitude_weight=0,depth=0,batch_size=16,contrastive=false,random_crop=true'
cell() {  # split seed epochs warm warmup
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs "$3" --patches 8 \
    --cache "${CACHE:-/tmp/eeg21/cache}" --variants "p8steps:$V,epochs=$3,warm_start_epochs=$4,warmup_epochs=$5" \
    --out "benchmarks/tokenize_eeg/results/study/$1_patches8steps_s$2.yaml" 2> "/tmp/eeg21/study_p8steps_$1_s$2.log"
}
cell A 0 280 28 8.75; cell B 0 320 32 10

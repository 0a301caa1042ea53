#!/usr/bin/env bash
# Issue 33 augmentation study (RESULTS.md "Study: more distinct training windows"): choosing splits
# A and B x seeds 0, 1, two processes side by side (seed 0 and seed 1), one torch thread each, every
# variant at the base's optimiser steps (study.py scales the epochs of a variant with more windows).
#   bash benchmarks/tokenize_eeg/run_augment.sh
# then: python benchmarks/tokenize_eeg/decide_generalisation.py --rule augment \
#           benchmarks/tokenize_eeg/results/study/[AB]_aug*_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
# train's defaults since 2026-12-07: tiny, depth 0, batch 16, NT-Xent off, warmup 5, warm start 16, 160 epochs
W='epochs=160,warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5'
# pass 1: base, (i) overlapping windows at 4 sub-patch phases, (ii) random crop; pass 2: (iii) gain
V="base:$W;s125:stride=1.25,$W;crop:random_crop=true,$W"
V2="gain:amplitude_jitter=0.25,$W"
cell() {  # split seed variants file-tag
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 160 \
    --variants "$3" --out "benchmarks/tokenize_eeg/results/study/$1_$4_s$2.yaml" \
    2> "/tmp/eeg15_$4_$1_s$2.log"
}
(cell A 0 "$V" aug; cell B 0 "$V" aug; cell A 0 "$V2" aug2; cell B 0 "$V2" aug2) &
(cell A 1 "$V" aug; cell B 1 "$V" aug; cell A 1 "$V2" aug2; cell B 1 "$V2" aug2) &
wait

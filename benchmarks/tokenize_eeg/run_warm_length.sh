#!/usr/bin/env bash
# The 2026-12-07 study (RESULTS.md "Study: length, amplitude side and warm-start k-means"): choosing
# splits A and B x seeds 0, 1, two processes side by side (seed 0 and seed 1), one torch thread each.
#   bash benchmarks/tokenize_eeg/run_warm_length.sh
# then: python benchmarks/tokenize_eeg/decide_generalisation.py --rule warm-length \
#           benchmarks/tokenize_eeg/results/study/[AB]_wlen*_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
W='warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5'
# pass 1 (the cheap candidates, base in the same processes), pass 2 e160 (~4x base's CPU) in files
# of their own, so that a load too high to finish e160 still leaves pass 1 complete
V="base:$W;e80:epochs=80,$W;nophase:phase_weight=0,$W;wsk:warm_start_kmeans_patches=1000000,warm_start_kmeans_iterations=25,$W"
V160="e160:epochs=160,$W"
cell() {  # split seed variants file-tag
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 40 \
    --variants "$3" --out "benchmarks/tokenize_eeg/results/study/$1_$4_s$2.yaml" \
    2> "/tmp/eeg14r_$4_$1_s$2.log"
}
(cell A 0 "$V" wlen; cell B 0 "$V" wlen; cell A 0 "$V160" wlen160; cell B 0 "$V160" wlen160) &
(cell A 1 "$V" wlen; cell B 1 "$V" wlen; cell A 1 "$V160" wlen160; cell B 1 "$V160" wlen160) &
wait

#!/usr/bin/env bash
# Issue 33 eeg17 study (RESULTS.md "Study: decoder depth, peak learning rate and length at today's
# defaults"): choosing splits A and B x seeds 0, 1, two processes side by side (seed 0 and seed 1), one
# torch thread each. base = train's defaults with the validation-leak fix; leaky = the crops before
# the fix (measures the fix, no candidate); dec2, lr3, e280 = the candidates.
#   bash benchmarks/tokenize_eeg/run_decoder_lr.sh
# then: python benchmarks/tokenize_eeg/decide_generalisation.py --rule decoder-lr-length \
#           benchmarks/tokenize_eeg/results/study/[AB]_declr*_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
# train's defaults since 2026-12-07 late: tiny, depth 0, batch 16, NT-Xent off, warmup 5, warm start 16,
# 160 epochs, random crop (lr 1e-3 is study.py's default)
W='epochs=160,warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5,random_crop=true'
# pass 1: base, leaky, dec2, lr3; pass 2: e280 (the longest, last so that pass 1 completes)
V="base:$W;leaky:leaky_crop=true,$W;dec2:decoder_depth=2,$W;lr3:lr=0.0003,$W"
V2="e280:${W/epochs=160/epochs=280}"
cell() {  # split seed variants file-tag
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 160 \
    --variants "$3" --out "benchmarks/tokenize_eeg/results/study/$1_$4_s$2.yaml" \
    2> "/tmp/eeg17_$4_$1_s$2.log"
}
(cell A 0 "$V" declr; cell B 0 "$V" declr; cell A 0 "$V2" declr2; cell B 0 "$V2" declr2) &
(cell A 1 "$V" declr; cell B 1 "$V" declr; cell A 1 "$V2" declr2; cell B 1 "$V2" declr2) &
wait

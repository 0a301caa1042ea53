#!/usr/bin/env bash
# Issue 33 eeg18 study (RESULTS.md "Study: the tokens-only amplitude"): choosing splits A and B x seeds
# 0, 1, one process at a time, one torch thread. base = train's defaults; as25 / as1 = the same plus
# the amplitude-spectrum term on the decoded signal at weight 0.25 / 1 (signal_amplitude_weight).
#   bash benchmarks/tokenize_eeg/run_amp_signal.sh
# then: python benchmarks/tokenize_eeg/decide_generalisation.py --rule amp-signal \
#           benchmarks/tokenize_eeg/results/study/[AB]_ampsig_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
# train's defaults since 2026-12-07 late: tiny, depth 0, batch 16, NT-Xent off, warmup 5, warm start 16,
# 160 epochs, random crop (lr 1e-3 is study.py's default)
W='epochs=160,warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5,random_crop=true'
V="base:$W;as25:signal_amplitude_weight=0.25,$W;as1:signal_amplitude_weight=1.0,$W"
cell() {  # split seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 160 \
    --variants "$V" --out "benchmarks/tokenize_eeg/results/study/$1_ampsig_s$2.yaml" \
    2> "/tmp/eeg18_ampsig_$1_s$2.log"
}
cell A 0; cell B 0; cell A 1; cell B 1

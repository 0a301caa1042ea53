#!/usr/bin/env bash
# Issue 33 eeg20 study (RESULTS.md "Study: an amplitude head"): the tokens-only amplitude read from a
# second head on the temporal decoder trained for |rfft| (TokenizerConfig.amplitude_head), on the
# choosing splits A, B x seeds 0, 1, one process at a time. Pass 1 = the candidates ahead (head, the
# |rfft(x_hat)| term off) and ahead10 (head, term kept at 0.1) in every cell; pass 2 = base (today's
# CLI defaults, signal_amplitude_weight 0.1: eeg18's as10, deterministic) in every cell, after pass 1.
#   CORTEXKIT_SHARED_DATA=/work/shared/data bash benchmarks/tokenize_eeg/run_amp_head.sh
# then: python benchmarks/tokenize_eeg/decide_generalisation.py --rule amp-head \
#           benchmarks/tokenize_eeg/results/study/[AB]_amphead*_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
W='epochs=160,warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5,random_crop=true'
cell() {  # split seed pass variants
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 160 \
    --variants "$4" --out "benchmarks/tokenize_eeg/results/study/$1_amphead$3_s$2.yaml" \
    2> "/tmp/eeg20_amphead$3_$1_s$2.log"
}
CAND="ahead:amplitude_head=true,signal_amplitude_weight=0,$W;ahead10:amplitude_head=true,signal_amplitude_weight=0.1,$W"
for c in "A 0" "B 0" "A 1" "B 1"; do cell $c "" "$CAND"; done
for c in "A 0" "B 0" "A 1" "B 1"; do cell $c "_base" "base:signal_amplitude_weight=0.1,$W"; done

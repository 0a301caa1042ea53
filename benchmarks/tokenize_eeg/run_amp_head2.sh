#!/usr/bin/env bash
# Issue 33 eeg20 study, amendment (RESULTS.md "Study: an amplitude head", "Amendment"): the third
# candidate adet = the amplitude read from a decoder of its own on the detached temporal codes
# (amplitude_head_detach), the |rfft(x_hat)| term off, on the same 4 cells, one process at a time,
# after run_amp_head.sh (WAIT_PID: that script's process, if still running).
#   CORTEXKIT_SHARED_DATA=/work/shared/data WAIT_PID=N bash benchmarks/tokenize_eeg/run_amp_head2.sh
# then: python benchmarks/tokenize_eeg/decide_generalisation.py --rule amp-head \
#           benchmarks/tokenize_eeg/results/study/[AB]_amphead*_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
if [ -n "${WAIT_PID:-}" ]; then
  while kill -0 "$WAIT_PID" 2>/dev/null; do sleep 20; done
fi
W='epochs=160,warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5,random_crop=true'
cell() {  # split seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 160 \
    --variants "adet:amplitude_head=true,amplitude_head_detach=true,signal_amplitude_weight=0,$W" \
    --out "benchmarks/tokenize_eeg/results/study/$1_amphead2_s$2.yaml" 2> "/tmp/eeg20_amphead2_$1_s$2.log"
}
cell A 0; cell B 0; cell A 1; cell B 1

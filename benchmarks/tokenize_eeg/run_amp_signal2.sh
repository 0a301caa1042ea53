#!/usr/bin/env bash
# Issue 33 eeg18 study, amendment (RESULTS.md "Study: the tokens-only amplitude", "Amendment"): the
# third candidate as10 = train's defaults plus the amplitude-spectrum term on the decoded signal at
# weight 0.1, on the same 4 cells (choosing splits A, B x seeds 0, 1), one process at a time, after
# run_amp_signal.sh; base is that script's (same code path at weight 0, deterministic).
#   bash benchmarks/tokenize_eeg/run_amp_signal2.sh
# then: python benchmarks/tokenize_eeg/decide_generalisation.py --rule amp-signal \
#           benchmarks/tokenize_eeg/results/study/[AB]_ampsig*_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
W='epochs=160,warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5,random_crop=true'
cell() {  # split seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$1" --seed "$2" --epochs 160 \
    --variants "as10:signal_amplitude_weight=0.1,$W" \
    --out "benchmarks/tokenize_eeg/results/study/$1_ampsig2_s$2.yaml" 2> "/tmp/eeg18_ampsig2_$1_s$2.log"
}
cell A 0; cell B 0; cell A 1; cell B 1

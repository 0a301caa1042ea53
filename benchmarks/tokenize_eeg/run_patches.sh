#!/usr/bin/env bash
# Issue 33 eeg21 study (RESULTS.md "Study: more temporal context per window (--patches)"): today's
# defaults (eeg20's adet) at 8 (and 6 with PATCHES="8 6") 1-s patches per window on the choosing cells
# A/B x seeds 0/1, the k-means floor fitted on the same windows' patches in the same run; one process
# at a time. The 4-patch reference is eeg20's results/study/[AB]_amphead2_s[01].yaml (reproduced to the
# digit on A0 first: REPRO=1 writes /tmp/eeg21/repro_A_p4_s0.yaml).
#   CORTEXKIT_SHARED_DATA=/work/shared/data bash benchmarks/tokenize_eeg/run_patches.sh
# then: python benchmarks/tokenize_eeg/decide_patches.py benchmarks/tokenize_eeg/results/study/[AB]_amphead2_s[01].yaml \
#           benchmarks/tokenize_eeg/results/study/[AB]_patches*_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
CACHE=${CACHE:-/tmp/eeg21/cache}
W='epochs=160,warm_start_epochs=16,depth=0,batch_size=16,contrastive=false,warmup_epochs=5,random_crop=true'
V="amplitude_head=true,amplitude_head_detach=true,signal_amplitude_weight=0,$W"
cell() {  # patches split seed
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/study.py --split "$2" --seed "$3" --epochs 160 --patches "$1" \
    --cache "$CACHE" --variants "p$1:$V" \
    --out "benchmarks/tokenize_eeg/results/study/$2_patches$1_s$3.yaml" 2> "/tmp/eeg21/study_p$1_$2_s$3.log"
}
for p in ${PATCHES:-8}; do
  cell "$p" A 0; cell "$p" B 0; cell "$p" A 1; cell "$p" B 1
done

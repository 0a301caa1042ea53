#!/usr/bin/env bash
# The event-probe study's rule (RESULTS.md "Study: event-probe features that keep the montage"),
# unchanged, re-applied at today's `train` defaults (160 epochs, warm start 16, random crop):
# choosing splits A and B, seeds 0-1, all four finished before any split-H run starts; then split H
# (held out, reporting only) seeds 0-2 with recon (cached k-means floor), probe and encode speed.
# Two processes at a time, one torch thread each.
#   bash benchmarks/tokenize_eeg/run_probe_defaults.sh          (STAGE=choose or STAGE=heldout for one stage;
#   STAGE=heldout H_SEEDS="3 4 5" for more held-out seeds)
# then: python benchmarks/tokenize_eeg/decide_probe_parts.py benchmarks/tokenize_eeg/results/probe/[AB]_defaults_s[01].yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
SETS='hist,mean;chmean;champ;chpow;chmean,champ,chpow;hist,mean,chmean,champ,chpow'
VARIANT=warm_start_epochs=16,random_crop=true
run() {  # split seed parts
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --split "$1" --parts "$3" --epochs 160 \
    --seed "$2" --variant "$VARIANT" --feature-sets "$SETS" \
    --out "benchmarks/tokenize_eeg/results/probe/$1_defaults_s$2.yaml" 2> "/tmp/eeg16_$1_s$2.log" > /dev/null
}
STAGE=${STAGE:-all}
if [ "$STAGE" != heldout ]; then
  (run A 0 probe; run B 0 probe) &
  (run A 1 probe; run B 1 probe) &
  wait
fi
if [ "$STAGE" != choose ]; then
  set -- ${H_SEEDS:-0 1 2}  # H_SEEDS="3 4 5": more seeds, reporting only
  (run H "$1" recon,probe,speed; [ -z "${3:-}" ] || run H "$3" recon,probe,speed) &
  (run H "$2" recon,probe,speed) &
  wait
fi

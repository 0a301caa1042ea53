#!/usr/bin/env bash
# eeg19: the HD event-probe and encode-speed figures re-measured on held-out split H at today's full
# `train` defaults (160 epochs, warm start 16, random crop, signal amplitude weight 0.1 since eeg18;
# TrainConfig's own default stays 0, so the variant spells it out). Reporting only, no choice.
# One process at a time, seeds one after another, one torch thread.
#   bash benchmarks/tokenize_eeg/run_probe_amp.sh          (SEEDS="3 4 5" for more seeds)
# then: python benchmarks/tokenize_eeg/decide_probe_parts.py benchmarks/tokenize_eeg/results/probe/H_amp10_s*.yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
SETS='hist,mean;chmean'
VARIANT=warm_start_epochs=16,random_crop=true,signal_amplitude_weight=0.1
for s in ${SEEDS:-0 1 2}; do
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --split H --parts probe,speed --epochs 160 \
    --seed "$s" --variant "$VARIANT" --feature-sets "$SETS" \
    --out "benchmarks/tokenize_eeg/results/probe/H_amp10_s$s.yaml" 2> "/tmp/eeg19_H_s$s.log" > /dev/null
done

#!/usr/bin/env bash
# Issue 33 eeg20, reporting only: the event probe and encode speed on split H at the eeg20 defaults
# (--amplitude-head own, --signal-amplitude-weight 0; otherwise as run_probe_amp.sh, eeg19's HE),
# seeds 0-2, one process at a time. Nothing is chosen here.
#   CORTEXKIT_SHARED_DATA=/work/shared/data bash benchmarks/tokenize_eeg/run_probe_amphead.sh
# then: python benchmarks/tokenize_eeg/decide_probe_parts.py benchmarks/tokenize_eeg/results/probe/H_amphead_s*.yaml
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
SETS='hist,mean;chmean'
VARIANT=warm_start_epochs=16,random_crop=true,signal_amplitude_weight=0,amplitude_head=true,amplitude_head_detach=true
for s in ${SEEDS:-0 1 2}; do
  OMP_NUM_THREADS=1 $PY benchmarks/tokenize_eeg/heldout.py --split H --parts probe,speed --epochs 160 \
    --seed "$s" --variant "$VARIANT" --feature-sets "$SETS" \
    --out "benchmarks/tokenize_eeg/results/probe/H_amphead_s$s.yaml" 2> "/tmp/eeg20_probe_s$s.log" > /dev/null
done

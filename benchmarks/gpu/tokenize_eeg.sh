#!/usr/bin/env bash
# tokenize-eeg on a lent GPU (issue 20's reconstruction figure, which the CPU presets miss from
# underfitting): TFDual and the one-codebook ablation with a larger encoder and many more steps than
# this machine allows, on the same cached windows (S001 R01-R10 train, R11-R14 test, 4-s windows,
# K = 1024), evaluated on the device. Needs .gpu/ from benchmarks/gpu/prepare.sh (the wheel and
# .gpu/eeg_windows.npz; no MNE or sklearn on the device). The k-means floor is not refitted there:
# it is deterministic (results/floor.yaml: time 0.541, amplitude 0.368 / linear 0.0745).
# ~4 min on an H200 for PRESET=small EPOCHS=400 (estimate: 2 x 3,600 steps of batch 32, 77 tokens).
#   OUT=gpu-out PRESET=small EPOCHS=400 bash benchmarks/gpu/tokenize_eeg.sh
# Carry only what it reads (.gpu/ whole is ~62 MB with the CIFAR subset, at the 64 MiB limit):
#   carry [".gpu/eeg_windows.npz", ".gpu/cortexkit-<version>-py3-none-any.whl"] (24 MB + the wheel)
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
timeout "${SECONDS_LIMIT:-420}" python3 benchmarks/tokenize_eeg/run.py --part recon --no-floor \
    --cache .gpu/eeg_windows.npz --device cuda --preset "${PRESET:-small}" --epochs "${EPOCHS:-400}" \
    --out "$OUT/eeg_recon_gpu.yaml" 2> "$OUT/eeg_recon_gpu.log"
echo "exit $?"; tail -5 "$OUT/eeg_recon_gpu.log"

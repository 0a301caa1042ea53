#!/usr/bin/env bash
# The device checks of issues 31 and 33 (SKIP_EEG=1: the train-pcn part alone), one script for a lent H200 machine (16 CPU cores; ~7 min):
#   1. tokenize-eeg (issue 33, item 1): is the miss against the k-means floor underfitting? TFDual at
#      the command line's defaults (no NT-Xent, k-means init, dead-code restart), the small preset,
#      EPOCHS epochs on cuda, on the cached S001 windows (R01-R10 train, R11-R14 test, 4-s windows,
#      K = 1024). The floor is computed on the CPU here (deterministic: time NMSE 0.541).
#   2. train-pcn (issue 31, item 4): the CIFAR-10 rows with 3 seeds: VGG-5/7/9 at 1/8 width,
#      BP, BP + WN, PC, Meta-PCN at the tool's defaults, 3,000 training images (seed-1234 subset of
#      500 per class of the 10k subset) / 2,000 test, augmentation, 3 epochs. The bench is CPU code:
#      nine processes of one thread each on the device's cores.
# Needs .gpu/ (git-ignored): the cortexkit wheel, .gpu/eeg_windows.npz (benchmarks/tokenize_eeg/run.py
# --part cache) and .gpu/cifar5k.safetensors (the first 500 training images of each class and all 2,000 test
# images of ../shared/data/pcn/cifar10_jpg_train10k_test2k.safetensors).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT" /tmp/pcn
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; nproc
EEG=
[ -n "${SKIP_EEG:-}" ] || timeout "${EEG_SECONDS:-400}" python3 benchmarks/tokenize_eeg/run.py --part recon --no-floor --codebooks dual \
    --cache .gpu/eeg_windows.npz --device cuda --preset small --epochs "${EPOCHS:-200}" \
    --out "$OUT/eeg_recon_gpu.yaml" 2> "$OUT/eeg_recon_gpu.log" &
[ -n "${SKIP_EEG:-}" ] || EEG=$!
for arch in vgg5 vgg7 vgg9; do for seed in 0 1 2; do
  timeout "${PCN_SECONDS:-400}" python3 benchmarks/train_pcn/bench.py cifar --data .gpu/cifar5k.safetensors \
      --archs $arch --width-scale 0.125 --train-limit 3000 --epochs 3 --seeds $seed \
      --methods BP,BP+WN,PC,Meta-PCN -o /tmp/pcn/$arch-$seed.yaml 2> /tmp/pcn/$arch-$seed.log &
done; done
[ -z "$EEG" ] || { wait $EEG; echo "eeg exit $?"; tail -3 "$OUT/eeg_recon_gpu.log"; }
wait
python3 - "$OUT/pcn_cifar_gpu.yaml" <<'PY'
import glob, sys, yaml
runs, meta = [], None
for path in sorted(glob.glob("/tmp/pcn/*.yaml")):
    part = yaml.safe_load(open(path))
    meta = meta or {k: v for k, v in part.items() if k not in ("runs", "seeds", "spec")}
    runs += part["runs"]
yaml.safe_dump({**(meta or {}), "runs": runs}, open(sys.argv[1], "w"), sort_keys=False, width=200)
print(f"{len(runs)} pcn runs")
PY
cat /tmp/pcn/vgg9-2.log | tail -3

#!/usr/bin/env bash
# The device checks of this project, as one script for a lent GPU (device tool; ~6 min on an H200).
# Needs .gpu/ (git-ignored): the cortexkit wheel, the CIFAR-10 subset and the MAGIC 80/20 split made by
# benchmarks/gpu/prepare.sh. Writes YAML logs and a summary under $OUT (default ./gpu-out).
#   1. train-pcn: the issue's headline check, VGG-5..13 at full width on the CIFAR-10 subset
#      (10k/2k), BP, BP + WN, Meta-PCN, PC, same seed, epochs E, T = max(8, L - 1), AdamW 3e-4.
#   2. estimate-copula: the full CDC configuration (512 x 6, Adam 5e-5, batch 1024) on MAGIC seed 0
#      for a fixed time box, then evaluate (log Z by IS, W2, tau) on the held-out 20 %.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
E=${EPOCHS:-8}; FIT_S=${FIT_SECONDS:-240}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
D=.gpu/cifar10_jpg_train10k_test2k.safetensors
mkdir -p /tmp/models

( cortexkit estimate-copula fit .gpu/magic_train.csv --device cuda --time-limit "$FIT_S" --steps 1000000 \
      -o /tmp/models/magic_cdc.st 2> "$OUT/copula_fit.log" &&
  cortexkit estimate-copula evaluate /tmp/models/magic_cdc.st .gpu/magic_test.csv --device cuda \
      -o "$OUT/copula_magic_gpu.yaml" 2>> "$OUT/copula_fit.log" ) &
COPULA=$!

declare -A STEPS=([vgg5]=8 [vgg7]=8 [vgg9]=8 [vgg11]=10 [vgg13]=12)
for arch in vgg5 vgg7 vgg9 vgg11 vgg13; do
  T=${STEPS[$arch]}
  for m in bp bp+wn meta-pcn pc; do
    case $m in bp) a="--method bp --no-weight-norm";; bp+wn) a="--method bp --weight-norm";;
               meta-pcn) a="--method meta-pcn";; pc) a="--method pc";; esac
    timeout 240 cortexkit train-pcn train $D --split train --test $D --test-split test --arch $arch \
      $a --steps $T --epochs $E --lr 3e-4 --augment --device cuda -q \
      --log /tmp/models/$arch-$m.yaml -o /tmp/models/$arch-$m.st &
  done
  wait $(jobs -p | grep -v "^$COPULA$") 2>/dev/null
  python3 - "$arch" <<'PY' >> "$OUT/pcn_vgg_gpu.yaml"
import sys, yaml
arch = sys.argv[1]
row = {}
for m in ("bp", "bp+wn", "meta-pcn", "pc"):
    try:
        log = yaml.safe_load(open(f"/tmp/models/{arch}-{m}.yaml"))
        hist = log["epochs"] if isinstance(log, dict) and "epochs" in log else log
        tops = [100 * r["test_top1"] for r in hist]
        row[m] = {"final": round(tops[-1], 2), "best": round(max(tops), 2), "epochs": len(tops),
                  "s_per_epoch": round(sum(r["seconds"] for r in hist) / len(hist), 2)}
    except Exception as e:  # a failed or timed-out run is recorded, not fatal
        row[m] = f"no log: {type(e).__name__}: {e}"
print(yaml.safe_dump({arch: row}, sort_keys=False), end="")
PY
  cat "$OUT/pcn_vgg_gpu.yaml" | tail -20
done
wait $COPULA; echo "copula exit $?"; tail -3 "$OUT/copula_fit.log"; cat "$OUT/copula_magic_gpu.yaml" 2>/dev/null | head -40

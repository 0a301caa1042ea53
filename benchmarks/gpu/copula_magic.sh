#!/usr/bin/env bash
# estimate-copula on a lent GPU (issue 32: "--device cuda scales up, not the default"): the default
# fit (--copula auto, --budget 240) of MAGIC's 80/20 split (train_test_split random_state 0, as
# benchmarks/estimate_copula/defaults.py) with --device cuda, then evaluate at its defaults, and the
# Gaussian copula on the same split. The TLL vine is not on the device: its figure on this split is
# defaults.py's (6.493). Needs .gpu/: the wheel, magic_train.csv, magic_test.csv.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; cd .gpu
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ./*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
s=$(date +%s)
cortexkit estimate-copula fit magic_train.csv --device cuda --seed 0 -o /tmp/m.st 2> "$OUT/copula_fit.log"
echo "fit exit $? in $(( $(date +%s) - s )) s"; tail -8 "$OUT/copula_fit.log"
s=$(date +%s)
cortexkit estimate-copula evaluate /tmp/m.st magic_test.csv --device cuda --seed 0 -o "$OUT/copula_magic_cuda.yaml"
echo "evaluate exit $? in $(( $(date +%s) - s )) s"
cortexkit estimate-copula fit magic_train.csv --copula gaussian -o /tmp/g.st && \
  cortexkit estimate-copula evaluate /tmp/g.st magic_test.csv --seed 0 -o "$OUT/copula_magic_gaussian.yaml"
cortexkit inspect /tmp/m.st > "$OUT/copula_magic_cuda_model.yaml"
grep -E "^(ll|ll_raw|log_z|log_z_stderr|ess_fraction|is_draws|ll_trusted|w2):" "$OUT/copula_magic_cuda.yaml"
grep -E "^ll:" "$OUT/copula_magic_gaussian.yaml"

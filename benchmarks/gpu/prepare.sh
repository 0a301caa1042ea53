#!/usr/bin/env bash
# Fill .gpu/ (git-ignored) for benchmarks/gpu/run.sh: the wheel, the CIFAR-10 subset, MAGIC's 80/20 split
# (sklearn train_test_split, random_state 0, as benchmarks/estimate_copula/bench.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${CORTEXKIT_SHARED_DATA:-../shared/data}
rm -rf .gpu; mkdir -p .gpu
python -m pip wheel -q --no-deps -w .gpu . 2>/dev/null
cp "$DATA/pcn/cifar10_jpg_train10k_test2k.safetensors" .gpu/
python - "$DATA" <<'PY'
import sys, numpy as np
from sklearn.model_selection import train_test_split
x = np.genfromtxt(f"{sys.argv[1]}/copula/magic04.data", delimiter=",", usecols=range(10))
train, test = train_test_split(x, test_size=0.2, random_state=0)
head = ",".join(f"c{j}" for j in range(10))
for name, a in (("train", train), ("test", test)):
    np.savetxt(f".gpu/magic_{name}.csv", a, delimiter=",", header=head, comments="", fmt="%.10g")
PY
# tokenize-eeg: the recon windows through MNE here (benchmarks/gpu/tokenize_eeg.sh reads them there)
python benchmarks/tokenize_eeg/run.py --part cache --cache .gpu/eeg_windows.npz --out .gpu/eeg_cache.yaml
ls -la .gpu

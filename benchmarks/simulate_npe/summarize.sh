#!/usr/bin/env bash
# Regenerate the YAML summaries of benchmarks/simulate_npe/results/*.jsonl (run from the repository root).
set -euo pipefail
R=benchmarks/simulate_npe/results
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_amortized.jsonl $R/ou_amortized_1e4.jsonl --yaml $R/ou_amortized.yaml > /dev/null
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_sequential.jsonl --yaml $R/ou_sequential.yaml > /dev/null
python benchmarks/simulate_npe/ou_bench.py summarize $R/sir_amortized.jsonl --task sir --yaml $R/sir_amortized.yaml > /dev/null
echo "wrote $R/ou_amortized.yaml $R/ou_sequential.yaml $R/sir_amortized.yaml"

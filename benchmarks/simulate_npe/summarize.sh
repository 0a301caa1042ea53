#!/usr/bin/env bash
# Regenerate the YAML summaries of benchmarks/simulate_npe/results/*.jsonl (run from the repository root).
set -euo pipefail
R=benchmarks/simulate_npe/results
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_amortized.jsonl $R/ou_amortized_1e4.jsonl $R/ou_amortized_lf1e5.jsonl --yaml $R/ou_amortized.yaml > /dev/null
# the same plus intermediate budgets (nested subsets of the paper's 10^4 HF set): a finer HF-efficiency curve
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_amortized.jsonl $R/ou_amortized_1e4.jsonl $R/ou_amortized_lf1e5.jsonl $R/ou_amortized_fine_a.jsonl $R/ou_amortized_fine_b.jsonl --yaml $R/ou_amortized_fine.yaml > /dev/null
# cross-check: sbi's NSF with the paper's architecture (logit theta map, 8 bins) beside ours, seeds 12-16
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_amortized.jsonl $R/ou_amortized_1e4.jsonl $R/ou_amortized_sbi_paper.jsonl --seeds 12 13 14 15 16 --yaml $R/ou_amortized_sbi_paper.yaml > /dev/null
# N_HF 10^5 (simulated with the built-in HF simulator; seeds 12, 13)
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_amortized_1e5.jsonl --yaml $R/ou_amortized_1e5.yaml > /dev/null
# the paper's 30 observations (true_obs_30, the observations of its MF-NPE5 row): seeds 12-15
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_amortized_obs30.jsonl --yaml $R/ou_amortized_obs30.yaml > /dev/null
# the same plus MF-NPE4 and sbi NPE at N_HF 200-700 (nested subsets of the paper's 10^4 HF set)
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_amortized_obs30.jsonl $R/ou_amortized_obs30_fine.jsonl --yaml $R/ou_amortized_obs30_fine.yaml > /dev/null
python benchmarks/simulate_npe/ou_bench.py summarize $R/ou_sequential.jsonl --yaml $R/ou_sequential.yaml > /dev/null
python benchmarks/simulate_npe/ou_bench.py summarize $R/sir_amortized.jsonl --task sir --yaml $R/sir_amortized.yaml > /dev/null
# the same plus intermediate budgets (nested prefixes of the one 10^4 HF set) and seeds 18-21 (every
# budget): MF-NPE4 and sbi NPE over seeds 12-21, our NPE over 12-17
python benchmarks/simulate_npe/ou_bench.py summarize $R/sir_amortized.jsonl $R/sir_amortized_fine.jsonl $R/sir_amortized_fine_more.jsonl --task sir --yaml $R/sir_amortized_fine.yaml > /dev/null
# the earlier SIR run with the authors' log-only map for the log-normal prior (commit 619823e)
python benchmarks/simulate_npe/ou_bench.py summarize $R/sir_amortized_lf4.jsonl --task sir --yaml $R/sir_amortized_lf4.yaml > /dev/null
# the earlier SIR run with the 32-day LF grid (the official config default), kept for the record
python benchmarks/simulate_npe/ou_bench.py summarize $R/sir_amortized_lf32.jsonl --task sir --yaml $R/sir_amortized_lf32.yaml > /dev/null
echo "wrote the YAML beside each jsonl in $R"

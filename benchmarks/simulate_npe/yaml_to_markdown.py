"""Print the markdown tables of benchmarks/RESULTS.md from a summary YAML (python yaml_to_markdown.py FILE.yaml)."""
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
rows = d["rows"]
print("| method | tool | N_HF | RF-C2ST mean ± 95% CI (n) | paper | train CPU s |")
print("|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['method']} | {r['tool']} | {r['n_hf']} | {r['rf_c2st_mean']:.3f} ± {r['ci95']:.3f} ({r['n']}) | {r['paper_mean'] if r['paper_mean'] is not None else '–'} | {r['mean_train_cpu_s']} |")
print()
print("| N_HF | ours | anchor | C2ST ours − anchor | train time ours / anchor | per-epoch time ours / anchor |")
print("|---|---|---|---|---|---|")
for r in d["ratios"]:
    pe = r.get('per_epoch_time_ratio'); pe = '-' if pe is None else f'{pe:.2f}'
    print(f"| {r['n_hf']} | {r['ours']} | {r['anchor']} | {r['c2st_ours_minus_anchor']:+.3f} | {r['train_time_ratio_ours_over_anchor']:.2f} | {pe} |")
print()
print("HF-efficiency (smallest N_HF reaching C2ST %s): " % d["hf_efficiency"][0]["threshold"] + "; ".join(f"{e['method']} ({e['tool']}): {e['n_hf_to_reach']}" for e in d["hf_efficiency"]))

"""Per-seed rows and means of heldout.py's files, grouped by epochs (and encoder depth where a file
sets it; the train-fit time NMSE and the best-validation epoch's time ratio where a file has them):

    python benchmarks/tokenize_eeg/summarise_heldout.py benchmarks/tokenize_eeg/results/heldout_e*_s*.yaml
"""

import sys
from collections import defaultdict

import numpy as np
import yaml

groups = defaultdict(list)
print("| epochs | seed | train-fit time NMSE | best-val epoch: time ratio | time NMSE (floor) | ratio | amp. NMSE tokens only (floor) | ratio | L/R fist tokens / band | "
      "task/rest tokens / band | encode win/s ours / plain (x) | train wall / CPU s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    d = yaml.safe_load(open(path))
    nan = {"balanced_accuracy": float("nan")}
    r = d["reconstruction"]  # --parts recon files have no probe / speed: NaN there
    p = d.get("probe") or {k: {"tokens": nan, "band_power": nan}
                           for k in ("left_vs_right_fist_executed", "task_vs_rest")}
    s = d.get("speed") or dict.fromkeys(("ours_windows_per_s", "plain_windows_per_s", "speedup"), float("nan"))
    f = r["kmeans_floor"]
    amp_floor = min(f["amplitude_nmse_signal"], f["amplitude_nmse"])
    lr, tr = p["left_vs_right_fist_executed"], p["task_vs_rest"]
    row = {"time": r["tokenizer"]["time_nmse"], "time_floor": f["time_nmse"], "rt": r["ratio_time"],
           "amp": r["tokenizer"]["amplitude_nmse_tokens_only"], "amp_floor": amp_floor,
           "ra": r["ratio_amplitude_tokens_only"],
           "lr_t": lr["tokens"]["balanced_accuracy"], "lr_b": lr["band_power"]["balanced_accuracy"],
           "tr_t": tr["tokens"]["balanced_accuracy"], "tr_b": tr["band_power"]["balanced_accuracy"],
           "ours": s["ours_windows_per_s"], "plain": s["plain_windows_per_s"], "speedup": s["speedup"],
           "wall": d["train_seconds"], "cpu": d.get("train_cpu_seconds", float("nan")),
           "fit": r["tokenizer"].get("train_fit_time_nmse", float("nan")),
           "best": d.get("reconstruction_best_epoch", {}).get("ratio_time", float("nan")),
           "best_epoch": d.get("reconstruction_best_epoch", {}).get("epoch", float("nan"))}
    epochs = d["train_config"]["epochs"]
    if "depth" in d.get("model", {}):
        epochs = f"{epochs}, depth {d['model']['depth']}"
    if d["train_config"].get("warm_start_epochs"):
        epochs = f"{epochs}, warm start {d['train_config']['warm_start_epochs']:g}"
    for key in ("phase_weight", "warm_start_kmeans_patches", "keep", "random_crop", "amplitude_jitter"):
        if key in d["train_config"] and key in d["command"]:
            epochs = f"{epochs}, {key} {d['train_config'][key]}"
    for key, value in d.get("model", {}).items():  # e.g. decoder_depth (eeg17 study)
        if key != "depth":
            epochs = f"{epochs}, {key} {value}"
    if "lr=" in d["command"]:
        epochs = f"{epochs}, lr {d['train_config']['lr']:g}"
    if d.get("leaky_crop"):
        epochs = f"{epochs}, crops before the leak fix"
    groups[epochs].append(row)
    print(f"| {epochs} | {d['seed']} | {row['fit']:.3f} | {row['best_epoch']}: {row['best']:.3f} | {row['time']:.3f} ({row['time_floor']:.3f}) | {row['rt']:.3f} | "
          f"{row['amp']:.3f} ({row['amp_floor']:.3f}) | {row['ra']:.3f} | {row['lr_t']:.3f} / {row['lr_b']:.3f} | "
          f"{row['tr_t']:.3f} / {row['tr_b']:.3f} | {row['ours']:.1f} / {row['plain']:.1f} ({row['speedup']:.2f}) | "
          f"{row['wall']:.0f} / {row['cpu']:.0f} |")
for epochs, rows in sorted(groups.items(), key=lambda kv: str(kv[0])):
    m = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
    print(f"| {epochs} | mean of {len(rows)} | {m['fit']:.3f} | {m['best']:.3f} | {m['time']:.3f} ({m['time_floor']:.3f}) | {m['rt']:.3f} | "
          f"{m['amp']:.3f} ({m['amp_floor']:.3f}) | {m['ra']:.3f} | {m['lr_t']:.3f} / {m['lr_b']:.3f} | "
          f"{m['tr_t']:.3f} / {m['tr_b']:.3f} | {m['ours']:.1f} / {m['plain']:.1f} ({m['speedup']:.2f}) | "
          f"{m['wall']:.0f} / {m['cpu']:.0f} |")

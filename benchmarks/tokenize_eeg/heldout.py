"""Issue 33's held-out protocol in one run: reconstruction against the k-means floor, an
event-locked linear probe against band power, and encode throughput against a plain loop.

    OMP_NUM_THREADS=1 nice python benchmarks/tokenize_eeg/heldout.py --epochs 40 --seed 0 \
        --out benchmarks/tokenize_eeg/results/heldout_e40_s0.yaml

* reconstruction: the tokenizer trained on S001 R01-R10 (4-s windows, 19 channels) through
  ``tokenize-eeg train``'s defaults (auto preset and codebook, k-means init, dead-code restart)
  plus ``--variant``; time NMSE and tokens-only amplitude NMSE on R11-R14 (held out: never looked
  at while choosing; with ``--validation-share`` 0.1, the default since 2026-12-06 evening, the
  tokenizer trains on 250 of the 278 windows and scores the other 28 after every epoch, as
  ``train`` does; 0 = all 278, the runs before), beside the k-means floor of the same codebook size fitted on the same
  training patches (25 Lloyd iterations, k-means++ seeds) in this run.
* probe: event-locked 4-s windows (``--windows events --tmin 0 --tmax 4``, what ``encode`` cuts)
  of the executed left/right-fist runs R03, R07, R11 (T1 vs T2) and of every task run R03-R14 (task
  T1/T2 vs rest T0); token features (``features``' histograms and mean codes) vs log band power
  (5 bands x 19 channels), standardised logistic regression (C=0.1), leave-one-run-out balanced
  accuracy. Only one subject is shipped, so there is no cross-subject figure. ``--feature-sets
  'hist,mean;chmean;...'`` probes each set of ``features``' parts on the same windows and folds.
* ``--split A`` / ``B`` (with ``--parts probe``): the tokenizer trains on study.py's choosing split
  instead, and the probe runs over the task runs it does not train on, never R11-R14 (PROBE_RUNS;
  the event-probe study in RESULTS.md).
* speed: windows/s of ``encode``'s path (batched, SDPA, inference mode) against a plain PyTorch
  loop (one window at a time, attention written out, cdist argmin) on the trained tokenizer, the
  two interleaved over 3 rounds in this process (medians).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats import eeg
from cortexkit.tools.eeg import api, epochs
from cortexkit.tools.eeg.floor import kmeans_floor
from cortexkit.tools.eeg.model import (PRESET_LR, TokenizerConfig, auto_codebook_size,
                                       auto_encoder_depth, auto_preset, config_from_preset)
from cortexkit.tools.eeg.train import TrainConfig

sys.path.insert(0, str(Path(__file__).parent))
from run import band_power, plain_encode  # noqa: E402
from study import DATA, SPLITS, Batch, crop_mask, fit_tracking_best  # noqa: E402
from study import windows as fixed_windows  # noqa: E402

def event_windows(run, prep):
    spec = epochs.EventWindows(events=None, tmin=0.0, tmax=4.0)
    x, _, labels, _ = epochs.cut(eeg.load(str(DATA / f"S001R{run:02d}.edf"), prep), spec, 200.0, 200)
    return x, labels


def balanced_lorocv(per_run_x, per_run_y):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scores = []
    for held in range(len(per_run_x)):
        rest = [i for i in range(len(per_run_x)) if i != held]
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=3000))
        clf.fit(np.concatenate([per_run_x[i] for i in rest]), np.concatenate([per_run_y[i] for i in rest]))
        scores.append(balanced_accuracy_score(per_run_y[held], clf.predict(per_run_x[held])))
    return {"balanced_accuracy": float(np.mean(scores)), "per_run": [float(s) for s in scores]}


ALL_PARTS = ("hist", "mean", "chmean", "champ", "chpow")
# the probe's runs per split: (task runs for task vs rest, left/right-fist runs). H: as 2026-12-04
# (executed fist runs only); A/B (choosing, issue 33 event probe study): the task runs that split
# does not train on, never R11-R14, with the imagined fist runs too so that left/right has >= 2 runs
PROBE_RUNS = {"H": (tuple(range(3, 15)), (3, 7, 11)),
              "A": ((7, 8, 9, 10), (7, 8)),
              "B": ((3, 4, 5, 6, 7, 8), (3, 4, 7, 8))}


def token_features(model, x, parts=None):
    """-> (n, features) of ``features``' default parts, or {part: (n, features)} for ``parts``."""
    enc = api.encode_windows(model, [Batch(x[i:i + 32]) for i in range(0, len(x), 32)])
    if parts is None:
        cols = api.features(model, enc.token_t, enc.token_f)
        return np.stack([cols[k] for k in cols], axis=1)
    cols = api.features(model, enc.token_t, enc.token_f, parts=parts)
    by_part = {part: [v for k, v in cols.items() if k.split("_")[0] == part] for part in parts}
    return {part: np.stack(v, axis=1) if v else np.zeros((len(x), 0), np.float32)
            for part, v in by_part.items()}


def probe(model, prep, log, split="H", feature_sets=()):
    """Token features vs band power; ``tokens``: ``features``' default parts; ``sets``: each
    comma-separated set of parts in ``feature_sets`` on the same windows and folds."""
    out = {}
    task_runs, fist_runs = PROBE_RUNS[split]
    tasks = {"left_vs_right_fist_executed" if split == "H" else "left_vs_right_fist":
             (fist_runs, {"T1": 0, "T2": 1}),
             "task_vs_rest": (task_runs, {"T0": 0, "T1": 1, "T2": 1})}
    for name, (runs, classes) in tasks.items():
        xs, ys = [], []
        for r in runs:
            x, labels = event_windows(r, prep)
            keep = np.array([lab in classes for lab in labels])
            xs.append(x[keep])
            ys.append(np.array([classes[lab] for lab, k in zip(labels, keep) if k]))
        entry = {"runs": list(runs), "windows": int(sum(len(y) for y in ys)),
                 "band_power": balanced_lorocv([band_power(x) for x in xs], ys),
                 "tokens": balanced_lorocv([token_features(model, x) for x in xs], ys)}
        entry["tokens_minus_band_power"] = (entry["tokens"]["balanced_accuracy"]
                                            - entry["band_power"]["balanced_accuracy"])
        if feature_sets:
            by_part = [token_features(model, x, ALL_PARTS) for x in xs]
            entry["sets"] = {}
            for text in feature_sets:
                parts = text.split(",")
                per_run = [np.concatenate([f[p] for p in parts if f[p].shape[1]], axis=1)
                           for f in by_part]
                score = balanced_lorocv(per_run, ys)
                score["features"] = int(per_run[0].shape[1])
                score["minus_band_power"] = (score["balanced_accuracy"]
                                             - entry["band_power"]["balanced_accuracy"])
                entry["sets"][text] = score
                log(f"probe {name} {text}: {score['balanced_accuracy']:.3f}")
        out[name] = entry
        log(f"probe {name}: tokens {entry['tokens']['balanced_accuracy']:.3f} band power "
            f"{entry['band_power']['balanced_accuracy']:.3f}")
    out["cross_subject"] = "not measured: only subject S001 is shipped"
    return out


def speed(model, x, rounds=3, batch=32):
    rates = {"plain": [], "ours": []}
    runs = {"plain": lambda: plain_encode(model, torch.from_numpy(x)),
            "ours": lambda: api.encode_windows(model, [Batch(x[i:i + batch])
                                                       for i in range(0, len(x), batch)])}
    with torch.inference_mode():
        for _ in range(rounds):
            for name, fn in runs.items():
                start = time.perf_counter()
                fn()
                rates[name].append(len(x) / (time.perf_counter() - start))
    med = lambda v: float(np.median(v))  # noqa: E731
    return {"windows": int(len(x)), "threads": torch.get_num_threads(),
            "ours_windows_per_s": med(rates["ours"]), "plain_windows_per_s": med(rates["plain"]),
            "speedup": med([o / p for o, p in zip(rates["ours"], rates["plain"])])}


def reconstruction(model, test, fit, floor):
    """Held-out time NMSE and tokens-only amplitude NMSE against the floor, and the time NMSE on
    the windows the tokenizer was fitted on (the generalisation gap)."""
    batches = lambda x: [Batch(x[i:i + 32]) for i in range(0, len(x), 32)]  # noqa: E731
    report = api.evaluate(model, batches(test))
    ours = report["reconstruction"]
    best_amp = min(floor["amplitude_nmse_signal"], floor["amplitude_nmse"])
    return {"tokenizer": {"time_nmse": ours["time_nmse"], "amplitude_nmse_tokens_only":
                          ours["amplitude_nmse_signal"], "amplitude_nmse_signal_rfft":
                          ours["amplitude_nmse_signal_rfft"], "amplitude_nmse_window_scaled":
                          ours["amplitude_nmse"],
                          "train_fit_time_nmse": api.evaluate(model, batches(fit))[
                              "reconstruction"]["time_nmse"]},
            "kmeans_floor": floor,
            "ratio_time": ours["time_nmse"] / floor["time_nmse"],
            "ratio_amplitude_tokens_only": ours["amplitude_nmse_signal"] / best_amp,
            # for information (eeg20): against k-means read out by its clusters' mean |rfft|
            "ratio_amplitude_to_cluster_mean": (ours["amplitude_nmse_signal"]
                                                / floor["amplitude_nmse_cluster_mean"]
                                                if "amplitude_nmse_cluster_mean" in floor else None),
            "codebooks": report["codebooks"], "target": "<= 0.8"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--variant", default="", help="key=value,... TrainConfig/TokenizerConfig fields")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", default="recon,probe,speed")
    parser.add_argument("--validation-share", type=float, default=0.1,
                        help="train's share of the training windows held out for validation")
    parser.add_argument("--split", default="H", choices=("H", "A", "B"),
                        help="training runs as study.py's split (A/B: --parts probe only)")
    parser.add_argument("--feature-sets", default="",
                        help="';'-separated sets of features' parts probed beside the default")
    parser.add_argument("--patches", type=int, default=4,
                        help="1-s patches per window (train's --patches; issue 33 eeg21 study)")
    parser.add_argument("--cache", default="/tmp/eeg_study_cache")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    P = args.patches
    prep = eeg.Preprocessing(patches=P)
    if args.split != "H" and args.parts != "probe":
        parser.error("--split A/B trains on a choosing split: --parts probe only")
    train_runs, test_runs = SPLITS[args.split]
    train = fixed_windows(train_runs, prep, args.cache)
    test = fixed_windows(test_runs, prep, args.cache)
    patches = int(np.prod(train.shape[:3]))
    preset = auto_preset(patches, "cpu")
    size = auto_codebook_size(patches)
    settings = {k: yaml.safe_load(v) for k, _, v in
                (item.partition("=") for item in filter(None, args.variant.split(",")))}
    stride = settings.pop("stride", None)
    leaky = bool(settings.pop("leaky_crop", False))  # study.py's: crops as before the 2026-12-07 fix
    model_keys = {k: settings.pop(k) for k in list(settings) if k in TokenizerConfig.__dataclass_fields__}
    config = config_from_preset(preset, **{**dict(channels=19, max_patches=P, codebook_size=size,
                                                  kmeans_init=True, dead_code_threshold=1.0,
                                                  depth=auto_encoder_depth(preset)),
                                           **model_keys})
    if settings.get("signal_weight") == "auto":
        settings["signal_weight"] = api.signal_weight(train)
    tc = TrainConfig(**{**dict(epochs=args.epochs, batch_size=16, lr=PRESET_LR[preset],
                               warmup_epochs=min(5.0, args.epochs / 2)), **settings})
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"command": " ".join(sys.argv), "commit": commit, "seed": args.seed,
              "split": args.split, "train": f"S001 runs {list(train_runs)}, {P}-s windows",
              "test": "S001 R11-R14 (held out)" if args.split == "H" else
              f"probe runs {list(PROBE_RUNS[args.split][0])} (choosing)",
              "train_windows": len(train), "test_windows": len(test), "patches": P, "preset": preset,
              "codebook_size": size, "train_config": tc.to_dict(), "model": model_keys}
    fit_index, validation_index = api.validation_split(len(train), args.validation_share)
    floor_windows, floor_key = train, ""
    if stride is not None or tc.random_crop:  # augmentation study: other training windows, the
        # same optimiser steps, the auto preset and codebook of the non-overlapping windows
        base_per_epoch = -(-len(fit_index) // tc.batch_size)
        train = (fixed_windows(train_runs, prep, args.cache, float(stride)) if stride is not None else
                 fixed_windows(train_runs, eeg.Preprocessing(patches=P + 1), args.cache, float(P)))
        fit_index, validation_index = api.validation_split(len(train), args.validation_share)
        scale = base_per_epoch / -(-len(fit_index) // tc.batch_size)
        tc.epochs = int(round(tc.epochs * scale))
        tc.warm_start_epochs *= scale
        tc.warmup_epochs *= scale
        result["train_config"] = tc.to_dict()
        result["epochs_scale"], result["stride"] = scale, stride
        if stride is not None:  # the floor on the same overlapping windows, in this run
            floor_windows, floor_key = train, f"_stride{stride:g}"
    per_epoch = -(-len(fit_index) // tc.batch_size)
    result["steps"] = {"per_epoch": per_epoch, "train": tc.epochs * per_epoch,
                       "warm_start": int(round(tc.warm_start_epochs * per_epoch))}
    result["fit_windows"], result["validation_windows"] = len(fit_index), len(validation_index)
    start, cpu_start = time.time(), time.process_time()
    best_state = None
    # as train: no crop into a validation window's first second (unless leaky)
    croppable = crop_mask(fit_index, validation_index, leaky, result) if tc.random_crop else None
    if len(validation_index):  # as api.fit, plus a copy of the best-validation epoch's state
        model, history, best_state, best_epoch = fit_tracking_best(
            train[fit_index], train[validation_index][:, :, :P], config, tc, args.seed, croppable)
    else:
        model, history = api.fit(train, config, tc, seed=args.seed, croppable=croppable)
    result["train_seconds"] = time.time() - start
    result["train_cpu_seconds"] = time.process_time() - cpu_start
    result["validation_curve"] = [round(r["validation"], 5) for r in history if "validation" in r]
    result["kept_epoch"] = history[-1].get("kept_epoch", len(history))
    if "recon" in args.parts:
        cached = Path(args.cache) / f"floor_H_k{size}_s{args.seed}{floor_key}{'' if P == 4 else f'_p{P}'}.yaml"  # study.py's key
        if cached.is_file():  # the same floor (all 278 training windows, K, seed) as before
            floor = yaml.safe_load(cached.read_text())
        else:
            t0 = time.time()
            floor = kmeans_floor(floor_windows, test, size, seed=args.seed)
            floor["seconds"] = time.time() - t0
            Path(args.cache).mkdir(parents=True, exist_ok=True)
            cached.write_text(yaml.safe_dump(floor))
        fit = train[fit_index][:, :, :P]  # random_crop's windows carry a patch of context
        result["reconstruction"] = reconstruction(model, test, fit, floor)
        log(f"recon: {result['reconstruction']['tokenizer']} floor {floor}")
        if best_state is not None and tc.keep == "last":  # the best-validation epoch, same run
            last_state = {k: v.clone() for k, v in model.state_dict().items()}
            model.load_state_dict(best_state)
            result["reconstruction_best_epoch"] = {
                "epoch": best_epoch, **reconstruction(model.eval(), test, fit, floor)}
            del result["reconstruction_best_epoch"]["kmeans_floor"]
            model.load_state_dict(last_state)
            model.eval()
            log(f"best epoch {best_epoch}: {result['reconstruction_best_epoch']['tokenizer']}")
    if "probe" in args.parts:
        result["probe"] = probe(model, prep, log, args.split,
                                tuple(filter(None, args.feature_sets.split(";"))))
    if "speed" in args.parts:
        result["speed"] = speed(model, test[:64])
        log(f"speed: {result['speed']}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(yaml.safe_dump(result, sort_keys=False))
    print(yaml.safe_dump(result, sort_keys=False))


if __name__ == "__main__":
    main()

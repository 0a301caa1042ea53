"""Why does a trained TFDual tokenizer reconstruct worse than k-means on the same patches? One factor
at a time against the k-means floor of the same codebook size, in one run.

    OMP_NUM_THREADS=1 nice python benchmarks/tokenize_eeg/study.py --split A \
        --variants 'base:;nodead:dead_code_threshold=0;w10:signal_weight=10' --epochs 40 \
        --out benchmarks/tokenize_eeg/results/study_A.yaml

Splits of the shipped EEGMMIDB S001 runs (4-s windows, 19 channels, no overlap):
* A: train R03-R06, validate R07-R08 (choosing);
* B: train R01, R02, R09, R10, validate R05, R06 (choosing; other runs, baselines included);
* H: train R01-R10, test R11-R14 (held out: never looked at while choosing).
Variant keys: any TokenizerConfig field (preset-sized), TrainConfig field, or preset=NAME; and
``stride=S`` (issue 33 augmentation study): the variant trains on windows every S seconds instead
(overlapping), at the base's optimiser steps (epochs, warm-start and warmup epochs scaled by the
ratio of steps per epoch), against a k-means floor fitted in the same run on those same windows.
``random_crop=true`` cuts the training windows with one patch of context after them (P+1 patches,
starts every P seconds as the base's), which the training crops at random sub-patch offsets; as in
``tokenize-eeg train`` (since 2026-12-07, issue 33 eeg17), a fitted window whose next window validates
is cut at offset 0 only (``api.context_croppable``), so no validation second enters a training crop.
``leaky_crop=true`` (benchmark-only, to measure that fix) crops every fitted window into its context,
as before the fix.

Like ``tokenize-eeg train``, every variant trains on the training runs' windows less a validation
share (``--validation-share``, every 10th window by default; 0 = train on all, the runs before
2026-12-06 evening) and scores tokens-only time NMSE on that share after every epoch; each variant
reports the test figures of its last epoch (``test``) and of its best-validation epoch
(``best.test``, ``best.epoch``), so "keep the best checkpoint" is measured on every variant's own run.
The k-means floor is fitted on all training windows (a floor at least as strong as on the share).
``--epochs 0`` with ``warm_start_epochs=N`` scores the warm start alone (where training would begin).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats import eeg
from cortexkit.tools.eeg import api
from cortexkit.tools.eeg.floor import kmeans_floor
from cortexkit.tools.eeg.model import TFDualTokenizer, TokenizerConfig, config_from_preset
from cortexkit.tools.eeg.train import TrainConfig
from cortexkit.tools.eeg.train import train as train_model

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")
            ) / "eeg" / "eegmmidb_S001"
SPLITS = {"A": ((3, 4, 5, 6), (7, 8)), "B": ((1, 2, 9, 10), (5, 6)),
          "H": (tuple(range(1, 11)), (11, 12, 13, 14))}


class Batch:
    def __init__(self, x):
        self.x, self.starts, self.labels, self.source_index = x, np.zeros(len(x)), [""] * len(x), 0


def windows(runs, prep, cache, stride=None):
    tail = "" if stride is None else f"_s{stride:g}"
    path = Path(cache) / f"w_{'_'.join(map(str, runs))}_p{prep.patches}{tail}.npy"
    if path.is_file():
        return np.load(path)
    recs = [eeg.load(str(DATA / f"S001R{r:02d}.edf"), prep) for r in runs]
    x = np.concatenate([b.x for b in eeg.iter_windows(recs, prep, stride, 256)])
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, x)
    return x


def parse_variant(text):
    name, _, body = text.partition(":")
    settings = {}
    for item in filter(None, body.split(",")):
        key, _, value = item.partition("=")
        settings[key] = yaml.safe_load(value)
    return name, settings


def crop_mask(fit, validation, leaky, record):
    """train's croppable flags for the fitted windows (api.context_croppable), or all True with
    ``leaky`` (the crops before the 2026-12-07 fix); the count and the flag go into ``record``."""
    croppable = np.ones(len(fit), bool) if leaky else api.context_croppable(fit, validation)
    record["croppable_fit_windows"], record["leaky_crop"] = int(croppable.sum()), leaky
    return croppable


def fit_tracking_best(train, validation, config, tc, seed, croppable=None):
    """api.fit's seeding and training, plus a copy of the best-validation epoch's state ->
    (model at the last epoch, history, best state, best epoch)."""
    torch.manual_seed(seed)
    model = TFDualTokenizer(config)
    generator = torch.Generator().manual_seed(seed)
    best = {"score": None, "epoch": 0, "state": None, "epoch_now": 0}

    def validate(m):
        best["epoch_now"] += 1
        score = api.validation_score(m, validation)
        if best["score"] is None or score < best["score"]:
            best.update(score=score, epoch=best["epoch_now"],
                        state={k: v.detach().clone() for k, v in m.state_dict().items()})
        return score

    history = train_model(model, torch.from_numpy(np.ascontiguousarray(train)), tc,
                          generator=generator, validate=validate if len(validation) else None,
                          croppable=croppable)
    return model, history, best["state"], best["epoch"]


def scores(model, test, train):
    out = {}
    for name, x in (("test", test), ("train_fit", train)):
        report = api.evaluate(model, [Batch(x[i:i + 32]) for i in range(0, len(x), 32)])
        out[name] = {k: report["reconstruction"][k] for k in ("time_nmse", "amplitude_nmse_signal",
                                                              "amplitude_nmse_signal_rfft",
                                                              "amplitude_nmse")}
    out["codes_used_test"] = {k: report["codebooks"][k]["used"] for k in ("temporal", "frequency")}
    return out


def run_variant(train, test, settings, args, log, validation=None, croppable=None):
    settings = dict(settings)
    preset = settings.pop("preset", args.preset)
    model_keys = {k: settings.pop(k) for k in list(settings) if k in TokenizerConfig.__dataclass_fields__}
    config = config_from_preset(preset, **{**dict(channels=train.shape[1], max_patches=args.patches,
                                                  codebook_size=args.codebook_size, kmeans_init=True,
                                                  dead_code_threshold=1.0), **model_keys})
    tc = TrainConfig(**{**dict(epochs=args.epochs, batch_size=32, lr=1e-3, contrastive=True,
                               warmup_epochs=max(1, args.epochs // 10)), **settings})
    start, cpu_start = time.time(), time.process_time()
    if validation is None:
        validation = train[:0]
    model, history, best_state, best_epoch = fit_tracking_best(train, validation, config, tc, args.seed,
                                                               croppable if tc.random_crop else None)
    seconds, cpu = time.time() - start, time.process_time() - cpu_start
    train = train[:, :, :args.patches]  # random_crop's windows carry a patch of context
    per_epoch = -(-len(train) // tc.batch_size)
    out = {"steps": {"per_epoch": per_epoch, "train": tc.epochs * per_epoch,
                     "warm_start": int(round(tc.warm_start_epochs * per_epoch))},
           "preset": preset, "model": model_keys, "train": tc.to_dict(), "train_seconds": seconds,
           "train_cpu_seconds": cpu, **scores(model, test, train)}
    out["validation_curve"] = [round(r["validation"], 5) for r in history if "validation" in r]
    if best_state is not None:
        model.load_state_dict(best_state)
        out["best"] = {"epoch": best_epoch, **scores(model.eval(), test, train)}
        log(f"best epoch {best_epoch}: {out['best']['test']}")
    last = history[-1] if history else {}  # --epochs 0 without a warm start: the model as built
    if history and "warm_start" in history[0]:
        out["warm_start"] = history[0]["warm_start"]
    out["last_epoch"] = {k: v for k, v in last.items() if not isinstance(v, dict)}
    log(f"{out['test']} train {out['train_fit']} {seconds:.0f}s restarts "
        f"{last.get('restarts_t')}")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default="A", choices=sorted(SPLITS))
    parser.add_argument("--variants", default="base:")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--patches", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--codebook-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--validation-share", type=float, default=0.1)
    parser.add_argument("--cache", default="/tmp/eeg_study_cache")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    prep = eeg.Preprocessing(patches=args.patches)
    train_runs, test_runs = SPLITS[args.split]
    train, test = windows(train_runs, prep, args.cache), windows(test_runs, prep, args.cache)
    fit_index, validation_index = api.validation_split(len(train), args.validation_share)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"command": " ".join(sys.argv), "commit": commit, "split": args.split, "patches": args.patches,
              "train_runs": list(train_runs), "test_runs": list(test_runs),
              "train_windows": len(train), "test_windows": len(test), "seed": args.seed,
              "fit_windows": len(fit_index), "validation_windows": len(validation_index)}
    start = time.time()
    cached = Path(args.cache) / (f"floor_{args.split}_k{args.codebook_size}_s{args.seed}"
                                 f"{'' if args.patches == 4 else f'_p{args.patches}'}.yaml")
    if cached.is_file():  # the same floor (same split, K, seed) as an earlier run of this script
        result["kmeans_floor"] = yaml.safe_load(cached.read_text())
    else:
        result["kmeans_floor"] = kmeans_floor(train, test, args.codebook_size, seed=args.seed)
        result["kmeans_floor"]["seconds"] = time.time() - start
        cached.write_text(yaml.safe_dump(result["kmeans_floor"]))
    log(f"floor {result['kmeans_floor']}")
    result["variants"] = {}
    ratio = lambda part, floor: {  # noqa: E731  amplitude: the better of the floor's two codebooks
        "time_nmse": part["test"]["time_nmse"] / floor["time_nmse"],
        "amplitude_nmse_signal": part["test"]["amplitude_nmse_signal"] / min(
            floor["amplitude_nmse_signal"], floor["amplitude_nmse"])}
    for text in args.variants.split(";"):
        name, settings = parse_variant(text)
        log(f"variant {name}: {settings}")
        stride = settings.pop("stride", None)
        leaky = bool(settings.pop("leaky_crop", False))
        floor, own = result["kmeans_floor"], {}
        x, fit, val = train, fit_index, validation_index
        if stride is not None or settings.get("random_crop"):
            x = (windows(train_runs, prep, args.cache, float(stride)) if stride is not None else
                 windows(train_runs, eeg.Preprocessing(patches=args.patches + 1), args.cache,
                         float(args.patches)))
            fit, val = api.validation_split(len(x), args.validation_share)
            batch = settings.get("batch_size", 32)
            scale = -(-len(fit_index) // batch) / -(-len(fit) // batch)  # the base's optimiser steps
            settings["epochs"] = int(round(settings.get("epochs", args.epochs) * scale))
            for key in ("warm_start_epochs", "warmup_epochs"):
                if key in settings:
                    settings[key] = settings[key] * scale
            own = {"training_windows": len(x), "fit_windows": len(fit), "epochs_scale": scale}
            log(f"variant {name}: {len(x)} windows, {len(fit)} fitted, epochs x {scale:.4f}: {settings}")
        if stride is not None:  # the floor on the same (overlapping) training windows, this run
            cached = Path(args.cache) / (f"floor_{args.split}_k{args.codebook_size}_s{args.seed}_stride{stride:g}"
                                     f"{'' if args.patches == 4 else f'_p{args.patches}'}.yaml")
            if cached.is_file():
                floor = yaml.safe_load(cached.read_text())
            else:
                t0 = time.time()
                floor = kmeans_floor(x, test, args.codebook_size, seed=args.seed)
                floor["seconds"] = time.time() - t0
                cached.write_text(yaml.safe_dump(floor))
            own["kmeans_floor"] = floor
            log(f"floor on the stride-{stride:g} windows {floor}")
        # as train: no crop into a validation window's first second
        croppable = crop_mask(fit, val, leaky, own) if settings.get("random_crop") else None
        entry = run_variant(x[fit], test, settings, args, log, validation=x[val][:, :, :args.patches],
                            croppable=croppable)
        entry.update(own)
        result["variants"][name] = entry
        for part in (entry, entry.get("best")):
            if part is not None:
                part["ratio_to_floor"] = ratio(part, floor)
                if floor is not result["kmeans_floor"]:
                    part["ratio_to_base_floor"] = ratio(part, result["kmeans_floor"])
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(yaml.safe_dump(result, sort_keys=False))
    print(yaml.safe_dump(result, sort_keys=False))


if __name__ == "__main__":
    main()

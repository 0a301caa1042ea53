"""tokenize-eeg benchmarks on EEGMMIDB S001, every system in one run, results as YAML.

    OMP_NUM_THREADS=1 nice python benchmarks/tokenize_eeg/run.py [--part recon,probe,speed] \
        [--preset tiny] [--epochs 30] [--codebook-size 1024] [--out benchmarks/tokenize_eeg/results/run.yaml]

Parts:
* cache: only write the recon windows to --cache (an NPZ; benchmarks/gpu/prepare.sh).
* floor: the k-means floor alone (also inside recon).
* recon: TFDual (ours) and the one-codebook frequency-only ablation trained on R01-R10, evaluated
  on R11-R14, against a k-means floor (k-means on raw patches and on log|rfft|, same K, same split,
  same NMSE definitions as cortexkit.tools.eeg.analysis) fitted in the same run; two more amplitude
  floors: k-means on |rfft| (not log) and k-means given TFDual's side information (per-window
  amplitude mean and std, what amplitude_nmse un-standardises with); codebook usage,
  perplexity, joint pairs, mutual information.
* probe: logistic regression (standardised, C=0.1) on per-window features (token histograms +
  mean quantized vectors, cortexkit.tools.eeg.api.features = what `tokenize-eeg features` writes)
  vs log band power (5 bands x 19 channels) on the same 4-s windows. Rest (T0) vs task (T1/T2):
  one window per annotation onset in R03-R14, leave-one-run-out. Eyes open (R01) vs closed (R02):
  one run each, so the split is by time (first vs second half, both ways).
* speed: windows/s of the default (base, 12 x 200, 19 ch x 30 patches) encoder's encode path
  (batched, SDPA, inference mode, no decoders; fp32 and --precision bf16) at 1 and 2 threads vs a
  plain LaBraM-style loop (batch 1, attention written out as softmax(QK^T)V, same weights), the
  three interleaved over 3 rounds (medians), plus peak RSS.

All preprocessing is cortexkit.formats.eeg (MNE): 19 channels, 0.3-75 Hz, notch 60 Hz, 200 Hz, /100 uV.
"""

from __future__ import annotations

import argparse
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats import eeg
from cortexkit.tools.eeg import api
from cortexkit.tools.eeg.analysis import Reconstruction, codebook_health
from cortexkit.tools.eeg.model import TFDualTokenizer, config_from_preset
from cortexkit.tools.eeg.train import TrainConfig

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "eeg" / "eegmmidb_S001"
TRAIN_RUNS = [f"S001R{i:02d}.edf" for i in range(1, 11)]
TEST_RUNS = [f"S001R{i:02d}.edf" for i in range(11, 15)]
BANDS = [(0.5, 4), (4, 8), (8, 13), (13, 30), (30, 45)]


def windows(names, prep, stride=None):
    recs = [eeg.load(str(DATA / n), prep) for n in names]
    return np.concatenate([b.x for b in eeg.iter_windows(recs, prep, stride, 256)]), recs


class Batch:
    def __init__(self, x):
        self.x, self.starts, self.labels, self.source_index = x, np.zeros(len(x)), [""] * len(x), 0


# ---------------------------------------------------------------------------------------------
# k-means floor

def kmeans_floor(train, test, k, seed):
    from sklearn.cluster import KMeans

    patches = train.reshape(-1, train.shape[-1]).astype(np.float64)
    test_p = test.reshape(-1, test.shape[-1]).astype(np.float64)
    km_t = KMeans(k, n_init=1, max_iter=50, random_state=seed).fit(patches)
    rec_t = km_t.cluster_centers_[km_t.predict(test_p)]
    log_amp = lambda p: np.log(np.abs(np.fft.rfft(p, axis=-1)) + 1e-6)  # noqa: E731
    km_f = KMeans(k, n_init=1, max_iter=50, random_state=seed).fit(log_amp(patches))
    tok_f = km_f.predict(log_amp(test_p))
    amp_hat = np.exp(km_f.cluster_centers_[tok_f])
    amp = np.abs(np.fft.rfft(test_p, axis=-1))
    centred = test_p - test_p.mean(-1, keepdims=True)
    tok_t = km_t.predict(test_p)
    amp_var = ((amp - amp.mean(-1, keepdims=True)) ** 2).sum()
    # k-means on |rfft| itself (no log): the squared error NMSE measures, no side information
    km_l = KMeans(k, n_init=1, max_iter=50, random_state=seed).fit(np.abs(np.fft.rfft(patches, axis=-1)))
    amp_lin = km_l.cluster_centers_[km_l.predict(amp)]
    # the side information TFDual's amplitude_nmse gets: each window's mean and std of its
    # full-FFT amplitude (the decoder predicts the per-window standardised amplitude); k-means on
    # the standardised amplitudes, brought back with the same two numbers per window
    km_s = KMeans(k, n_init=1, max_iter=50, random_state=seed).fit(_standardised_amplitude(train)[0])
    test_std, mean, std = _standardised_amplitude(test)
    amp_side = (km_s.cluster_centers_[km_s.predict(test_std)].reshape(test.shape) * std + mean)
    amp_side = amp_side.reshape(-1, test.shape[-1])[:, :amp.shape[-1]]
    return {"time_nmse": float(((rec_t - test_p) ** 2).sum() / (centred ** 2).sum()),
            "amplitude_nmse": float(((amp_hat - amp) ** 2).sum() / amp_var),
            "amplitude_nmse_linear": float(((amp_lin - amp) ** 2).sum() / amp_var),
            "amplitude_nmse_window_scaled": float(((amp_side - amp) ** 2).sum() / amp_var),
            "codebooks": codebook_health(tok_t, tok_f, k)}


def _standardised_amplitude(x):
    """|FFT_L| of windows x (N, C, P, L) standardised per window over (C, P, L), unbiased std, as
    the frequency decoder's target -> (patches (N*C*P, L), mean (N,1,1,1), std (N,1,1,1))."""
    amp = np.abs(np.fft.fft(x.astype(np.float64), axis=-1))
    mean = amp.mean(axis=(1, 2, 3), keepdims=True)
    std = amp.std(axis=(1, 2, 3), keepdims=True, ddof=1)
    return ((amp - mean) / std).reshape(-1, x.shape[-1]), mean, std


def floor_part(args, log):
    """The k-means floor alone (seconds, not the tokenizers' minutes): same split and seed as
    recon, so its numbers are the floor of every recon run."""
    prep = eeg.Preprocessing(patches=args.patches)
    train, _ = windows(TRAIN_RUNS, prep)
    test, _ = windows(TEST_RUNS, prep)
    t0 = time.time()
    out = kmeans_floor(train, test, args.codebook_size, args.seed)
    out["seconds"] = time.time() - t0
    log(f"floor: {out}")
    return out


def train_tokenizer(train, args, codebooks, log):
    config = config_from_preset(args.preset, channels=19, max_patches=args.patches,
                                codebook_size=args.codebook_size, kmeans_init=True,
                                dead_code_threshold=1.0, codebooks=codebooks)
    tc = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                     warmup_epochs=max(1, args.epochs // 10), contrastive=args.contrastive)
    start = time.time()
    model, history = api.fit(train, config, tc, seed=args.seed, device=args.device,
                             on_epoch=lambda e, r: log(f"  {codebooks} epoch {e}: total {r['total']:.3f}"))
    return model, history, time.time() - start


def recon_windows(args, prep):
    """Train and test windows (N, 19, P, 200): through MNE, or from ``--cache`` (an NPZ written by
    an earlier run, so a device machine without MNE trains on the same windows)."""
    if args.cache and Path(args.cache).is_file():
        with np.load(args.cache) as cached:
            return cached["train"], cached["test"]
    train, _ = windows(TRAIN_RUNS, prep)
    test, _ = windows(TEST_RUNS, prep)
    if args.cache:
        np.savez(args.cache, train=train, test=test)
    return train, test


def trained_models(train, args, log):
    """{codebooks: (model, history, seconds)}: trained here, or read from ``--load-models`` (what
    ``--save-models`` wrote, e.g. on a device machine); saved to ``--save-models``."""
    import json

    from safetensors.torch import load_file, save_file

    from cortexkit.tools.eeg.model import TokenizerConfig

    out = {}
    for codebooks in args.codebooks.split(","):
        if args.load_models:
            folder = Path(args.load_models)
            meta = json.loads((folder / f"{codebooks}.json").read_text())
            model = api.from_state(TokenizerConfig.from_dict(meta["config"]),
                                   load_file(str(folder / f"{codebooks}.safetensors")))
            out[codebooks] = (model, meta["history"], meta["seconds"])
            continue
        model, history, seconds = train_tokenizer(train, args, codebooks, log)
        out[codebooks] = (model, history, seconds)
        if args.save_models:
            folder = Path(args.save_models)
            folder.mkdir(parents=True, exist_ok=True)
            save_file(api.state_tensors(model), str(folder / f"{codebooks}.safetensors"))
            (folder / f"{codebooks}.json").write_text(json.dumps(
                {"config": model.config.to_dict(), "history": history, "seconds": seconds,
                 "device": args.device, "command": " ".join(sys.argv)}))
    return out


def recon_part(args, log):
    prep = eeg.Preprocessing(patches=args.patches)
    train, test = recon_windows(args, prep)
    log(f"recon: {len(train)} train windows, {len(test)} test windows of {prep.window_seconds:g} s")
    out = {"train_windows": len(train), "test_windows": len(test),
           "high_amplitude_share_train": float(eeg.high_amplitude(train, prep).mean())}
    if not args.no_floor:
        t0 = time.time()
        out["kmeans_floor"] = kmeans_floor(train, test, args.codebook_size, args.seed)
        out["kmeans_floor"]["seconds"] = time.time() - t0
    models = {}
    device = args.device if not args.load_models else "cpu"
    for codebooks, (model, history, seconds) in trained_models(train, args, log).items():
        model.to(device)
        report = api.evaluate(model, (Batch(test[i:i + 32]) for i in range(0, len(test), 32)),
                              device=device)
        # the same metrics on the training windows: underfitting (train ~ test) or overfitting
        report["train_reconstruction"] = api.evaluate(
            model, (Batch(train[i:i + 32]) for i in range(0, len(train), 32)),
            device=device)["reconstruction"]
        model.cpu()  # the probe's features look codes up on the CPU
        report.update(train_seconds=seconds, final_loss={k: v for k, v in history[-1].items()
                                                         if not k.startswith("codebook")})
        out["tfdual" if codebooks == "dual" else "frequency_only"] = report
        models[codebooks] = model
    if args.no_floor:
        return out, models
    floor, ours = out["kmeans_floor"], out["tfdual"]["reconstruction"]
    out["ratios"] = {"time_nmse_ours_over_floor": ours["time_nmse"] / floor["time_nmse"],
                     "amplitude_nmse_ours_over_floor": ours["amplitude_nmse"] / floor["amplitude_nmse"],
                     "amplitude_nmse_ours_over_window_scaled_floor":
                         ours["amplitude_nmse"] / floor["amplitude_nmse_window_scaled"],
                     "amplitude_nmse_signal_ours_over_floor":
                         ours["amplitude_nmse_signal"] / floor["amplitude_nmse"],
                     "target": "<= 0.8 (>= 20 % better)"}
    return out, models


# ---------------------------------------------------------------------------------------------
# probe

def onset_windows(name, prep):
    """One 4-s window at every annotation onset -> (x (n, C, P, L), labels, run)."""
    rec = eeg.load(str(DATA / name), prep)
    size = prep.window_samples
    xs, labels = [], []
    for onset, _, text in rec.annotations:
        s = int(round(onset * prep.sfreq))
        if s + size <= rec.data.shape[1]:
            xs.append(rec.data[:, s:s + size].reshape(len(prep.channels), prep.patches, -1))
            labels.append(text)
    return np.stack(xs), labels


def band_power(x):
    """log band power (n, 19 * 5) of windows x (n, C, P, L) at 200 Hz (Welch-free: periodogram)."""
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    spec = np.abs(np.fft.rfft(flat, axis=-1)) ** 2
    freqs = np.fft.rfftfreq(flat.shape[-1], 1 / 200)
    feats = [np.log(spec[..., (freqs >= lo) & (freqs < hi)].mean(-1) + 1e-12) for lo, hi in BANDS]
    return np.concatenate(feats, axis=1)


def token_features(model, x, parts=("hist", "mean")):
    enc = api.encode_windows(model, [Batch(x[i:i + 32]) for i in range(0, len(x), 32)])
    cols = api.features(model, enc.token_t, enc.token_f, parts=parts)
    return np.stack([cols[k] for k in cols], axis=1)


def feature_sets(models, x):
    """Token features per model: both groups (what `features` writes by default), and the mean
    quantized vectors alone (64 dims instead of 2 x K sparse histogram shares)."""
    out = {}
    for name, model in models.items():
        out[f"tokens_{name}"] = token_features(model, x)
        out[f"tokens_{name}_mean_only"] = token_features(model, x, ("mean",))
    return out


def probe_score(train_x, train_y, test_x, test_y):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
    clf.fit(train_x, train_y)
    return float((clf.predict(test_x) == test_y).mean())


def probe_part(args, models, log):
    prep = eeg.Preprocessing(patches=4)
    runs = [f"S001R{i:02d}.edf" for i in range(3, 15)]
    data = [onset_windows(r, prep) for r in runs]
    feats = {"band_power": [band_power(x) for x, _ in data]}
    per_run = [feature_sets(models, x) for x, _ in data]
    for name in per_run[0]:
        feats[name] = [f[name] for f in per_run]
    ys = [np.array([0 if t == "T0" else 1 for t in labels]) for _, labels in data]
    out = {"rest_vs_task": {"windows": int(sum(len(y) for y in ys)),
                            "majority_baseline": float(max(np.mean(np.concatenate(ys)),
                                                           1 - np.mean(np.concatenate(ys))))}}
    for name, per_run in feats.items():
        accs = []
        for held in range(len(runs)):
            tr = [i for i in range(len(runs)) if i != held]
            accs.append(probe_score(np.concatenate([per_run[i] for i in tr]),
                                    np.concatenate([ys[i] for i in tr]), per_run[held], ys[held]))
        out["rest_vs_task"][name] = {"accuracy": float(np.mean(accs)), "per_run_std": float(np.std(accs))}
    # eyes open vs closed: consecutive 4-s windows of R01 (open) and R02 (closed), split by time halves
    eo, _ = windows(["S001R01.edf"], prep)
    ec, _ = windows(["S001R02.edf"], prep)
    x = np.concatenate([eo, ec])
    y = np.concatenate([np.zeros(len(eo), int), np.ones(len(ec), int)])
    half = np.concatenate([np.arange(len(eo)) < len(eo) // 2, np.arange(len(ec)) < len(ec) // 2])
    eoec = {"windows": int(len(x)), "split": "first vs second half of each run, both ways"}
    sets = {"band_power": band_power(x), **feature_sets(models, x)}
    for name, f in sets.items():
        a = probe_score(f[half], y[half], f[~half], y[~half])
        b = probe_score(f[~half], y[~half], f[half], y[half])
        eoec[name] = {"accuracy": (a + b) / 2}
    out["eyes_open_vs_closed"] = eoec
    log(f"probe: {yaml.safe_dump(out, default_flow_style=True)}")
    return out


# ---------------------------------------------------------------------------------------------
# speed

def plain_encode(model, x):
    """The plain loop: one window at a time, attention written out, both heads, argmin over codes."""
    enc = model.encoder
    tokens = []
    for window in x:
        w = window[None]
        b, c, p, _ = w.shape
        h = enc.backbone
        t = enc.patch_embed(w)
        pos = h.pos_embed[:, 1:c + 1, None, :].expand(1, c, p, t.shape[-1]).reshape(1, c * p, -1)
        t = t + pos + h.time_embed[:, None, :p, :].expand(1, c, p, t.shape[-1]).reshape(1, c * p, -1)
        z = torch.cat([h.cls_token + h.pos_embed[:, :1], t], 1)
        for blk in h.blocks:
            a = blk.attn
            y = blk.norm1(z)
            bias = torch.cat([a.q_bias, torch.zeros_like(a.v_bias), a.v_bias])
            qkv = torch.nn.functional.linear(y, a.qkv.weight, bias).reshape(1, -1, 3, a.heads, y.shape[-1] // a.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)
            z = z + a.proj((att @ v).transpose(1, 2).reshape(1, -1, y.shape[-1]))
            z = z + blk.mlp(blk.norm2(z))
        f = h.fc_norm(z[:, 1:])
        for head, quant in ((model.head_t, model.quantize_t), (model.head_f, model.quantize_f)):
            q = torch.nn.functional.normalize(head(f), dim=-1)[0]
            tokens.append(torch.cdist(q, quant.embedding).argmin(-1))
    return tokens


def speed_worker(threads, n_windows, batch, rounds=3):
    """Plain loop, ours (fp32) and ours (bf16 autocast) interleaved over ``rounds`` rounds, so
    machine load hits all three alike; medians and the median of the per-round ratios."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = TFDualTokenizer(config_from_preset("base")).eval()
    x = torch.randn(n_windows, 19, 30, 200) * 0.3
    rates = {"plain": [], "ours": [], "ours_bf16": []}

    def ours(precision):
        for i in range(0, n_windows, batch):
            model.encode(x[i:i + batch], precision)

    runs = {"plain": lambda: plain_encode(model, x), "ours": lambda: ours("fp32"),
            "ours_bf16": lambda: ours("bf16")}
    with torch.inference_mode():
        model.encode(x[:1])
        model.encode(x[:1], "bf16")
        for _ in range(rounds):
            for name, fn in runs.items():
                start = time.perf_counter()
                fn()
                rates[name].append(n_windows / (time.perf_counter() - start))
        # same tokens from both fp32 paths; bf16's share of agreeing tokens
        mine = model.encode(x[:2])
        plain = plain_encode(model, x[:2])
        half = model.encode(x[:2], "bf16")
    med = lambda v: float(np.median(v))  # noqa: E731
    out = {f"{k}_windows_per_s": med(v) for k, v in rates.items()}
    out["speedup"] = med([o / p for o, p in zip(rates["ours"], rates["plain"])])
    out["speedup_bf16"] = med([o / p for o, p in zip(rates["ours_bf16"], rates["plain"])])
    out["tokens_agree"] = float(np.mean([(mine["token_t"][0].reshape(-1) == plain[0]).float().mean(),
                                         (mine["token_f"][0].reshape(-1) == plain[1]).float().mean()]))
    out["bf16_tokens_agree_with_fp32"] = float(np.mean([(half[k] == mine[k]).float().mean()
                                                        for k in ("token_t", "token_f")]))
    out["ours_recording_hours_per_s"] = out["ours_windows_per_s"] * 30 / 3600
    out["ours_patch_tokens_per_s"] = out["ours_windows_per_s"] * 19 * 30
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(yaml.safe_dump(out))


def speed_part(args, log):
    out = {}
    for threads in (1, 2):
        proc = subprocess.run([sys.executable, __file__, "--speed-worker", str(threads),
                               "--windows", str(args.windows), "--speed-batch", str(args.speed_batch)],
                              capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        out[f"threads_{threads}"] = yaml.safe_load(proc.stdout)
        log(f"speed {threads} threads: {out[f'threads_{threads}']}")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", default="recon,probe,speed")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--patches", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--codebook-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--codebooks", default="dual,frequency",
                        help="which tokenizers recon trains: TFDual (dual) and/or the one-codebook ablation")
    parser.add_argument("--contrastive", action="store_true",
                        help="the paper's NT-Xent term (off: the command line's default since issue 33)")
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--speed-batch", type=int, default=8)
    parser.add_argument("--speed-worker", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="training and evaluation device")
    parser.add_argument("--cache", default=None,
                        help="NPZ of the recon windows (read if present, else written)")
    parser.add_argument("--no-floor", action="store_true", help="skip the k-means floor (no sklearn)")
    parser.add_argument("--save-models", default=None, help="folder to write the trained tokenizers to")
    parser.add_argument("--load-models", default=None, help="folder of --save-models: evaluate, no training")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "run.yaml"))
    args = parser.parse_args()
    if args.speed_worker:
        return speed_worker(args.speed_worker, args.windows, args.speed_batch)
    torch.set_num_threads(1 if args.device == "cpu" else max(1, torch.get_num_threads()))
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"command": " ".join(sys.argv), "commit": commit, "settings": vars(args),
              "torch": str(torch.__version__)}
    parts = args.part.split(",")
    start = time.time()
    if "recon" in parts or "probe" in parts:
        result["reconstruction"], models = recon_part(args, log)
        if "probe" in parts:
            result["probe"] = probe_part(args, models, log)
    if "cache" in parts:  # only write --cache (for a device machine without MNE)
        train, test = recon_windows(args, eeg.Preprocessing(patches=args.patches))
        result["cache"] = {"path": args.cache, "train": list(train.shape), "test": list(test.shape)}
    if "floor" in parts:
        result["kmeans_floor"] = floor_part(args, log)
    if "speed" in parts:
        result["speed"] = speed_part(args, log)
    result["wall_seconds"] = time.time() - start
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(yaml.safe_dump(result, sort_keys=False))
    print(yaml.safe_dump(result, sort_keys=False))


if __name__ == "__main__":
    main()

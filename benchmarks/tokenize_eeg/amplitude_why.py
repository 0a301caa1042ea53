"""Why does the tokens-only amplitude lag the k-means floor while time NMSE beats it? (issue 33,
eeg18; RESULTS.md "Study: the tokens-only amplitude").

    OMP_NUM_THREADS=1 python benchmarks/tokenize_eeg/amplitude_why.py --split A --seed 0 \
        --out benchmarks/tokenize_eeg/results/amp/why_A_s0.yaml

Trains ``train``'s defaults (study.py's protocol and settings W: tiny, depth 0, batch 16, warm start
16, 160 epochs, random crop) on a choosing split, or loads a saved state (``--state``), and reads
the amplitude of the split's test runs in several ways, all on |rfft| of 1-s patches (101 bins)
with the metric of ``analysis.Reconstruction`` (sum of squared errors / sum over patches of the
variance of |rfft| over the bins):

* ``signal``: |rfft(x_hat)| of the temporal decoder's output (``amplitude_nmse_signal``, the
  tokens-only figure issue 33 targets); ``floor_signal``: |rfft| of the k-means centroid;
  ``floor_logamp``: exp of the log-amplitude centroid (the floor takes the better of the two);
* ``freq_side``: the frequency decoder's standardised amplitude with the window's own mean and std
  of |FFT(x)| (two numbers per window of side information: ``amplitude_nmse``);
* ``freq_from_signal``: the same standardised amplitude brought back with the mean and std of
  |FFT(x_hat)| of the temporal decoder (tokens only);
* ``freq_global``: brought back with the training windows' mean per-window mean and std (tokens
  only, two constants);
* ``*_gain``: |rfft| times one gain per bin fitted by least squares on the fitted windows (what a
  pure shrinkage of the magnitude would cost: shrinkage that a gain undoes is not the cause).

Also per band: the energy ratio sum|X_hat|^2 / sum|X|^2 and the magnitude ratio sum|X_hat| /
sum|X| of the model and of the floor, and each band's share of the amplitude error.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats import eeg
from cortexkit.tools.eeg import analysis, api
from cortexkit.tools.eeg.floor import _log_amplitude, kmeans, nearest
from cortexkit.tools.eeg.model import TFDualTokenizer, config_from_preset
from cortexkit.tools.eeg.train import TrainConfig

sys.path.insert(0, str(Path(__file__).parent))
from study import SPLITS, crop_mask, fit_tracking_best, windows  # noqa: E402

W = dict(epochs=160, warm_start_epochs=16, batch_size=16, contrastive=False, warmup_epochs=5,
         random_crop=True, lr=1e-3)
BANDS = (("0-4", 0, 4), ("4-8", 4, 8), ("8-13", 8, 13), ("13-30", 13, 30), ("30-45", 30, 45),
         ("45-100", 45, 101))


def decoded(model, x):
    out = {"signal": [], "amplitude": []}
    with torch.inference_mode():
        for i in range(0, len(x), 32):
            xb = torch.from_numpy(x[i:i + 32])
            rec = analysis.decode(model, analysis.encode(model, xb))
            out["signal"].append(rec["signal"].double())
            out["amplitude"].append(rec["amplitude"].double())
    return {k: torch.cat(v) for k, v in out.items()}


def nmse(pred, amplitude):
    var = (amplitude - amplitude.mean(-1, keepdim=True)).pow(2).sum()
    return float((pred - amplitude).pow(2).sum() / var)


def gain(pred, target):
    """One least-squares gain per bin (last axis) of pred onto target."""
    p, t = pred.reshape(-1, pred.shape[-1]), target.reshape(-1, target.shape[-1])
    return (p * t).sum(0) / p.pow(2).sum(0).clamp_min(1e-12)


def per_band(pred, amplitude):
    err = (pred - amplitude).pow(2).sum(dim=tuple(range(amplitude.ndim - 1)))
    total = float(err.sum())
    out = {}
    for name, lo, hi in BANDS:
        sl = slice(lo, hi)
        out[name] = {"energy_ratio": float(pred[..., sl].pow(2).sum() / amplitude[..., sl].pow(2).sum()),
                     "magnitude_ratio": float(pred[..., sl].sum() / amplitude[..., sl].sum()),
                     "error_share": float(err[sl].sum() / total)}
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default="A", choices=sorted(SPLITS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--patches", type=int, default=4)
    parser.add_argument("--state", default=None, help="a saved state (torch.save of state_dict)")
    parser.add_argument("--save-state", default=None)
    parser.add_argument("--variant", default="", help="k=v,... TrainConfig / TokenizerConfig overrides")
    parser.add_argument("--cache", default="/tmp/eeg_study_cache")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    prep = eeg.Preprocessing(patches=args.patches)
    train_runs, test_runs = SPLITS[args.split]
    train, test = windows(train_runs, prep, args.cache), windows(test_runs, prep, args.cache)
    overrides = {k: yaml.safe_load(v) for k, v in (s.split("=") for s in filter(None, args.variant.split(",")))}
    model_keys = {k: overrides.pop(k) for k in list(overrides) if k in ("decoder_depth", "dim")}
    config = config_from_preset("tiny", channels=train.shape[1], max_patches=args.patches, codebook_size=1024,
                                kmeans_init=True, dead_code_threshold=1.0, depth=0, **model_keys)
    tc = TrainConfig(**{**W, **overrides})
    result = {"command": " ".join(sys.argv), "split": args.split, "seed": args.seed, "train": tc.to_dict()}
    if args.state:
        model = TFDualTokenizer(config)
        model.load_state_dict(torch.load(args.state))
        model.eval()
    else:
        x = windows(train_runs, eeg.Preprocessing(patches=args.patches + 1), args.cache, float(args.patches))
        fit, val = api.validation_split(len(x), 0.1)
        croppable = crop_mask(fit, val, False, {})
        cpu = time.process_time()
        model, _, _, _ = fit_tracking_best(x[fit], x[val][:, :, :args.patches], config, tc, args.seed, croppable)
        result["train_cpu_seconds"] = time.process_time() - cpu
        if args.save_state:
            torch.save(model.state_dict(), args.save_state)
    fit_index, _ = api.validation_split(len(train), 0.1)
    fitted = train[fit_index]
    # the k-means floor as floor.kmeans_floor fits it (every training patch, 25 iterations)
    g = torch.Generator().manual_seed(args.seed)
    length = train.shape[-1]
    pts = torch.from_numpy(np.ascontiguousarray(train, dtype=np.float32)).reshape(-1, length)
    cent_t = kmeans(pts, 1024, iterations=25, generator=g)
    cent_f = kmeans(_log_amplitude(pts), 1024, iterations=25, generator=g)

    readings = {}
    glob = None
    for name, xs in (("fit", fitted), ("test", test)):
        xt = torch.from_numpy(np.ascontiguousarray(xs)).double()
        amp = torch.fft.rfft(xt, dim=-1).abs()
        full = torch.fft.fft(xt, dim=-1).abs()
        dec = decoded(model, xs)
        sig_amp = torch.fft.rfft(dec["signal"], dim=-1).abs()
        sig_full = torch.fft.fft(dec["signal"], dim=-1).abs()
        half = amp.shape[-1]
        flat = xt.reshape(-1, length).float()
        floor_sig = torch.fft.rfft(cent_t[nearest(flat, cent_t)[0]].double(), dim=-1).abs().reshape(amp.shape)
        floor_log = cent_f[nearest(_log_amplitude(flat), cent_f)[0]].double().exp().reshape(amp.shape)
        std_a = dec["amplitude"]
        r = {"signal": sig_amp, "floor_signal": floor_sig, "floor_logamp": floor_log,
             "freq_side": analysis.unstandardise(std_a, full)[..., :half],
             "freq_from_signal": analysis.unstandardise(std_a, sig_full)[..., :half]}
        if glob is None:  # the fitted windows' mean per-window mean and std of |FFT(x)|
            glob = (full.mean(dim=(1, 2, 3)).mean(), full.std(dim=(1, 2, 3)).mean())
        r["freq_global"] = std_a[..., :half] * glob[1] + glob[0]
        readings[name] = (r, amp, full)
    r_fit, amp_fit, _ = readings["fit"]
    r_test, amp_test, _ = readings["test"]
    gains = {k: gain(r_fit[k], amp_fit) for k in ("signal", "floor_signal", "floor_logamp", "freq_from_signal",
                                                   "freq_global")}
    out = {}
    for split_name, (r, amp, _) in readings.items():
        out[split_name] = {k: nmse(v, amp) for k, v in r.items()}
        for k, gk in gains.items():
            out[split_name][k + "_gain"] = nmse(r[k] * gk, amp)
    result["amplitude_nmse"] = out
    result["gain_mean"] = {k: float(v.mean()) for k, v in gains.items()}
    result["gain_by_band"] = {k: {b: float(v[lo:hi].mean()) for b, lo, hi in BANDS} for k, v in gains.items()}
    result["bands_test"] = {k: per_band(r_test[k], amp_test) for k in ("signal", "floor_signal", "floor_logamp",
                                                                       "freq_side")}
    xt = torch.from_numpy(np.ascontiguousarray(test)).double()
    sig = decoded(model, test)["signal"]
    var = (xt - xt.mean(-1, keepdim=True)).pow(2).sum()
    flat = xt.reshape(-1, length).float()
    fl = cent_t[nearest(flat, cent_t)[0]].double().reshape(xt.shape)
    result["time_nmse_test"] = {"model": float((sig - xt).pow(2).sum() / var),
                                "floor": float((fl - xt).pow(2).sum() / var)}
    # per band (Parseval on rfft bins): each band's share of the signal's energy and each reading's
    # time error in that band over the signal's total variance
    spec = lambda a: torch.fft.rfft(a, dim=-1).abs().pow(2).sum(dim=tuple(range(a.ndim - 1)))  # noqa: E731
    e_x, e_m, e_f = spec(xt - xt.mean(-1, keepdim=True)), spec(sig - xt), spec(fl - xt)
    result["time_by_band_test"] = {b: {"energy_share": float(e_x[lo:hi].sum() / e_x.sum()),
                                       "model_error": float(e_m[lo:hi].sum() / e_x.sum()),
                                       "floor_error": float(e_f[lo:hi].sum() / e_x.sum())}
                                   for b, lo, hi in BANDS}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(yaml.safe_dump(result, sort_keys=False))
    print(yaml.safe_dump({k: result[k] for k in ("amplitude_nmse", "time_nmse_test", "time_by_band_test")}, sort_keys=False))


if __name__ == "__main__":
    main()

"""Where a masked track's rasteriser time goes (RESULTS section 17). ``record``: a keypoint-only
avatar (6 keyframes), then ``track_sequence`` with masks (defaults: 16 ring cameras, 240 steps per
window, silhouettes on 4 cameras), the rasteriser wrapped to time its forward and to keep every
``--every``-th call's inputs (saved to ``--out``); prints the track CPU, the forward's share and the
calls' sizes (images, pairs, window sizes, covered pixels). ``exact``: over saved calls, section 15's
selection vs the deferred one: images with alpha bit-identical, max |alpha diff|, max gradient diff
over the largest component. ``time``: CPU ms per forward / backward both ways, interleaved, min and
median of ``--reps``. ``prof``: torch profiler table of 8 saved calls (``--deferred`` picks the path).
``exactlean``: over saved calls, the lean chunk loop (RESULTS section 21) against the deferred one before it
(lean=False): calls with alpha bit-identical, max gradient diff over the largest component, CPU ms both ways.
``breakdown``: where one masked track's CPU goes, per path (section 21). ``shape``: the files are templates; masked shape's calls (the true bodies at 12 keyframes x the 6
best-covered of 16 ring cameras, 48 px, sigma 0.1 and 0.04), forward + backward both ways, min of 5.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/profile_track_raster.py record --template benchmarks/fit_avatar/_lizard/lizard.glb --frames 30 --out /tmp/lizard30.pt
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/profile_track_raster.py exact /tmp/lizard30.pt /tmp/hexapod30.pt
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/profile_track_raster.py shape benchmarks/fit_avatar/_lizard/lizard.glb benchmarks/fit_avatar/_quadruped/quadruped.glb
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import torch

from cortexkit.tools.avatar import fit as fitmod
from cortexkit.tools.avatar import raster

HEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "hexapod"


def keypoint_avatar(args):
    """The masked views of ``args.template``'s first clip (16-camera ring, 48 px crops, 2 px noise, 20 %
    dropouts, 3 % outliers, seed 0) and the keypoint-only avatar fitted to them at 6 keyframes."""
    from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape
    from cortexkit.tools.avatar.synth import SynthConfig, make_views
    from make_template import load_template

    mesh, tpl = load_template(Path(args.template))
    world = mesh.animations[next(iter(mesh.animations))]["world"][:args.frames]
    cams, syn = make_views(tpl, world, 1000.0, "ring:16", None,
                           SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=48, masks=True, seed=0))
    obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
    shaped = fit_avatar_shape(tpl, obs, FitConfig(silhouettes=False, shape_steps=(100, 150, 150, 60)), 6)
    return tpl, obs, shaped


def record(args):
    from cortexkit.tools.avatar.fit import FitConfig, track_sequence

    tpl, obs, shaped = keypoint_avatar(args)
    rec, fwd, n = [], [0.0], [0]

    def wrap(pix, faces, size, sigma, **kw):
        t0 = time.process_time()
        out = raster.soft_silhouette(pix, faces, size, sigma, **kw)
        fwd[0] += time.process_time() - t0
        if n[0] % args.every == 0:
            rec.append((pix.detach().clone(), size, sigma))
        n[0] += 1
        return out

    fitmod.soft_silhouette = wrap
    t0 = time.process_time()
    track_sequence(tpl, shaped.shape, obs, FitConfig(silhouettes=True))
    total = time.process_time() - t0
    stats = []
    for pix, size, sigma in rec:
        radius = math.sqrt(math.log(1 / 1e-4 - 1) * sigma)
        tri = pix[:, tpl.faces].reshape(-1, 3, 2)
        lo = (tri.min(1).values - radius - 0.5).ceil().clamp(0, size - 1)
        hi = (tri.max(1).values + radius - 0.5).floor().clamp(-1, size - 1)
        ext = (hi - lo + 1).clamp(min=0)
        cnt = ext[:, 0] * ext[:, 1]
        key = ext[:, 0] * (size + 1) + ext[:, 1]
        alpha = raster.soft_silhouette(pix, tpl.faces, size, sigma)
        stats.append({"images": len(pix), "pairs": int(cnt.sum()), "face_windows": int((cnt > 0).sum()),
                      "window_sizes": int(torch.unique(key[cnt > 0]).numel()), "mean_window_px": float(cnt[cnt > 0].mean()),
                      "covered_px": float((alpha > 0.5).float().sum() / len(pix))})
    print(f"template: {args.template}\nfaces: {len(tpl.faces)}\ncalls: {n[0]}\ntrack_cpu_s: {total:.2f}\n"
          f"cpu_s_per_frame: {total / args.frames:.3f}\nraster_forward_cpu_s: {fwd[0]:.2f}")
    for k in stats[0]:
        print(f"{k}: {float(np.mean([s[k] for s in stats])):.1f}")
    torch.save({"faces": tpl.faces, "rec": rec}, args.out)


def breakdown(args):
    """Where one masked track's CPU goes (RESULTS section 21): the keypoint-only avatar as ``record``,
    then the track with masks once per path (``--paths``: lean and / or reference, the deferred
    selection's chunk loop before section 21), each with process_time accumulators around the
    rasteriser's forward (its setup before the chunk loop apart) and backward, the whole autograd
    backward, the projection into the crops, the posed model (skinning), Adam's step, and the rest."""
    from cortexkit.tools.avatar.fit import FitConfig, track_sequence

    tpl, obs, shaped = keypoint_avatar(args)
    clock = {}

    def timed(name, fn):
        def inner(*a, **kw):
            t0 = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                clock[name] = clock.get(name, 0.0) + time.process_time() - t0
        return inner

    win = raster._SoftSilhouetteWindows
    orig = {"ss": raster.soft_silhouette, "crop": fitmod.crop_pixels, "fwd": fitmod.forward,
            "bwd": torch.Tensor.backward, "rbwd": win.backward, "step": torch.optim.Adam.step,
            "apply": win.apply}
    fitmod.crop_pixels = timed("projection into crops", orig["crop"])
    fitmod.forward = timed("posed model (skinning)", orig["fwd"])
    torch.Tensor.backward = timed("autograd backward (all)", orig["bwd"])
    win.backward = staticmethod(timed("rasteriser backward", orig["rbwd"]))
    win.apply = timed("rasteriser forward: autograd function", orig["apply"])
    torch.optim.Adam.step = timed("Adam step", orig["step"])
    try:
        for path in args.paths.split(","):
            clock.clear()
            fitmod.soft_silhouette = timed("rasteriser forward (all)", lambda *a, **kw: orig["ss"](*a, lean=path == "lean", **kw))
            t0 = time.process_time()
            out = track_sequence(tpl, shaped.shape, obs, FitConfig(silhouettes=True))
            total = time.process_time() - t0
            fwd_all = clock.pop("rasteriser forward (all)")
            loop = clock.pop("rasteriser forward: autograd function")
            bwd_all = clock.pop("autograd backward (all)")
            rows = {"rasteriser forward: corners and windows (before the autograd function)": fwd_all - loop,
                    "rasteriser forward: autograd function (sort, table, chunk loop, selection)": loop,
                    "rasteriser backward": clock.pop("rasteriser backward"),
                    "autograd backward of the rest": bwd_all - 0.0}
            rows["autograd backward of the rest"] -= rows["rasteriser backward"]
            rows.update(clock)
            rows["rest (keypoint and prior terms, Python)"] = total - sum(rows.values())
            print(f"{Path(args.template).name} path {path}: track CPU {total:.2f} s ({total / args.frames:.3f} s/frame), "
                  f"keypoint px {float(out.keypoint_error.mean()):.6f}")
            for k, v in rows.items():
                print(f"  {k}: {v:.2f} s ({100 * v / total:.1f} %)")
    finally:
        fitmod.soft_silhouette, fitmod.crop_pixels, fitmod.forward = orig["ss"], orig["crop"], orig["fwd"]
        torch.Tensor.backward, torch.optim.Adam.step = orig["bwd"], orig["step"]
        win.backward, win.apply = staticmethod(orig["rbwd"]), orig["apply"]


def shape_calls(template: str):
    from cortexkit.tools.avatar.camera import project
    from cortexkit.tools.avatar.fit import select_cameras
    from cortexkit.tools.avatar.synth import SynthConfig, make_views
    from make_template import load_template

    mesh, tpl = load_template(Path(template))
    world = mesh.animations[next(iter(mesh.animations))]["world"][:30]
    cams, syn = make_views(tpl, world, 1000.0, "ring:16", None,
                           SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=48, masks=True, seed=0))
    keys = sorted(set(np.linspace(0, len(world) - 1, 12).round().astype(int).tolist()))
    b, c = select_cameras(syn.confidence[keys], 6).nonzero(as_tuple=True)
    vp = project(cams, syn.truth["vertices"][keys].float()).permute(1, 0, 2, 3)[b, c]
    crop = syn.crops[keys][b, c].to(vp.dtype)
    pix = (vp - crop[:, None, :2]) * crop[:, None, 2:]
    for sigma in (0.1, 0.04):
        runs = {False: [], True: []}
        for _ in range(5):
            for deferred in (False, True):
                _, _, tf, tb = render(pix, tpl.faces, 48, sigma, deferred=deferred)
                runs[deferred].append((tf, tb))
        best = {d: (1e3 * min(x[0] for x in r), 1e3 * min(x[1] for x in r)) for d, r in runs.items()}
        print(f"{Path(template).name} sigma {sigma}: {len(pix)} images, section 15 forward / backward ms "
              f"{best[False][0]:.1f} / {best[False][1]:.1f}, deferred {best[True][0]:.1f} / {best[True][1]:.1f}, "
              f"ratio {sum(best[True]) / sum(best[False]):.3f}")


def render(pix, faces, size, sigma, **kw):
    x = pix.clone().requires_grad_(True)
    t0 = time.process_time()
    alpha = raster.soft_silhouette(x, faces, size, sigma, **kw)
    t1 = time.process_time()
    ((alpha - 0.5) ** 2).mean().backward()
    return alpha.detach(), x.grad, t1 - t0, time.process_time() - t1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["record", "exact", "exactlean", "time", "prof", "shape", "breakdown"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--template", default=str(HEX / "hexapod.glb"))
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--out", default="track_raster_calls.pt")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--deferred", action="store_true")
    ap.add_argument("--paths", default="reference,lean", help="breakdown: the chunk loops to time, in this order")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.what == "record":
        return record(args)
    if args.what == "breakdown":
        return breakdown(args)
    if args.what == "shape":
        for template in args.files:
            shape_calls(template)
        return
    for path in args.files:
        saved = torch.load(path)
        faces, rec = saved["faces"], saved["rec"]
        if args.what == "exactlean":   # RESULTS section 21: lean against the deferred chunk loop before it
            same, dg = 0, 0.0
            for pix, size, sigma in rec:
                a0, g0, _, _ = render(pix, faces, size, sigma, deferred=True, lean=False)
                a1, g1, _, _ = render(pix, faces, size, sigma, deferred=True, lean=True)
                same += int(torch.equal(a0, a1))
                dg = max(dg, float((g1 - g0).abs().max() / g0.abs().max()))
            print(f"{path}: calls {len(rec)}, images {sum(len(r[0]) for r in rec)}, calls with alpha bit-identical "
                  f"{same}, max grad diff / max grad {dg:.2g}")
            runs = {False: [], True: []}
            for _ in range(args.reps):
                for lean in (False, True):
                    f = b = 0.0
                    for pix, size, sigma in rec:
                        _, _, tf, tb = render(pix, faces, size, sigma, deferred=True, lean=lean)
                        f, b = f + tf, b + tb
                    runs[lean].append((1e3 * f / len(rec), 1e3 * b / len(rec)))
            best = {k: (min(x[0] for x in r), min(x[1] for x in r)) for k, r in runs.items()}
            print(f"{path}: forward / backward ms per call, min of {args.reps}: reference {best[False][0]:.1f} / "
                  f"{best[False][1]:.1f}, lean {best[True][0]:.1f} / {best[True][1]:.1f}, "
                  f"ratio {sum(best[True]) / sum(best[False]):.3f}")
        elif args.what == "exact":
            same, da, dg = 0, 0.0, 0.0
            for pix, size, sigma in rec:
                a0, g0, _, _ = render(pix, faces, size, sigma, deferred=False)
                a1, g1, _, _ = render(pix, faces, size, sigma, deferred=True)
                same += int(torch.equal(a0, a1))
                da = max(da, float((a1 - a0).abs().max()))
                dg = max(dg, float((g1 - g0).abs().max() / g0.abs().max()))
            print(f"{path}: calls {len(rec)}, images {sum(len(r[0]) for r in rec)}, calls with alpha bit-identical "
                  f"{same}, max |alpha diff| {da:g}, max grad diff / max grad {dg:.2g}")
        elif args.what == "time":
            runs = {False: [], True: []}
            for _ in range(args.reps):
                for deferred in (False, True):
                    f = b = 0.0
                    for pix, size, sigma in rec:
                        _, _, tf, tb = render(pix, faces, size, sigma, deferred=deferred)
                        f, b = f + tf, b + tb
                    runs[deferred].append((1e3 * f / len(rec), 1e3 * b / len(rec)))
            for deferred, r in runs.items():
                fs, bs = sorted(x[0] for x in r), sorted(x[1] for x in r)
                print(f"{path} {'deferred' if deferred else 'section 15'}: forward ms min {fs[0]:.1f} median "
                      f"{fs[len(fs) // 2]:.1f}, backward ms min {bs[0]:.1f} median {bs[len(bs) // 2]:.1f}")
        else:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for pix, size, sigma in rec[:8]:
                    render(pix, faces, size, sigma, deferred=args.deferred)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))


if __name__ == "__main__":
    main()

"""Figure 6: jigsaw puzzles on noisy MNIST, 2x2 and 3x3 (a delta target: one right answer).

MNIST test images (10k; the train file is not available offline) split 8000/2000, Gaussian noise
(std 0.1, fixed per image) so blank patches differ. A puzzle shuffles the g*g patches; the target is
the ordering X (piece at each grid cell). With --representation insertion (default) digit k is
V_k = #{pieces m < k placed before piece k}, so digit k and conditioning token k are about the
same piece and depend only on earlier pieces; with lehmer the code is taken of the ranking
(cell of each piece), L_j = #{pieces k > j in earlier cells}, which depends on later pieces: the
index of piece j's cell among the cells still free; with fisher-yates also of the ranking, piece
i's cell is a[i + J_i] of the shuffled array, i.e. the absolute cell i + J_i unless an earlier
swap moved it (a code closer to the absolute cell a Sinkhorn head predicts).
Ours: a small CNN embeds each shuffled patch; the embeddings are conditioning tokens of the digit
transformer (identity reference, token k also added to digit k), trained autoregressively and
as a masked model (decoded at NFE 1 and n). Every code model is decoded three ways: one
ancestral sample per puzzle (temperature 1), greedy (per-block argmax) and beam search
(``neural.beam_search_codes``, widths ``--beams``), the MAP-style decoding the paper (after
SymmetricDiffusers) evaluates with. Baseline of equal size: the same CNN and transformer with a
Gumbel-Sinkhorn head (log-space Sinkhorn, 20 iterations, Gumbel noise in training) trained with
the same supervised target (cross-entropy on the soft permutation), decoded by MAP (Hungarian
algorithm). Every model: the same AdamW, learning rate and (``--schedule cosine``) cosine decay
to 0 over all steps, the same epochs, fresh puzzles each epoch from its own generator seeded
alike. The last ``--val-images`` of the 8000 training images are held out as a validation split
(reported beside test, for choosing settings without looking at test). Reported: fraction of
puzzles fully solved and of pieces in place on the 2000 test images, parameter counts, times.

With ``--head pointer`` (AR Lehmer only) the digit transformer uses the tool's pointer head
(``NetConfig(head="pointer")``, see ``neural.py``). jigsaw_cli.py runs the same figure through the
installed CLI instead (raw patch pixels as ``--context``, no CNN).

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/jigsaw.py [--epochs 8] [--grids 2,3]
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from common import DATA, need, save  # noqa: E402

from cortexkit.tools.permutations import neural as N  # noqa: E402
from cortexkit.tools.permutations import representations as R  # noqa: E402


def load_mnist():
    path = need(DATA / "mnist-test" / "t10k-images-idx3-ubyte.gz")
    raw = gzip.decompress(path.read_bytes())
    return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 28, 28).copy()).float() / 255


def noisy_splits(noise: float, val_images: int):
    """MNIST test images plus N(0, noise^2) pixel noise (seed 0), clamped to [0, 1], split into
    train (the first 8000 - val_images), validation (up to 8000) and test (the last 2000)."""
    images = load_mnist()
    gen = torch.Generator().manual_seed(0)
    images = (images + noise * torch.randn(images.shape, generator=gen)).clamp(0, 1)
    n_train = 8000 - val_images
    return images[:n_train], images[n_train:8000], images[8000:]


def patches_of(images: torch.Tensor, g: int) -> torch.Tensor:
    """(B, g*g, 1, p, p) patches in row-major grid order (images cropped to g*p)."""
    p = 28 // g
    x = images[:, : g * p, : g * p]
    x = x.reshape(-1, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(-1, g * g, 1, p, p)
    return x


class PatchCNN(nn.Module):
    def __init__(self, p: int, out: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1),
                                 nn.ReLU(), nn.Flatten(), nn.Linear(32 * p * p, out))

    def forward(self, patches):  # (B, n, 1, p, p) -> (B, n, out)
        b, n = patches.shape[:2]
        return self.net(patches.flatten(0, 1)).view(b, n, -1)


class Sinkhorn(nn.Module):
    """Same CNN + transformer encoder over the shuffled patches, n x n score matrix."""

    def __init__(self, n: int, p: int, d: int = 64, layers: int = 2):
        super().__init__()
        self.cnn = PatchCNN(p, d)
        layer = nn.TransformerEncoderLayer(d, 4, 128, 0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, n)  # score of grid cell i for shuffled piece j

    def forward(self, patches):
        return self.head(self.encoder(self.cnn(patches)))  # (B, piece, cell)


def sinkhorn(log_alpha, iters=20):
    for _ in range(iters):
        log_alpha = log_alpha - log_alpha.logsumexp(2, keepdim=True)
        log_alpha = log_alpha - log_alpha.logsumexp(1, keepdim=True)
    return log_alpha


def puzzles(images, g, gen):
    """(shuffled patches, target orderings X (B, n))."""
    pt = patches_of(images, g)
    n = g * g
    shuffle = torch.stack([torch.randperm(n, generator=gen) for _ in range(len(images))])  # shuffled[j] = pt[shuffle[j]]
    shuffled = torch.gather(pt, 1, shuffle[:, :, None, None, None].expand_as(pt))
    return shuffled, shuffle  # target: the grid cell of each shuffled piece


def scores(pred, target):
    return {"puzzles_solved": round(float((pred == target).all(1).double().mean()), 4),
            "pieces_in_place": round(float((pred == target).double().mean()), 4)}


def lr_schedule(opt, kind: str, total_steps: int):
    if kind == "constant":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps)))


def embed(cnn, x):
    with torch.no_grad():
        return torch.cat([cnn(x[s:s + 500]) for s in range(0, len(x), 500)])


def decode_all(net, ctx, target, nfe, decode, encode, beams):
    """Scores of one sample, greedy and beam decoding of a code model on (context, target)."""
    res = {}
    code = N.sample_codes(net, len(ctx), nfe=nfe, context=ctx, generator=torch.Generator().manual_seed(1))
    res["sample"] = scores(decode(code), target)
    for width in [1, *beams]:
        start = time.perf_counter()
        code, _ = N.beam_search_codes(net, len(ctx), beam_width=width, nfe=nfe, context=ctx)
        key = "greedy" if width == 1 else f"beam{width}"
        res[key] = scores(decode(code[:, 0]), target)
        res[key]["seconds"] = round(time.perf_counter() - start, 1)
    res["nll"] = round(float(-N.log_prob_codes(net, encode(target), nfe=nfe, context=ctx).mean()), 4)
    return res


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--grids", default="2,3")
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--representation", choices=["insertion", "lehmer", "fisher-yates"], default="insertion")
    parser.add_argument("--models", default="ar,mlm,sinkhorn")
    parser.add_argument("--schedule", choices=["cosine", "constant"], default="cosine")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--val-images", type=int, default=1000)
    parser.add_argument("--beams", default="5,20")
    parser.add_argument("--head", choices=["linear", "pointer"], default="linear",
                        help="output head of the AR code model (pointer: lehmer only)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.head == "pointer":
        if args.representation != "lehmer" or "mlm" in args.models.split(","):
            parser.error("--head pointer needs --representation lehmer and no mlm model")
    train_img, val_img, test_img = noisy_splits(args.noise, args.val_images)
    n_train = len(train_img)
    beams = [int(v) for v in args.beams.split(",") if v]
    models = args.models.split(",")
    rep = args.representation
    if rep == "insertion":  # code of the ordering (piece at each cell) = invert(ranking)
        encode = lambda y: R.insertion_encode(R.invert(y))  # noqa: E731
        decode = lambda c: R.invert(R.insertion_decode(c))  # noqa: E731
    elif rep == "lehmer":  # code of the ranking itself
        encode, decode = R.lehmer_encode, R.lehmer_decode
    else:  # Fisher-Yates draws of the ranking: y_i = a[i + J_i], mostly the absolute cell i + J_i
        encode, decode = R.fisher_yates_encode, R.fisher_yates_decode
    result = {"representation": rep, "images_train": n_train, "images_val": args.val_images,
              "images_test": 2000, "noise_std": args.noise, "epochs": args.epochs, "lr": args.lr,
              "schedule": args.schedule, "head": args.head, "batch_size": 128, "by_grid": {}}
    for g in [int(v) for v in args.grids.split(",")]:
        n, p = g * g, 28 // g
        test_x, test_y = puzzles(test_img, g, torch.Generator().manual_seed(99))
        val_x, val_y = puzzles(val_img, g, torch.Generator().manual_seed(98))
        steps = args.epochs * math.ceil(n_train / 128)
        entry = {}
        for mode in [m for m in ("ar", "mlm") if m in models]:
            torch.manual_seed(0)
            data_gen = torch.Generator().manual_seed(1)
            cnn = PatchCNN(p, 64)
            net = N.PermutationTransformer(N.NetConfig(n, rep, mode, d_model=64, layers=2, heads=4, ff=128,
                                                       context_dim=64, context_len=n, context_aligned=True,
                                                       head=args.head))
            params = list(cnn.parameters()) + list(net.parameters())
            opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-2)
            sched = lr_schedule(opt, args.schedule, steps)
            start = time.perf_counter()
            for epoch in range(args.epochs):
                cnn.train()
                net.train()
                x, y = puzzles(train_img, g, data_gen)
                code = encode(y)
                order = torch.randperm(len(x), generator=data_gen)
                for s in range(0, len(x), 128):
                    idx = order[s:s + 128]
                    loss = N.training_loss(net, code[idx], cnn(x[idx]), data_gen)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    sched.step()
                print(g, mode, epoch, float(loss.detach()), flush=True)
            seconds = time.perf_counter() - start
            cnn.eval()
            ctx_test, ctx_val = embed(cnn, test_x), embed(cnn, val_x)
            res = {"parameters": sum(q.numel() for q in params), "train_seconds": round(seconds, 1)}
            for nfe in ([n] if mode == "ar" else [1, n]):
                res[f"nfe{nfe}"] = {"test": decode_all(net, ctx_test, test_y, nfe, decode, encode, beams),
                                    "val": decode_all(net, ctx_val, val_y, nfe, decode, encode, beams)}
            entry[f"ours_{mode}_{rep}" + ("_pointer" if args.head == "pointer" else "")] = res
            print(g, mode, res, flush=True)
        if "sinkhorn" not in models:
            result["by_grid"][f"{g}x{g}"] = entry
            continue
        # Gumbel-Sinkhorn baseline (supervised, same CNN and encoder size)
        torch.manual_seed(0)
        data_gen = torch.Generator().manual_seed(1)
        gs = Sinkhorn(n, p)
        opt = torch.optim.AdamW(gs.parameters(), lr=args.lr, weight_decay=1e-2)
        sched = lr_schedule(opt, args.schedule, steps)
        start = time.perf_counter()
        for epoch in range(args.epochs):
            gs.train()
            x, y = puzzles(train_img, g, data_gen)
            order = torch.randperm(len(x), generator=data_gen)
            for s in range(0, len(x), 128):
                idx = order[s:s + 128]
                logits = gs(x[idx])
                u = torch.rand(logits.shape, generator=data_gen).clamp(1e-9, 1 - 1e-9)
                soft = sinkhorn((logits - torch.log(-torch.log(u))) / 1.0)
                loss = -soft.gather(2, y[idx][:, :, None]).sum((1, 2)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
            print(g, "sinkhorn", epoch, float(loss.detach()), flush=True)
        seconds = time.perf_counter() - start
        from scipy.optimize import linear_sum_assignment

        gs.eval()

        def hungarian(x, y):
            with torch.no_grad():
                logits = torch.cat([gs(x[s:s + 500]) for s in range(0, len(x), 500)])
            pred = torch.stack([torch.as_tensor(linear_sum_assignment(-m.numpy())[1]) for m in logits])
            return scores(pred, y)

        entry["gumbel_sinkhorn"] = {"parameters": sum(q.numel() for q in gs.parameters()),
                                    "train_seconds": round(seconds, 1),
                                    "hungarian": {"test": hungarian(test_x, test_y), "val": hungarian(val_x, val_y)}}
        print(g, entry["gumbel_sinkhorn"], flush=True)
        result["by_grid"][f"{g}x{g}"] = entry
    save(result, args.out, "sample_permutations_jigsaw.yaml")


if __name__ == "__main__":
    main()

"""sample-permutations sample --given-file: per-row evidence through the installed CLI, on S_4
against enumeration (each row's conditional sums to 1 and equals the joint that `score` reports,
restricted to the row's evidence and renormalised)."""

import itertools
import math

import numpy as np
import pytest
from safetensors.numpy import load, save_file

from cortexkit.formats.artifact import write_artifact

TOOL = "sample-permutations"
TINY = ["--d-model", "16", "--layers", "1", "--heads", "2", "--ff", "16", "--threads", "1"]
n = 4
EVERY = np.array(list(itertools.permutations(range(n))))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """300 orderings of 4 items leaning towards 2, 0, 3, 1 (Mallows-like), with item ids."""
    tmp = tmp_path_factory.mktemp("evidence")
    rng = np.random.default_rng(0)
    keys = np.array([1.0, 3.0, 0.0, 2.0]) + rng.gumbel(size=(300, n)) * 1.5
    x = keys.argsort(1)
    np.savetxt(tmp / "train.txt", x, fmt="%d", delimiter=",")
    items = rng.integers(0, 30, size=(300, 1)) * 10 + np.arange(n)  # four distinct ids per row
    write_artifact(tmp / "train.st", {"orderings": x.astype(np.int16), "items": items.astype(np.int64)},
                   "permutations", metadata={"permutations.n": str(n)})
    return tmp


def fit(cli, data, name, *args):
    out = data / f"{name}.st"
    if not out.exists():
        proc = cli(TOOL, "fit", *args, "-o", out)
        assert proc.returncode == 0, proc.stderr
    return out


def joint(cli, model, tmp, items=None):
    """log p of all 24 orderings of S_4, from `score --scores` (``items``: the row's ids)."""
    tensors = {"orderings": EVERY.astype(np.int16)}
    if items is not None:
        tensors["items"] = np.tile(np.asarray(items, dtype=np.int64), (len(EVERY), 1))
    write_artifact(tmp / "every.st", tensors, "permutations", metadata={"permutations.n": str(n)})
    proc = cli(TOOL, "score", model, tmp / "every.st", "--scores", tmp / "lp.st")
    assert proc.returncode == 0, proc.stderr
    return {tuple(p): float(v) for p, v in zip(EVERY.tolist(), load((tmp / "lp.st").read_bytes())["log_likelihood"])}


def top_consistent(p, given):
    r = len(given)
    return list(p[:r]) == list(given)


def order_consistent(p, given):
    pos = [list(p).index(i) for i in given]
    return pos == sorted(pos)


def check_rows(out, rows, keep, joints, consistent):
    x, ll = out["orderings"].astype(np.int64), out["log_likelihood"]
    assert x.shape == (len(rows) * keep, n)
    for i, given in enumerate(rows):
        xs, lls = x[i * keep:(i + 1) * keep], ll[i * keep:(i + 1) * keep]
        assert all(consistent(p, given) for p in xs)
        assert len({tuple(p) for p in xs.tolist()}) == keep  # every completion once
        assert float(np.exp(lls).sum()) == pytest.approx(1.0, abs=1e-5)
        lp = joints[i]
        allowed = {p: v for p, v in lp.items() if consistent(p, given)}
        assert len(allowed) == keep
        norm = math.log(sum(math.exp(v) for v in allowed.values()))
        for p, v in zip(xs.tolist(), lls.tolist()):
            assert v == pytest.approx(allowed[tuple(p)] - norm, abs=2e-5)
        assert np.all(np.diff(lls) <= 1e-9)  # best first


def test_mallows_rows_of_a_csv_with_empty_padding(cli, data):
    model = fit(cli, data, "mallows", data / "train.txt", "--model", "mallows", "--reference", "borda")
    rows = [[2, 0], [1, 3], [3, 2]]
    (data / "ev.csv").write_text("a,b,c\n2,0,\n1,3,-1\n3,2,\n")
    proc = cli(TOOL, "sample", model, "--given-file", data / "ev.csv", "--strategy", "beam",
               "--beam-width", 24, "-n", 2, "-o", data / "best.st")
    assert proc.returncode == 0, proc.stderr
    lp = joint(cli, model, data)
    check_rows(load((data / "best.st").read_bytes()), rows, 2, [lp] * 3, top_consistent)
    # the same rows as PrefLib incomplete orders (1-based, each order's top items)
    (data / "ev.soi").write_text("# NUMBER ALTERNATIVES: 4\n1: 3,1\n1: 2,4\n1: 4,3\n")
    proc = cli(TOOL, "sample", model, "--given-file", data / "ev.soi", "--strategy", "beam",
               "--beam-width", 24, "-n", 2, "-o", data / "best_soi.st")
    assert proc.returncode == 0, proc.stderr
    a, b = load((data / "best.st").read_bytes()), load((data / "best_soi.st").read_bytes())
    assert all(np.array_equal(a[k], b[k]) for k in ("orderings", "log_likelihood"))


def test_ar_lehmer_rows_sum_to_one_and_draws_follow_them(cli, data):
    model = fit(cli, data, "ar", data / "train.txt", "--model", "ar", "--representation", "lehmer",
                "--epochs", "3", *TINY)
    rows = [[3], [1], [0]]
    np.save(data / "ev.npy", np.array(rows))
    proc = cli(TOOL, "sample", model, "--given-file", data / "ev.npy", "--strategy", "beam",
               "--beam-width", 24, "-n", 6, "-o", data / "best.st")
    assert proc.returncode == 0, proc.stderr
    lp = joint(cli, model, data)
    check_rows(load((data / "best.st").read_bytes()), rows, 6, [lp] * 3, top_consistent)
    # draws: rows with different evidence lengths in one call, -n per row, in row order
    mixed = [[2, 0, 3], [-1, -1, -1], [1, -1, -1]]
    save_file({"given": np.array(mixed, dtype=np.int64)}, str(data / "mixed.st"))
    per_row = 3000
    proc = cli(TOOL, "sample", model, "--given-file", data / "mixed.st", "-n", per_row, "--seed", 4,
               "-o", data / "draws.st")
    assert proc.returncode == 0, proc.stderr
    x = load((data / "draws.st").read_bytes())["orderings"].astype(np.int64)
    for i, row in enumerate(mixed):
        given = [v for v in row if v >= 0]
        got = x[i * per_row:(i + 1) * per_row]
        assert all(top_consistent(p, given) for p in got)
        allowed = {p: v for p, v in lp.items() if top_consistent(p, given)}
        norm = math.log(sum(math.exp(v) for v in allowed.values()))
        expected = np.array([math.exp(v - norm) for v in allowed.values()]) * per_row
        counts = np.array([float((got == np.array(p)).all(1).sum()) for p in allowed])
        dof = max(1, len(allowed) - 1)
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < dof + 5 * (2 * dof) ** 0.5 + 5, (row, chi2)


def test_item_conditioned_insertion_rows_reveal_any_subset(cli, data):
    """Each row reveals the order of two of its items (not the first reference items): the tool
    relabels inside; the joint is the model's under those labels (revealed items first)."""
    model = fit(cli, data, "items", data / "train.st", "--model", "ar", "--representation", "insertion",
                "--condition", "items", "--epochs", "3", *TINY)
    rows = [[3, 1], [2, 0]]
    items = np.array([[10, 11, 12, 13], [50, 51, 52, 53]], dtype=np.int64)
    save_file({"given": np.array(rows, dtype=np.int64)}, str(data / "sub.st"))
    write_artifact(data / "rows.st", {"orderings": np.tile(np.arange(n, dtype=np.int16), (2, 1)), "items": items},
                   "permutations", metadata={"permutations.n": str(n)})
    proc = cli(TOOL, "sample", model, "--items", data / "rows.st", "--given-file", data / "sub.st",
               "--strategy", "beam", "--beam-width", 24, "-n", 12, "-o", data / "best.st")
    assert proc.returncode == 0, proc.stderr
    joints = []
    for given, ids in zip(rows, items):
        labels = sorted(given) + sorted(set(range(n)) - set(given))  # model label j <- item labels[j]
        new_of = np.argsort(labels)
        lp = joint(cli, model, data, ids[labels])  # in model labels
        joints.append({tuple(int(labels[v]) for v in p): value for p, value in lp.items()})
        assert all(new_of[labels[j]] == j for j in range(n))
    out = load((data / "best.st").read_bytes())
    check_rows(out, rows, 12, joints, order_consistent)
    assert np.array_equal(out["items"], np.repeat(items, 12, axis=0))


def test_bad_evidence_is_one_line_and_writes_nothing(cli, data, one_line_error, tmp_path):
    model = fit(cli, data, "mallows", data / "train.txt", "--model", "mallows", "--reference", "borda")
    cases = {"dup.csv": ("a,b\n1,1\n", "repeats an item"), "range.csv": ("a,b\n1,7\n", "items 0..3"),
             "gap.csv": ("a,b\n-1,2\n", "-1 padding only"), "frac.csv": ("a,b\n1,0.5\n", "not an item index"),
             "empty.csv": ("", "empty input"),
             "five.soi": ("# NUMBER ALTERNATIVES: 5\n1: 1\n", "orders of 5 items")}
    for name, (text, words) in cases.items():
        (tmp_path / name).write_text(text)
        proc = cli(TOOL, "sample", model, "--given-file", tmp_path / name, "-o", tmp_path / "x.st")
        one_line_error(proc, f"{TOOL} sample", words)
        assert not (tmp_path / "x.st").exists()
    (tmp_path / "ok.csv").write_text("a\n1\n")
    proc = cli(TOOL, "sample", model, "--given-file", tmp_path / "ok.csv", "--given", "1", "-o", tmp_path / "x.st")
    one_line_error(proc, f"{TOOL} sample", "not both")
    assert not (tmp_path / "x.st").exists()


def test_mbr_is_the_brute_force_optimum_of_the_same_draws(cli, data):
    """`sample --strategy mbr` decides from exactly the draws `sample -n S` gives with the same seed
    (per --given-file row); over S_4 no ordering has a better sample-mean metric."""
    from cortexkit.tools.permutations import mbr

    model = fit(cli, data, "ar", data / "train.txt", "--model", "ar", "--representation", "lehmer",
                "--epochs", "3", *TINY)
    rows = [[3], [-1], [1]]
    np.save(data / "ev3.npy", np.array(rows))
    S = 40
    proc = cli(TOOL, "sample", model, "--given-file", data / "ev3.npy", "-n", S, "--seed", 3,
               "-o", data / "draws3.st")
    assert proc.returncode == 0, proc.stderr
    draws = load((data / "draws3.st").read_bytes())["orderings"].astype(np.int64).reshape(len(rows), S, n)
    for metric in ("ndcg@2", "footrule", "kendall"):
        proc = cli(TOOL, "sample", model, "--given-file", data / "ev3.npy", "--strategy", "mbr", "--metric",
                   metric, "--mbr-samples", S, "--seed", 3, "-v", "-o", data / "mbr.st")
        assert proc.returncode == 0, proc.stderr
        assert "rows decided" in proc.stderr and f"from {S} samples per row" in proc.stderr
        out = load((data / "mbr.st").read_bytes())
        m = mbr.parse_metric(metric)
        values = np.stack([mbr.expected_metric(np.tile(p, (len(rows), 1)), draws, m) for p in EVERY], 1)
        best = values.max(1) if m.higher_is_better else values.min(1)
        assert out["orderings"].shape == (len(rows), n)
        assert np.allclose(out["expected_metric"], best, atol=1e-9), metric
        got = mbr.expected_metric(out["orderings"].astype(np.int64), draws, m)
        assert np.allclose(got, best, atol=1e-9), metric
    for bad, words in ((["--strategy", "mbr", "-n", "2"], "one ranking per row"),
                       (["--metric", "kendall"], "apply to --strategy mbr"),
                       (["--strategy", "mbr", "--metric", "map"], "use ndcg")):
        proc = cli(TOOL, "sample", model, *bad, "-o", data / "x.st")
        assert proc.returncode != 0 and words in proc.stderr and not (data / "x.st").exists()


def test_feature_conditioned_insertion_rows_reveal_any_subset(cli, data):
    """One aligned feature token per item (m = n): rows revealing the order of any two items are
    relabelled like item ids, the tokens moving with their items; S_4 against `score --context`."""
    rng = np.random.default_rng(2)
    x = np.loadtxt(data / "train.txt", delimiter=",", dtype=np.int64)
    ctx = rng.normal(size=(len(x), n, 3)).astype(np.float32)
    save_file({"context": ctx}, str(data / "ctx.st"))
    model = fit(cli, data, "feat", data / "train.txt", "--model", "ar", "--representation", "insertion",
                "--condition", "features", "--context", data / "ctx.st", "--epochs", "2", *TINY)
    rows = [[3, 1], [2, 0]]
    test_ctx = rng.normal(size=(2, n, 3)).astype(np.float32)
    save_file({"context": test_ctx}, str(data / "ctx2.st"))
    save_file({"given": np.array(rows, dtype=np.int64)}, str(data / "sub2.st"))
    proc = cli(TOOL, "sample", model, "--context", data / "ctx2.st", "--given-file", data / "sub2.st",
               "--strategy", "beam", "--beam-width", 24, "-n", 12, "-o", data / "best.st")
    assert proc.returncode == 0, proc.stderr
    joints = []
    for given, c in zip(rows, test_ctx):
        labels = sorted(given) + sorted(set(range(n)) - set(given))  # model label j <- item labels[j]
        save_file({"context": np.repeat(c[labels][None], len(EVERY), 0)}, str(data / "ctx_every.st"))
        write_artifact(data / "every.st", {"orderings": EVERY.astype(np.int16)}, "permutations",
                       metadata={"permutations.n": str(n)})
        proc = cli(TOOL, "score", model, data / "every.st", "--context", data / "ctx_every.st",
                   "--scores", data / "lp.st")
        assert proc.returncode == 0, proc.stderr
        lp = load((data / "lp.st").read_bytes())["log_likelihood"]
        joints.append({tuple(int(labels[v]) for v in p): float(value) for p, value in zip(EVERY.tolist(), lp)})
    check_rows(load((data / "best.st").read_bytes()), rows, 12, joints, order_consistent)

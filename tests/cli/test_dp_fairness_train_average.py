"""dp-fairness-train --average-from: the averaged iterate as a suffix average (issue 35, study dp14),
through the installed console script."""
import os
import sys

import numpy as np
import pytest
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from test_dp_fairness_train import TOOL, write_table  # noqa: E402

# explicit steps, batch and dual step: nothing is planned from T, so a run of k steps is the first k steps
# of a longer one (same seed, same Poisson batches) and its last iterate is theta_k of that run. Non-private
# (the same loop and the same averaging code without noise): a private run with --sigma and --steps given
# spends less than --epsilon at every k but one, and working out the sigma that would spend it takes the
# accountant ~10 s per run
FIXED = ["--label", "y", "--sensitive", "sex", "--batch-size", "300", "--non-private", "--lr-dual", "0.5",
         "--gamma", "0.02", "--seed", "5", "-q"]


def _load(path):
    from safetensors.numpy import load_file, safe_open

    with safe_open(path, "np") as fh:
        meta = fh.metadata()
    return load_file(path), meta


def test_suffix_average_is_the_mean_of_the_tail_iterates(cli, tmp_path):
    """--average-from 0.5 over T = 4 steps returns the mean of theta_3 and theta_4 (and of lambda_3,
    lambda_4), each read as the last iterate of a 3- and a 4-step run (a Poisson batch of 300 of 720 rows:
    the iterates differ); --average-from 0 (the default) is the uniform mean of theta_1..theta_4, and an
    explicit 0 writes the default's tensors bit for bit."""
    train = write_table(tmp_path / "train.csv", n=800)
    runs = {}
    for name, extra in [("1", ["--steps", "1"]), ("2", ["--steps", "2"]), ("3", ["--steps", "3"]),
                        ("4", ["--steps", "4"]), ("4@0", ["--steps", "4", "--average-from", "0"]),
                        ("4@0.5", ["--steps", "4", "--average-from", "0.5"])]:
        out = tmp_path / f"m{name}.safetensors"
        p = cli(TOOL, "train", train, *FIXED, *extra, "-o", out)
        assert p.returncode == 0, p.stderr
        runs[name] = _load(out)
    last = {k: runs[k][0] for k in "1234"}
    default, explicit, tail = runs["4"][0], runs["4@0"][0], runs["4@0.5"][0]
    assert set(default) == set(explicit) and all(np.array_equal(default[k], explicit[k]) for k in default)
    for name in ("0.weight", "0.bias"):
        assert not np.allclose(last["3"][f"last.{name}"], last["4"][f"last.{name}"])   # the iterates move
        uniform = np.mean([last[k][f"last.{name}"].astype(np.float64) for k in "1234"], axis=0)
        suffix = np.mean([last[k][f"last.{name}"].astype(np.float64) for k in "34"], axis=0)
        np.testing.assert_allclose(default[f"average.{name}"], uniform, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(tail[f"average.{name}"], suffix, rtol=1e-5, atol=1e-6)
        assert not np.allclose(tail[f"average.{name}"], uniform, rtol=1e-4, atol=1e-5)
        assert np.array_equal(tail[f"last.{name}"], default[f"last.{name}"])          # post-processing only
    np.testing.assert_allclose(tail["dual.average"], (last["3"]["dual.last"] + last["4"]["dual.last"]) / 2,
                               rtol=1e-12, atol=1e-12)
    meta = runs["4@0.5"][1]
    assert yaml.safe_load(meta["cortexkit.config"])["average-from"] == 0.5
    assert yaml.safe_load(meta["dpfair.model"])["average_from"] == 0.5
    assert yaml.safe_load(meta["dpfair.ledger"]) == yaml.safe_load(runs["4"][1]["dpfair.ledger"])  # same epsilon
    shown = cli(TOOL, "train", train, *FIXED, "--steps", "4", "--average-from", "0.5", "--print-config")
    assert shown.returncode == 0 and yaml.safe_load(shown.stdout)["average-from"] == 0.5


@pytest.mark.parametrize("value", ["1", "-0.1", "half"])
def test_average_from_out_of_range_is_a_usage_error(cli, one_line_error, tmp_path, value):
    train = write_table(tmp_path / "train.csv", n=200)
    out = tmp_path / "m.safetensors"
    p = cli(TOOL, "train", train, "--label", "y", "--sensitive", "sex", "--average-from", value, "-o", out)
    one_line_error(p, f"{TOOL} train", "Invalid value for '--average-from'", code=2)
    assert not out.exists()

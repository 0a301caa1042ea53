"""dp-fairness-train sweep --gammas auto (issue 35): gamma 1 first, then shares of the group gap its
released histograms show; the refusals; the warning when that gap is noise."""
import os
import sys

import numpy as np
import pytest
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from test_dp_fairness_train import FAST, TOOL, write_table  # noqa: E402

FRACTIONS = (0.95, 0.9, 0.75, 0.5, 0.25)


def test_auto_gammas_sit_below_the_training_rows_gap(cli, tmp_path):
    """The auto grid is FRACTIONS x the gap read from gamma 1's released histograms, and that gap is the
    training rows' own gap (the gamma 1 model trained alone and evaluated on the training table)."""
    train, test = write_table(tmp_path / "train.csv"), write_table(tmp_path / "test.csv", n=600, seed=1)
    opts = [*FAST, "--max-steps", "60"]
    p = cli(TOOL, "sweep", train, "--test", test, "--gammas", "auto", *opts)
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(p.stdout)
    auto = r["auto"]
    gap, se = auto["gap"], auto["gap_se"]
    assert auto["gammas"] == [round(gap * f, 4) for f in FRACTIONS]
    assert [row["gamma"] for row in r["rows"]] == [1.0] + auto["gammas"]      # rows as for a list
    assert r["runs"] == 7 and {"accuracy", "dp_gap", "held_out"} <= set(r["rows"][-1])
    assert 0 < se < gap / 2 and "within 2 standard errors" not in p.stderr
    # the same gamma 1 run through train, scored on the training rows it read (exact, hard predictions)
    m = tmp_path / "g1.safetensors"
    assert cli(TOOL, "train", train, *opts, "--gamma", "1", "--seed", "0", "-o", m).returncode == 0
    exact = yaml.safe_load(cli(TOOL, "evaluate", m, train).stdout)["dp_gap"]
    assert exact > 0.15                                  # a table with a real gap (x1 shifted by group)
    assert abs(gap - exact) < 0.03 + 3 * se, (gap, se, exact)
    # the constraint binds: the tightest auto gamma is fairer on the test rows than gamma 1
    assert r["rows"][-1]["dp_gap"] < r["rows"][0]["dp_gap"] - 0.05


@pytest.mark.parametrize("constraint, fragment", [
    ("spec", "constraint spec file"),
    ("fnr", "--constraint fnr"),
])
def test_auto_refuses_a_spec_file_and_fnr(cli, one_line_error, tmp_path, constraint, fragment):
    train, test = write_table(tmp_path / "train.csv", n=300), write_table(tmp_path / "test.csv", n=100, seed=1)
    if constraint == "spec":
        constraint = tmp_path / "spec.yaml"
        constraint.write_text(yaml.safe_dump({"partition": ["sex"], "constraints": [
            {"name": "F-yes", "gamma": -0.3, "terms": [{"where": {"sex": "F"}, "class": "yes", "weight": -1.0}]}]}))
    p = cli(TOOL, "sweep", train, "--test", test, "--gammas", "auto", *FAST, "--constraint", constraint)
    one_line_error(p, f"{TOOL} sweep", "--gammas auto cannot be combined with", fragment, "give --gammas G[,G]")


def _no_gap_table(path, n, seed):
    """Every row twice, once per group: any model's rates are equal in both groups (no gap to place
    gammas under) up to the rows the held-out coin takes."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n // 2), rng.normal(size=n // 2)
    y = np.where(rng.random(n // 2) < 1 / (1 + np.exp(-1.5 * x1 + 0.5 * x2)), "yes", "no")
    lines = ["x1,x2,sex,y"] + [f"{a:.4f},{b:.4f},{g},{c}" for a, b, c in zip(x1, x2, y) for g in ("F", "M")]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_auto_warns_once_when_the_gap_is_noise(cli, tmp_path):
    train, test = _no_gap_table(tmp_path / "train.csv", 1500, 0), _no_gap_table(tmp_path / "test.csv", 600, 1)
    p = cli(TOOL, "sweep", train, "--test", test, "--gammas", "auto", *FAST[:-1], "--max-steps", "40", "--seeds", "2")  # not -q
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(p.stdout)
    assert r["auto"]["gap"] < 2 * r["auto"]["gap_se"]
    assert p.stderr.count("within 2 standard errors") == 1, p.stderr      # two seeds, said once
    assert [row["gamma"] for row in r["rows"]] == [1.0] + r["auto"]["gammas"]

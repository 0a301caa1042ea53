"""issue 32 through the installed command: the budget plan and its report, discrete columns kept
discrete through a pipeline into dp-fairness-train, fit --input cube, score --columns, adaptive IS."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
import yaml
from scipy import special

from cortexkit.formats.artifact import read_artifact
from cortexkit.formats.table import read_table

TOOL = "estimate-copula"


def _loans(path, n=1500, seed=0):
    """A table with a binary label, an integer column with few levels, a categorical column."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    children = rng.poisson(1.2, n)
    income = np.exp(rng.normal(10, 0.4, n)) * (1 + 0.3 * (group == "a"))
    approved = (rng.random(n) < special.expit((np.log(income) - 10) * 3 - 0.3 * children)).astype(int)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["income", "children", "group", "approved"])
        w.writerows(zip(income.round(2), children, group, approved))
    return {"children": set(children.tolist()), "group": {"a", "b", "c"}, "approved": {0, 1}}


def test_discrete_columns_round_trip_into_dp_fairness_train(sh, tmp_path):
    """fit | sample --space data | dp-fairness-train train: the label comes back 0/1, the integer
    column as integers among its training levels, the categorical as its level names."""
    seen = _loans(tmp_path / "loans.csv")
    proc = sh(f"cortexkit {TOOL} fit loans.csv --budget 6 --seed 1 | "
              f"cortexkit {TOOL} sample - -n 3000 --space data --seed 2 | tee s.st | "
              "cortexkit dp-fairness-train train - --label approved --sensitive group --max-steps 20 -o fair.st",
              cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "discrete margins: children (int), group (categorical), approved (int)" in proc.stderr
    assert read_artifact(str(tmp_path / "fair.st")).kind == "dpfair-model"
    table = read_table(str(tmp_path / "s.st"))
    assert table.columns["approved"].dtype == np.int64 and set(table.columns["approved"].tolist()) <= seen["approved"]
    assert set(table.columns["children"].tolist()) <= seen["children"]
    assert len(set(table.columns["children"].tolist())) >= 3
    assert set(table.strings("group")) == seen["group"] and table.columns["income"].dtype == np.float64
    # the label's share survives (the distributional transform keeps the margin)
    train = read_table(str(tmp_path / "loans.csv"))
    assert abs(table.columns["approved"].mean() - train.columns["approved"].mean()) < 0.05


def test_fit_says_its_plan_and_how_each_network_stopped(cli, tmp_path, one_line_error):
    _loans(tmp_path / "loans.csv", n=400)
    proc = cli(TOOL, "fit", "loans.csv", "--budget", "4", "--drop", "group", "-o", "m.st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "plan: 2 CDC candidate(s) x" in err and "width" in err and "batch" in err
    assert "validation LL" in err and "gaussian" in err and "steps," in err and "kept" in err
    meta = read_artifact(str(tmp_path / "m.st")).metadata
    info = json.loads(meta["copula.info"])
    assert {"hidden", "depth", "batch_size", "lr", "steps", "budget_seconds"} <= set(info["plan"])
    stops = json.loads(meta["cortexkit.stopped"])
    assert [s["stage"] for s in stops] == ["fit cdc", "fit cdc-guided"]
    for s in stops:
        assert s["planned"] == info["plan"]["steps"] and s["reason"] in ("completed", "time-limit")
        assert s["ran"] == info["candidates"][s["stage"][4:]]["steps"]
    # --guide belongs to --copula cdc
    one_line_error(cli(TOOL, "fit", "loans.csv", "--guide", "gaussian", "-o", "x.st", cwd=tmp_path),
                   f"{TOOL} fit", "--copula cdc")
    assert not (tmp_path / "x.st").exists()


def test_fit_input_cube_uses_the_pseudo_observations_as_they_are(cli, tmp_path, one_line_error):
    assert cli(TOOL, "simulate", "--copula", "gaussian:rho=0.6", "-d", "3", "-n", "500", "--seed", "1",
               "-o", "u.st", cwd=tmp_path).returncode == 0
    proc = cli(TOOL, "fit", "u.st", "--input", "cube", "--copula", "gaussian", "-o", "m.st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    u = read_table(str(tmp_path / "u.st")).matrix()
    corr = np.asarray(read_artifact(str(tmp_path / "m.st")).tensors["corr"])
    np.testing.assert_allclose(corr, np.corrcoef(special.ndtri(np.clip(u, 1e-5, 1 - 1e-5)), rowvar=False))
    # data-space samples of a cube model are pseudo-observations
    assert cli(TOOL, "sample", "m.st", "-n", "200", "--space", "data", "-o", "s.csv", cwd=tmp_path).returncode == 0
    s = np.loadtxt(tmp_path / "s.csv", delimiter=",", skiprows=1)
    assert s.min() > 0 and s.max() < 1
    (tmp_path / "bad.csv").write_text("a,b\n" + "\n".join(f"{i / 20},{0.5 + i}" for i in range(20)) + "\n")
    one_line_error(cli(TOOL, "fit", "bad.csv", "--input", "cube", "-o", "x.st", cwd=tmp_path),
                   f"{TOOL} fit", "column 'b'", "pseudo-observation")
    assert not (tmp_path / "x.st").exists()


def test_score_columns_reads_an_npy_as_the_models_columns(cli, tmp_path):
    assert cli(TOOL, "simulate", "--copula", "clayton:theta=2", "-d", "2", "-n", "400", "--seed", "1",
               "--margins", "normal", "-o", "d.csv", cwd=tmp_path).returncode == 0
    assert cli(TOOL, "fit", "d.csv", "--copula", "gaussian", "-o", "m.st", cwd=tmp_path).returncode == 0
    x = np.loadtxt(tmp_path / "d.csv", delimiter=",", skiprows=1)
    np.save(tmp_path / "d.npy", x[:, ::-1])            # columns c0, c1 = x2, x1
    refused = cli(TOOL, "score", "m.st", "d.npy", "-o", "no.st", cwd=tmp_path)
    assert refused.returncode == 1 and "'x1'" in refused.stderr
    ok = cli(TOOL, "score", "m.st", "d.npy", "--columns", "c1,c0", "-o", "a.csv", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert cli(TOOL, "score", "m.st", "d.csv", "-o", "b.csv", cwd=tmp_path).returncode == 0
    a = np.loadtxt(tmp_path / "a.csv", delimiter=",", skiprows=1)
    b = np.loadtxt(tmp_path / "b.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("target", [0.0, 0.05])
def test_evaluate_draws_until_the_standard_error_or_the_cap(cli, tmp_path, target):
    assert cli(TOOL, "simulate", "--copula", "clayton:theta=2", "-d", "2", "-n", "1200", "--seed", "1",
               "-o", "d.st", cwd=tmp_path).returncode == 0
    fit = cli(TOOL, "fit", "d.st", "--copula", "cdc", "--steps", "40", "--hidden", "16", "--depth", "1",
              "-o", "m.st", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    proc = cli(TOOL, "evaluate", "m.st", "d.st", "--samples", "100", "--is-draws", "200000",
               "--is-stderr", str(target), "--proposal", "issue", "-o", "rep.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rep = yaml.safe_load((tmp_path / "rep.yaml").read_text())
    assert rep["is_draws_cap"] == 200000 and rep["is_stderr_target"] == target
    if target:
        assert rep["is_draws"] < 200000 and rep["log_z_stderr"] <= target
    else:
        assert rep["is_draws"] == 200000

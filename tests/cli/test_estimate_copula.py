"""cortexkit estimate-copula through the installed command: pipelines, files, bad input."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
import yaml

from cortexkit.formats.table import read_table

TOOL = "estimate-copula"
SMALL = ["--hidden", "32", "--depth", "1", "--lr", "2e-3", "--batch-size", "256"]


def _table(path):
    return read_table(str(path))


def test_simulate_fit_evaluate_pipeline_gaussian_copula_is_exact(sh, tmp_path):
    """simulate | fit - (two verbs of one tool, through a pipe) and a closed-form check: the Gaussian
    copula fitted to 8000 Gaussian-copula rows scores the held-out rows at their true log density."""
    proc = sh(f"cortexkit {TOOL} simulate --copula gaussian:rho=0.6 -d 3 -n 8000 --seed 1 --margins exponential "
              f"| cortexkit {TOOL} fit - --copula gaussian -o g.st && "
              f"cortexkit {TOOL} simulate --copula gaussian:rho=0.6 -d 3 -n 3000 --seed 2 --margins exponential "
              f"--log-density -o test.st && cortexkit {TOOL} evaluate g.st test.st --samples 500 -o rep.yaml",
              cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rep = yaml.safe_load((tmp_path / "rep.yaml").read_text())
    true = _table(tmp_path / "test.st").column("log_density").mean()
    assert abs(rep["ll"] - true) < 0.02 and rep["log_z"] == 0.0
    assert rep["ll"] == pytest.approx(rep["gaussian_copula_ll"])
    assert rep["w2"] < 0.5 and rep["tau_frobenius"] < 0.1 and rep["ks_max"] < 0.08


def test_cdc_pipeline_with_samples_to_csv_through_convert(sh, tmp_path):
    """A CDC fit in a pipe, then sample --space data | cortexkit convert - out.csv (two tools)."""
    proc = sh(f"cortexkit {TOOL} simulate --copula clayton:theta=3 -d 2 -n 3000 --seed 1 --margins normal "
              f"| cortexkit {TOOL} fit - --copula cdc --steps 60 {' '.join(SMALL)} -o c.st && "
              f"cortexkit {TOOL} sample c.st -n 200 --space data --seed 3 | cortexkit convert - out.csv && "
              f"cortexkit {TOOL} simulate --copula clayton:theta=3 -d 2 -n 500 --seed 2 --margins normal -o t.st && "
              f"cortexkit {TOOL} evaluate c.st t.st --samples 300 --is-draws 20000 -o rep.yaml",
              cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text())))
    assert rows[0] == ["x1", "x2"] and len(rows) == 201
    values = np.array(rows[1:], dtype=float)
    train = _table(tmp_path / "t.st").matrix()
    assert values.min() >= train.min() - 1 and values.max() <= train.max() + 1   # empirical quantiles
    rep = yaml.safe_load((tmp_path / "rep.yaml").read_text())
    for key in ("ll_raw", "log_z", "ess_fraction", "ll", "w2", "tau_frobenius", "ks_max", "sample_seconds_per_1k"):
        assert np.isfinite(rep[key]), key
    assert rep["ll"] == pytest.approx(rep["ll_raw"] - rep["log_z"])
    # both log Z proposals by default; the gives the headline figures
    by = rep["log_z_by_proposal"]
    assert set(by) == {"issue", "samples"} and rep["proposal"] == "issue"
    assert by["issue"]["log_z"] == rep["log_z"]
    assert by["samples"]["ll"] == pytest.approx(rep["ll_raw"] - by["samples"]["log_z"])
    assert abs(by["samples"]["log_z"] - by["issue"]["log_z"]) < 5 * (by["samples"]["log_z_stderr"]
                                                                     + by["issue"]["log_z_stderr"]) + 0.02


def test_fit_is_reproducible_and_score_transform_agree(cli, tmp_path):
    assert cli(TOOL, "simulate", "--copula", "frank:theta=5", "-d", "3", "-n", "600", "--seed", "4",
               "--margins", "normal", "-o", "d.st", cwd=tmp_path).returncode == 0
    for name in ("a", "b"):   # same command line (it is stored in the file) in two folders
        (tmp_path / name).mkdir()
        proc = cli(TOOL, "fit", "../d.st", "--copula", "cdc", "--steps", "20", *SMALL, "--seed", "7", "-o", "m.st",
                   cwd=tmp_path / name)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a" / "m.st").read_bytes() == (tmp_path / "b" / "m.st").read_bytes()
    (tmp_path / "a" / "m.st").rename(tmp_path / "a.st")
    proc = cli(TOOL, "score", "a.st", "d.st", "--density", "data", "-o", "s.st", cwd=tmp_path)
    assert proc.returncode == 0 and "unnormalised" in proc.stderr
    s = _table(tmp_path / "s.st")
    np.testing.assert_allclose(s.column("log_density"), s.column("log_copula") + s.column("log_marginals"))
    # the same rows on the Gaussian scale score the same copula density
    assert cli(TOOL, "transform", "a.st", "d.st", "--to", "gaussian", "-o", "z.st", cwd=tmp_path).returncode == 0
    assert cli(TOOL, "score", "a.st", "z.st", "--input", "gaussian", "-o", "sz.st", cwd=tmp_path).returncode == 0
    np.testing.assert_allclose(_table(tmp_path / "sz.st").column("log_copula"), s.column("log_copula"), atol=1e-5)
    # data -> gaussian -> data returns the training rows (interpolated ECDF and its inverse)
    assert cli(TOOL, "transform", "a.st", "z.st", "--from", "gaussian", "--to", "data", "-o", "x.st",
               cwd=tmp_path).returncode == 0
    np.testing.assert_allclose(_table(tmp_path / "x.st").matrix(), _table(tmp_path / "d.st").matrix(), atol=1e-6)


def test_reflection_samples_and_has_no_density(cli, tmp_path, one_line_error):
    assert cli(TOOL, "simulate", "--copula", "clayton:theta=2", "-n", "1000", "-o", "d.st", cwd=tmp_path).returncode == 0
    proc = cli(TOOL, "fit", "d.st", "--copula", "reflection", "--steps", "40", *SMALL, "-o", "r.st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = cli(TOOL, "sample", "r.st", "-n", "300", "-o", "s.st", cwd=tmp_path)
    u = _table(tmp_path / "s.st").matrix()
    assert proc.returncode == 0 and u.shape == (300, 2) and (u > 0).all() and (u < 1).all()
    # bfloat16 network, same seed: the same starting noise, positions within bf16 rounding
    proc = cli(TOOL, "sample", "r.st", "-n", "300", "--precision", "bf16", "-o", "b.st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    diff = np.abs(_table(tmp_path / "b.st").matrix() - u)
    assert 0 < diff.mean() < 0.01 and diff.max() < 0.1
    one_line_error(cli(TOOL, "score", "r.st", "d.st", "-o", "x.st", cwd=tmp_path), f"{TOOL} score", "no density")
    assert not (tmp_path / "x.st").exists()


def test_man_page_simulate_examples_run_shrunk(sh, tmp_path):
    """The man page's first EXAMPLES block, with -n 16000/4000 shrunk to 2000/500 and --steps 30."""
    proc = sh(f"cortexkit {TOOL} simulate --copula clayton:theta=3 -d 2 -n 2000 --seed 1 "
              f"| cortexkit {TOOL} fit - --copula cdc --steps 30 {' '.join(SMALL)} -o clayton.st && "
              f"cortexkit {TOOL} simulate --copula clayton:theta=3 -d 2 -n 500 --seed 2 --log-density -o test.st && "
              f"cortexkit {TOOL} evaluate clayton.st test.st --columns x1,x2 --is-draws 5000 --samples 200",
              cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ll_trusted" in proc.stdout.decode()


def _csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")


@pytest.fixture
def model(cli, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 3))
    _csv(tmp_path / "ok.csv", ["a", "b", "c"], x.tolist())
    assert cli(TOOL, "fit", "ok.csv", "--copula", "gaussian", "-o", "m.st", cwd=tmp_path).returncode == 0
    return tmp_path


def test_bad_input_gives_one_line_errors_and_no_output(cli, model, one_line_error):
    tmp = model
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 3)).tolist()
    x[7][1] = "nan"
    _csv(tmp / "nan.csv", ["a", "b", "c"], x)
    one_line_error(cli(TOOL, "fit", "nan.csv", "-o", "o.st", cwd=tmp), f"{TOOL} fit", "'b'", "row 8")
    _csv(tmp / "const.csv", ["a", "b"], [[float(v), 1.0] for v in rng.standard_normal(50)])
    one_line_error(cli(TOOL, "fit", "const.csv", "-o", "o.st", cwd=tmp), f"{TOOL} fit", "constant", "'b'")
    _csv(tmp / "few.csv", ["a", "b"], rng.standard_normal((5, 2)).tolist())
    one_line_error(cli(TOOL, "fit", "few.csv", "-o", "o.st", cwd=tmp), f"{TOOL} fit", "too few")
    _csv(tmp / "other.csv", ["a", "q", "c"], rng.standard_normal((20, 3)).tolist())
    for verb in ("score", "evaluate", "transform"):
        one_line_error(cli(TOOL, verb, "m.st", "other.csv", "-o", "o.st", cwd=tmp), f"{TOOL} {verb}", "'b'")
    one_line_error(cli(TOOL, "sample", "ok.csv", "-o", "o.st", cwd=tmp), f"{TOOL} sample")   # not a model
    (tmp / "trunc.st").write_bytes((tmp / "m.st").read_bytes()[:100])
    one_line_error(cli(TOOL, "sample", "trunc.st", "-o", "o.st", cwd=tmp), f"{TOOL} sample")
    (tmp / "empty.csv").write_text("")
    one_line_error(cli(TOOL, "fit", "empty.csv", "-o", "o.st", cwd=tmp), f"{TOOL} fit", "empty")
    one_line_error(cli(TOOL, "simulate", "--copula", "gumbel:theta=0.5", "-o", "o.st", cwd=tmp),
                   f"{TOOL} simulate", "theta")
    proc = cli(TOOL, "fit", "ok.csv", "--copula", "gaussian", "-o", "no/such/dir/m.st", cwd=tmp)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    # pseudo-observations outside [0, 1] are refused, not clipped into the cube
    _csv(tmp / "cube.csv", ["a", "b", "c"], [[0.5, 1.5, 0.2], [0.1, 0.2, 0.3]])
    one_line_error(cli(TOOL, "transform", "m.st", "cube.csv", "--from", "cube", "-o", "o.st", cwd=tmp),
                   f"{TOOL} transform", "'b', row 1", "[0, 1]")
    # held-out tables whose sample metrics are undefined: no NaN in the report, one line instead
    held = rng.standard_normal((40, 3))
    held[:, 2] = 0.25
    _csv(tmp / "held_const.csv", ["a", "b", "c"], held.tolist())
    one_line_error(cli(TOOL, "evaluate", "m.st", "held_const.csv", "-o", "o.yaml", cwd=tmp),
                   f"{TOOL} evaluate", "'c'", "Kendall tau")
    one_line_error(cli(TOOL, "evaluate", "m.st", "cube.csv", "--input", "cube", "-o", "o.yaml", cwd=tmp),
                   f"{TOOL} evaluate", "'b', row 1")
    _csv(tmp / "three.csv", ["a", "b", "c"], rng.standard_normal((3, 3)).tolist())
    one_line_error(cli(TOOL, "evaluate", "m.st", "three.csv", "-o", "o.yaml", cwd=tmp), f"{TOOL} evaluate",
                   "too few")
    assert not (tmp / "o.st").exists() and not (tmp / "o.yaml").exists()
    # rows beyond the training range have data-space density 0: scored, but named in a warning
    far = rng.uniform(-0.5, 0.5, (20, 3))   # inside the training range but for column a below
    far[:4, 0] = 50.0
    _csv(tmp / "far.csv", ["a", "b", "c"], far.tolist())
    proc = cli(TOOL, "score", "m.st", "far.csv", "--density", "data", "-o", "far.st", cwd=tmp)
    assert proc.returncode == 0 and "4 of 20 rows" in proc.stderr and "'a' (4)" in proc.stderr, proc.stderr
    assert np.isinf(_table(tmp / "far.st").column("log_density")[:4]).all()


def test_duplicated_and_comonotone_columns_are_named_in_a_warning(cli, tmp_path):
    x = np.random.default_rng(2).standard_normal((300, 2))
    rows = np.column_stack([x, x[:, 0] ** 3, x[:, 1]]).tolist()
    _csv(tmp_path / "dup.csv", ["area", "width", "area3", "width_copy"], rows)
    proc = cli(TOOL, "fit", "dup.csv", "--copula", "gaussian", "-o", "m.st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "'area' and 'area3'" in proc.stderr and "'width' and 'width_copy'" in proc.stderr
    proc = cli(TOOL, "fit", "dup.csv", "--copula", "gaussian", "--columns", "area,width,area3,width_copy",
               "--drop", "area3,width_copy", "-o", "m2.st", cwd=tmp_path)   # --drop applies to --columns too
    assert proc.returncode == 0 and "warning" not in proc.stderr
    assert "2 columns" in proc.stderr
    rep = yaml.safe_load(cli(TOOL, "evaluate", "m.st", "dup.csv", "--samples", "100", cwd=tmp_path).stdout)
    assert np.isfinite(rep["ll"])   # the ridge keeps the singular Gaussian copula finite

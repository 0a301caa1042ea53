"""dp-fairness-train (issue 23): the budget asked is the budget spent or a warning says why; bad input refused
before training; the closed-form per-example gradients equal vmap's."""
import csv
import math

import numpy as np
import pytest
import torch
import yaml

TOOL = "dp-fairness-train"
BASE = ["--label", "y", "--sensitive", "sex", "--batch-size", "300", "--laplace-b", "0.2", "-q"]


def _table(path, n=1500, seed=0, edit=None):
    rng = np.random.default_rng(seed)
    g = rng.choice(["F", "M"], n)
    x = rng.normal(size=n) + 0.8 * (g == "F")
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-1.5 * x)), "yes", "no").astype(object)
    rows = [[f"{a:.4f}", b, c] for a, b, c in zip(x, g, y)]
    if edit:
        edit(rows)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x", "sex", "y"])
        w.writerows(rows)
    return path


def _ledger(path):
    from safetensors import safe_open
    with safe_open(path, "np") as fh:
        return yaml.safe_load(fh.metadata()["dpfair.ledger"])


def test_capped_steps_spend_the_budget_or_say_why(cli, tmp_path):
    train = _table(tmp_path / "t.csv")
    out = tmp_path / "m.st"
    p = cli(TOOL, "train", train, *BASE, "--epsilon", "1", "--max-steps", "20", "-o", out)
    assert p.returncode == 0, p.stderr
    led = _ledger(out)
    assert led["steps"] == 20 and 0.98 <= led["epsilon_spent"] <= 1    # sigma lowered to spend it
    from dp_accounting import dp_event, pld                                # the ledger equals dp-accounting
    acc = pld.PLDAccountant()
    q = led["sampling_rate"]
    acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(led["sigma"])), 20)
    acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.LaplaceDpEvent(1 / 0.2)), 20)
    assert led["epsilon_counts"] == pytest.approx(0.05)                    # the planner's noisy cell sizes
    acc.compose(dp_event.LaplaceDpEvent(1 / 0.05))
    assert led["epsilon_validation"] == pytest.approx(0.05)                # the held-out rows' histogram (issue 35)
    acc.compose(dp_event.LaplaceDpEvent(1 / 0.05))
    assert acc.get_epsilon(1e-5) == pytest.approx(led["epsilon_spent"], rel=2e-3)
    # an explicit sigma is kept: a warning names the cap and the sigma that would spend the budget
    p = cli(TOOL, "train", train, *BASE[:-1], "--epsilon", "1", "--sigma", "10", "--max-steps", "20", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "below the target 1: the step search stopped at --max-steps 20; sigma" in p.stderr
    wanted = float(p.stderr.split("; sigma ")[1].split()[0])
    acc = cli(TOOL, "account", "--sigma", str(wanted), "--laplace-b", "0.2", "--sampling-rate", str(q),
              "--steps", "20", "--epsilon", "1", "--count-epsilon", "0.05", "--validation-epsilon", "0.05")
    r = yaml.safe_load(acc.stdout)
    assert 0.98 <= r["epsilon"] <= 1 and r["within_budget"]
    # account says the same when its step search is capped
    acc = cli(TOOL, "account", "--sigma", "10", "--sampling-rate", str(q), "--epsilon", "1", "--max-steps", "20")
    r = yaml.safe_load(acc.stdout)
    assert r["steps"] == 20 and "would spend it in 20 steps" in r["budget_warning"] and "warning" in acc.stderr


def test_account_refuses_a_step_count_it_cannot_compose_in_time(cli, one_line_error, tmp_path):
    # 1e8 steps would hang in the PLD composition; refused up front with the estimate
    out = tmp_path / "r.yaml"
    p = cli(TOOL, "account", "--sigma", "1", "--sampling-rate", "0.01", "--steps", "100000000", "-o", out)
    one_line_error(p, f"{TOOL} account", "accounting 100000000 steps would take about")
    assert not out.exists()


def test_stray_label_value_is_an_error(cli, one_line_error, tmp_path):
    def stray(rows):
        rows[3][2] = "maybe"
        rows[9][2] = "maybe"
    out = tmp_path / "m.st"
    p = cli(TOOL, "train", _table(tmp_path / "t.csv", edit=stray), *BASE, "--epsilon", "3", "-o", out)
    one_line_error(p, f"{TOOL} train", "'maybe' (2 rows) with fewer than 10 rows")
    assert not out.exists()


def test_negative_gamma_and_infeasible_constraints_fail_before_training(cli, one_line_error, tmp_path):
    from cortexkit.formats.errors import CortexError
    from cortexkit.tools import dpfair
    from cortexkit.tools.dpfair.io import read_columns

    train = _table(tmp_path / "t.csv")
    out = tmp_path / "m.st"
    p = cli(TOOL, "train", train, *BASE, "--gamma", "-0.1", "-o", out)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and not out.exists()
    with pytest.raises(CortexError, match="--gamma must be a finite number >= 0"):
        dpfair.plan(read_columns(str(train)), dpfair.TrainConfig(label="y", sensitive=["sex"], gamma=-0.1))
    spec = tmp_path / "spec.yaml"                       # P(yes | F) >= 0.9 and P(yes | F) <= 0.1
    spec.write_text(yaml.safe_dump({"partition": ["sex"], "constraints": [
        {"name": "at-least", "gamma": -0.9, "terms": [{"where": {"sex": "F"}, "class": "yes", "weight": -1.0}]},
        {"name": "at-most", "gamma": 0.1, "terms": [{"where": {"sex": "F"}, "class": "yes", "weight": 1.0}]}]}))
    p = cli(TOOL, "train", train, *BASE, "--constraint", spec, "-o", out)
    one_line_error(p, f"{TOOL} train", "cannot all hold")
    assert not out.exists()


def test_tiny_group_is_an_error_unless_allowed(cli, one_line_error, tmp_path):
    def tiny(rows):
        for row in rows[:5]:
            row[1] = "X"
    train = _table(tmp_path / "t.csv", edit=tiny)
    out = tmp_path / "m.st"
    # 5 rows: the planner sees 5 + Laplace(1/2) (--count-epsilon 2), about 1 per batch of 300 in 1500
    budget = ["--max-steps", "5", "--epsilon", "3", "--count-epsilon", "2"]
    p = cli(TOOL, "train", train, *BASE, *budget, "-o", out)
    one_line_error(p, f"{TOOL} train", "group ['X'] has an expected count of", "per batch (noisy size), below the 10.0 std")
    assert float(p.stderr.split("expected count of ")[1].split()[0]) < 2.0
    assert not out.exists()
    p = cli(TOOL, "train", train, *BASE, *budget, "--allow-small-groups", "-o", out)
    assert p.returncode == 0 and out.exists()


@pytest.mark.parametrize("kind, hidden", [("logistic", []), ("mlp", [7, 5])])
@pytest.mark.parametrize("rates", [False, True])
def test_closed_form_clipped_sums_equal_vmap(kind, hidden, rates):
    from cortexkit.tools.dpfair import models, raco

    torch.manual_seed(0)
    m = models.build_model(kind, 6, 3, hidden).double()
    params = {k: v.detach().clone() for k, v in m.named_parameters()}
    x, y, w = torch.randn(50, 6, dtype=torch.float64), torch.randint(0, 3, (50,)), torch.randn(50, 3, dtype=torch.float64)
    for clip in (0.3, math.inf):
        loss = raco.make_per_example_loss(m, 8.0, 40.0, rates)
        g = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0, 0))(params, x, y, w)
        ref, _ = raco.clipped_gradient_sum(g, clip)
        ours = raco.clipped_sum_linear(params, raco.linear_stack(m), x, y, w, 8.0, 40.0, rates, clip)
        for k in ref:
            torch.testing.assert_close(ours[k], ref[k], rtol=1e-10, atol=1e-12)
    assert raco.linear_stack(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(), torch.nn.Linear(2, 2))) is None

"""tools.dpfair from Python, without click: the same artifact bytes as the command line."""
import csv

import numpy as np
import pytest
import torch
import yaml

from cortexkit.formats.artifact import encode, build_metadata, read_artifact
from cortexkit.formats.errors import CortexError
from cortexkit.tools import dpfair
from cortexkit.tools.dpfair.io import read_columns


def _table(path, n=600, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["F", "M"], n)
    x1 = rng.normal(size=n) + 0.8 * (g == "F")
    job = rng.choice(["a", "b"], n)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-1.5 * x1)), "yes", "no")
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x1", "job", "sex", "y"])
        w.writerows(zip([f"{v:.4f}" for v in x1], job, g, y))
    return path


@pytest.mark.parametrize("model_args, kind", [([], "logistic"), (["--model", "mlp", "--hidden", "6"], "mlp")])
def test_python_train_gives_the_cli_bytes(cli, tmp_path, model_args, kind):
    path = _table(tmp_path / "t.csv")
    out = tmp_path / "cli.safetensors"
    p = cli("dp-fairness-train", "train", path, "--label", "y", "--sensitive", "sex", "--batch-size", "150",
            "--laplace-b", "0.2", "--sigma", "2", "--max-steps", "12", "--epsilon", "8", "--seed", "5",
            *model_args, "-q", "-o", out)
    assert p.returncode == 0, p.stderr
    table = read_columns(str(path))
    config = dpfair.TrainConfig(label="y", sensitive=["sex"], batch_size=150, laplace_b=0.2, sigma=2.0,
                                max_steps=12, epsilon=8.0, model_kind=kind, hidden=[6] if kind == "mlp" else [])
    plan = dpfair.plan(table, config, seed=5)              # the seed also draws the held-out rows
    assert plan.ledger.steps == 12 and plan.ledger.epsilon_spent <= 8.0
    assert plan.n == int((~plan.holdout).sum()) and 30 < int(plan.holdout.sum()) < 90
    torch.manual_seed(5)                                   # the CLI seeds torch's global generator too
    fitted = dpfair.train(table, config, plan, seed=5)
    report, _ = dpfair.check_baselines(table, plan, {"model": dpfair.Model.from_fitted(fitted)}, seed=5,
                                       gamma=config.gamma, train_violation=fitted.stop.get("train_violation"))
    stop = dict(fitted.stop)
    stopped = {"stage": "RaCO-DP", "ran": stop.pop("ran"), "planned": stop.pop("planned"), "unit": "steps",
               "reason": stop.pop("reason"), **stop}
    stamped = read_artifact(str(out))                      # provenance stamps: the CLI's argv and config
    ours = encode(fitted.tensors, build_metadata(dpfair.KIND_MODEL, version=str(dpfair.MODEL_VERSION),
                                                 producer=stamped.producer, config=stamped.config,
                                                 extra={**fitted.metadata, "dpfair.validation": report,
                                                        "cortexkit.stopped": [stopped]}))
    assert ours == out.read_bytes()
    # and the model evaluates from Python like the CLI's evaluate
    report = dpfair.evaluate(dpfair.Model.from_fitted(fitted), table)
    rep = yaml.safe_load(cli("dp-fairness-train", "evaluate", out, path).stdout)
    assert report["accuracy"] == rep["accuracy"] and report["dp_gap"] == pytest.approx(rep["dp_gap"])


def test_python_errors_are_cortex_errors(tmp_path):
    table = read_columns(str(_table(tmp_path / "t.csv")))
    with pytest.raises(CortexError, match="no label column"):
        dpfair.plan(table, dpfair.TrainConfig(label="nope"))
    with pytest.raises(CortexError, match="refusing to run past the budget"):
        dpfair.plan(table, dpfair.TrainConfig(label="y", sensitive=["sex"], sigma=1.0, steps=5000, epsilon=0.5,
                                              batch_size=150))
    with pytest.raises(CortexError, match="not one of"):
        dpfair.plan(table, dpfair.TrainConfig(label="y", sensitive=["sex"], constraint="my.yaml"))
    rep = dpfair.account(dpfair.AccountConfig(sigma=4, laplace_b=0.5, batch_size=4096, n_records=29676,
                                              epsilon=1, delta=1e-4))
    assert rep["steps"] == 17 and rep["solved_for"] == "steps"


def test_default_batch_steps_and_steps_sizes_come_from_n_budget_and_groups(tmp_path):
    """Issue 23: no --batch-size / --lr / --lr-dual -> q is the largest rate at which --max-steps steps of
    sigma 10 fit epsilon (not q = 1 as batch 4096 gave on a 600-row table), raised for small groups."""
    from cortexkit.tools.dpfair import accounting

    table = read_columns(str(_table(tmp_path / "t.csv")))                 # 600 rows, F/M about 300 each
    p = dpfair.plan(table, dpfair.TrainConfig(label="y", constraint="none", epsilon=1.0, max_steps=40))
    q, led = p.ledger.sampling_rate, p.ledger
    assert 0 < q < 0.5 and led.steps == 40 and 0.98 <= led.epsilon_spent <= 1.0
    assert accounting.epsilon_spent(10.0, None, q, 40, 1e-5) <= 1.0       # sigma 10 fits at q ...
    assert accounting.epsilon_spent(10.0, None, 1.03 * q, 40, 1e-5) > 1.0  # ... and not at a 3 % larger q
    assert 9.0 < led.sigma <= 10.0 and p.lr == pytest.approx(2.0)          # lr = 2 / clip, clip 1 unconstrained
    assert led.clip_norm == 1.0
    # under demographic parity the smallest group's batch count must be >= 7.07 Laplace stds (or q = 0.5)
    c = dpfair.plan(table, dpfair.TrainConfig(label="y", sensitive=["sex"], gamma=0.1, laplace_b=0.1,
                                              epsilon=1.0, max_steps=40))
    noise_std = np.sqrt(2 * 1 * 2) / 0.1                                    # 1 cell x 2 classes per rate
    # ... read from the cells' sizes plus Laplace noise of 5 % of epsilon (inside the guarantee, issue 23)
    assert c.ledger.epsilon_counts == pytest.approx(0.05)
    noisy = dpfair.api.noisy_cell_counts(c.cells, 2, 0.05, seed=0)
    exact = np.bincount(c.cells, minlength=2)
    assert 0 < np.abs(noisy - exact).max() < 200                            # scale 20: noisy, not exact
    qc = c.ledger.sampling_rate
    assert qc == pytest.approx(min(0.5, 7.07 * noise_std / noisy.min()), rel=1e-3)  # raised to the margin ...
    assert qc > p.ledger.sampling_rate
    assert c.ledger.steps < 40 and 0.98 <= c.ledger.epsilon_spent <= 1.0   # ... so fewer steps fit
    assert c.lr_dual == pytest.approx(0.03 / 0.1 * np.sqrt(1000 / c.ledger.steps))
    assert c.ledger.clip_norm == 2.0 and c.lr == pytest.approx(1.0)  # constrained runs: clip 2 (stop 42)
    other = dpfair.plan(table, dpfair.TrainConfig(label="y", sensitive=["sex"], gamma=0.1, laplace_b=0.1,
                                                  epsilon=1.0, max_steps=40, count_epsilon=0.01), seed=1)
    noisy = dpfair.api.noisy_cell_counts(other.cells, 2, 0.01, seed=1)   # another seed, another noise
    assert other.ledger.sampling_rate == pytest.approx(min(0.5, 7.07 * noise_std / noisy.min()), rel=1e-3)
    assert dpfair.plan(table, dpfair.TrainConfig(label="y", constraint="none", lr=0.1, batch_size=60,
                                                 max_steps=40, validation=0)).ledger.sampling_rate == pytest.approx(0.1)


def test_noisy_cell_counts_are_laplace_of_the_asked_scale_and_floored_at_zero():
    """The planner's only view of the cells' sizes: count + Laplace(1 / count_epsilon), floored at 0
    (pure count_epsilon-DP: one record moves one count by 1); exact when count_epsilon is 0."""
    cells = np.repeat([0, 1, 2], [500, 40, 0])
    draws = np.stack([dpfair.api.noisy_cell_counts(cells, 3, 0.1, seed=s) for s in range(4000)])
    assert np.mean(np.abs(draws[:, 0] - 500)) == pytest.approx(10.0, rel=0.06)   # E|Laplace(b)| = b = 1 / 0.1
    assert np.median(draws[:, 0]) == pytest.approx(500, abs=1.0)
    assert draws.min() == 0 and np.mean(draws[:, 2] == 0) == pytest.approx(0.5, abs=0.03)  # floored at 0
    assert np.array_equal(dpfair.api.noisy_cell_counts(cells, 3, 0.0), [500, 40, 0])
    with pytest.raises(CortexError, match="--count-epsilon must be above 0 and below --epsilon 1"):
        dpfair.api.count_epsilon(dpfair.TrainConfig(label="y", count_epsilon=1.5), True)
    assert dpfair.api.count_epsilon(dpfair.TrainConfig(label="y", epsilon=2.0), True) == pytest.approx(0.1)
    assert dpfair.api.count_epsilon(dpfair.TrainConfig(label="y", epsilon=2.0), False) == 0.0
    assert dpfair.api.count_epsilon(dpfair.TrainConfig(label="y", non_private=True), True) == 0.0

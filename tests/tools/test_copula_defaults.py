"""issue 32 in process: discrete margins, the budget plan, the validation checkpoint and choice,
adaptive importance sampling (fast, small networks)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy import stats

from cortexkit.tools.copula import marginals as mg
from cortexkit.tools.copula import metrics
from cortexkit.tools.copula.cdc import CDCConfig, default_size, fit_cdc, plan_cdc, round_steps
from cortexkit.tools.copula.closed_form import parse_spec
from cortexkit.tools.copula.model import CopulaModel, FitConfig, fit_model, validation_split


def test_discrete_margins_spread_over_their_step_and_come_back_exactly():
    """The distributional transform: u is exactly U(0, 1) for a discrete column, lies in its
    level's step, maps back to the level by the generalised inverse; new rows get the step's
    middle; the data-space mass sums to one over the levels and is 0 off them."""
    rng = np.random.default_rng(0)
    n = 4000
    levels = np.array([0.0, 1.0, 5.0])
    x = np.column_stack([rng.choice(levels, n, p=[0.6, 0.3, 0.1]), rng.standard_normal(n)])
    marg = mg.fit_marginals(x, "ecdf", [True, False])
    u = mg.training_u(marg, x, "random", rng)
    assert stats.kstest(u[:, 0], "uniform").statistic < 0.03
    f = np.cumsum(np.bincount(np.searchsorted(levels, x[:, 0]), minlength=3)) / n
    lower = np.concatenate([[0], f[:-1]])
    i = np.searchsorted(levels, x[:, 0])
    assert np.all((u[:, 0] >= lower[i]) & (u[:, 0] <= f[i]))
    np.testing.assert_array_equal(marg.quantile(u)[:, 0], x[:, 0])
    np.testing.assert_allclose(marg.cdf(levels[:, None].repeat(2, 1))[:, 0], (lower + f) / 2)
    mass = np.exp(marg.log_density(np.column_stack([levels, np.zeros(3)]))[:, 0])
    assert mass.sum() == pytest.approx(1.0)
    assert np.isneginf(marg.log_density(np.array([[2.5, 0.0]]))[0, 0])
    # the continuous column is the interpolated ECDF as before
    np.testing.assert_allclose(marg.cdf(x)[:, 1], mg.fit_ecdf(x).cdf(x)[:, 1])


def test_uniform_marginals_take_pseudo_observations_as_they_are():
    u = np.random.default_rng(1).random((50, 3))
    marg = mg.fit_marginals(u, "uniform")
    np.testing.assert_array_equal(mg.training_u(marg, u, "random", None), u)
    np.testing.assert_allclose(marg.quantile(u), u)


def test_importance_sampling_stops_at_the_target_standard_error_or_the_cap():
    """A Gaussian copula density (log Z = 0 exactly) under the issue's proposal."""
    truth = parse_spec("gaussian:rho=0.5", 3)
    corr = truth.corr()

    def log_c(z):
        return truth.logpdf(mg.to_cube(z))

    early = metrics.importance_log_z(log_c, corr, 1_000_000, np.random.default_rng(0), chunk=5000,
                                     target_stderr=0.02)
    assert early.draws < 1_000_000 and early.stderr <= 0.02
    assert abs(early.log_z) < 4 * early.stderr
    full = metrics.importance_log_z(log_c, corr, 20000, np.random.default_rng(0), chunk=5000)
    assert full.draws == 20000 and abs(full.log_z) < 4 * full.stderr


def test_validation_split_round_steps_and_the_plan():
    fit, val = validation_split(200, 5, 0.15, np.random.default_rng(0))
    assert len(val) == 30 and len(fit) == 170 and not set(fit) & set(val)
    assert len(validation_split(20, 15, 0.15, np.random.default_rng(0))[1]) == 0   # too few to hold out
    assert [round_steps(s) for s in (57, 934, 12345)] == [57, 930, 12000]
    plan = plan_cdc(100, 3, 1e6, CDCConfig(), given={"hidden": 8, "depth": 1})
    assert (plan.hidden, plan.depth, plan.batch_size) == (8, 1, 100)
    assert plan.steps == 1000        # a huge budget stops at 1000 epochs of 100 rows
    small = plan_cdc(100, 3, 1e-6, CDCConfig(), given={"hidden": 8, "depth": 1})
    assert small.steps == 200        # the floor
    # the size follows the rows on a CPU; a GPU takes the paper's network (its steps from the budget)
    assert [default_size(n, 10)[:2] for n in (500, 2000, 15000)] == [(64, 2), (128, 3), (256, 4)]
    assert default_size(15000, 10, "cuda") == (512, 6, 1024, 5e-5)


def test_a_time_limit_stops_the_loop_and_says_so_and_the_best_checkpoint_is_kept():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((300, 2))
    cfg = CDCConfig(hidden=16, depth=1, batch_size=64, steps=100000, time_limit=0.5)
    cdc = fit_cdc(z[:250], cfg, generator=torch.Generator().manual_seed(0), z_val=z[250:])
    rec = cdc.record
    assert rec.reason == "time-limit" and 0 < rec.steps_done < 100000 and rec.steps_planned == 100000
    assert rec.best_step is not None and 0 < rec.best_step <= rec.steps_done
    done = fit_cdc(z, CDCConfig(hidden=8, depth=1, batch_size=64, steps=30),
                   generator=torch.Generator().manual_seed(0))
    assert done.record.reason == "completed" and done.record.steps_done == 30 and done.record.best_step is None


@pytest.fixture(scope="module")
def gaussian_rows():
    truth = parse_spec("gaussian:rho=0.7", 3)
    return stats.norm.ppf(truth.sample(800, np.random.default_rng(3)))


def _fit(x, copula, warnings, stops, steps=5):
    config = FitConfig(copula=copula, steps_given=True, given={"hidden": 16, "depth": 1, "batch_size": 128},
                       is_draws=20000, cdc=CDCConfig(steps=steps))
    return fit_model(x, ["a", "b", "c"], config, generator=torch.Generator().manual_seed(0),
                     rng=np.random.default_rng(0), warn=warnings.append,
                     stopped=lambda *a, **k: stops.append((a, k)))


def test_auto_keeps_the_best_validation_candidate_with_every_figure_stored(gaussian_rows):
    warnings, stops = [], []
    model = _fit(gaussian_rows, "auto", warnings, stops)
    cands = model.info["candidates"]
    assert set(cands) == {"cdc", "cdc-guided", "gaussian"}
    lls = {k: v["validation_ll"] for k, v in cands.items()}
    assert model.info["chosen"] == max(lls, key=lls.get)
    assert model.copula == ("gaussian" if model.info["chosen"] == "gaussian" else "cdc")
    assert [a[0] for a, _ in stops] == ["fit cdc", "fit cdc-guided"]
    assert all(a[1:4] == (5, 5, "steps") and a[4] == "completed" for a, _ in stops)
    # the Gaussian copula's figure is its closed form on the validation rows
    val = model.info["validation_rows"]
    assert val == 120 and model.info["fit_rows"] == 680
    # the artifact keeps the figures
    tensors, meta = model.to_tensors()
    again = CopulaModel.from_tensors(tensors, lambda k: json.loads(meta[k]) if k in meta else None)
    assert again.info["candidates"] == cands and again.info["chosen"] == model.info["chosen"]


def test_a_cdc_that_loses_to_the_gaussian_copula_on_validation_is_warned_about(gaussian_rows):
    """Five steps of an unguided CDC cannot learn rho = 0.7: it must lose, and say so."""
    warnings, stops = [], []
    model = _fit(gaussian_rows, "cdc", warnings, stops)
    cands = model.info["candidates"]
    assert cands["cdc"]["validation_ll"] < cands["gaussian"]["validation_ll"]
    assert model.copula == "cdc" and any("below the Gaussian copula" in w for w in warnings)

"""Closed-form copulas (the ground truth of every other copula test) and the marginals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from cortexkit.tools.copula import marginals as mg
from cortexkit.tools.copula.closed_form import Copula, Mixture, parse_spec

pv = pytest.importorskip("pyvinecopulib")


@pytest.mark.parametrize("family,params,pvfam", [
    ("clayton", {"theta": 3.0}, "clayton"), ("gumbel", {"theta": 2.0}, "gumbel"),
    ("frank", {"theta": 5.0}, "frank"), ("gaussian", {"rho": 0.6}, "gaussian"),
    ("student", {"rho": 0.6, "nu": 4.0}, "student")])
def test_bivariate_density_matches_vinecopulib(family, params, pvfam):
    cop = Copula(family, 2, **params)
    par = [[params.get("theta", params.get("rho"))]] + ([[params["nu"]]] if "nu" in params else [])
    ref = pv.Bicop(family=getattr(pv.BicopFamily, pvfam), parameters=np.array(par))
    u = np.random.default_rng(0).random((50, 2))
    np.testing.assert_allclose(cop.logpdf(u), np.log(ref.pdf(u)), atol=1e-9)
    if family in ("clayton", "gumbel"):  # survival = rotation by 180 degrees (Frank is radially symmetric)
        rot = pv.Bicop(family=getattr(pv.BicopFamily, pvfam), rotation=180, parameters=np.array(par))
        surv = Copula(family, 2, survival=True, **params)
        np.testing.assert_allclose(surv.logpdf(u), np.log(rot.pdf(u)), atol=1e-9)


@pytest.mark.parametrize("family,theta,tau", [("clayton", 3.0, 0.6), ("gumbel", 2.0, 0.5),
                                              ("frank", 5.0, 0.4567)])
def test_samplers_have_the_right_kendall_tau_and_uniform_margins(family, theta, tau):
    u = Copula(family, 4, theta=theta).sample(6000, np.random.default_rng(1))
    for i, j in [(0, 1), (2, 3)]:
        assert abs(stats.kendalltau(u[:, i], u[:, j])[0] - tau) < 0.03
    for j in range(4):
        assert stats.kstest(u[:, j], "uniform").statistic < 0.025


@pytest.mark.parametrize("family,theta", [("clayton", 2.0), ("gumbel", 1.6), ("frank", 4.0)])
def test_d_dimensional_archimedean_density_integrates_to_one_and_matches_its_sampler(family, theta):
    cop = Copula(family, 4, theta=theta)
    rng = np.random.default_rng(2)
    # importance sampling with the copula itself as proposal would be circular; use a Gaussian
    # mixture-free check: E_U[c(U)] = 1 under U(0,1)^4 (light tails at these parameters)
    assert abs(np.exp(cop.logpdf(rng.random((400_000, 4)))).mean() - 1) < 0.03
    # and the sampler's law has this density: the 1-D marginal of the density-weighted uniform
    # points matches the sampler's first coordinate quantiles
    s = cop.sample(20_000, rng)
    grid = rng.random((400_000, 4))
    w = np.exp(cop.logpdf(grid))
    weighted = np.average(grid[:, 0] * grid[:, 1], weights=w)
    assert abs(weighted - (s[:, 0] * s[:, 1]).mean()) < 0.02


def test_clayton_density_against_the_pairwise_bicop_in_two_dims_and_mixture_weights():
    mix = parse_spec("0.3*clayton:theta=2+0.7*gumbel:theta=3,survival", 2)
    assert isinstance(mix, Mixture) and mix.weights == pytest.approx([0.3, 0.7])
    u = np.random.default_rng(3).random((20, 2))
    direct = np.log(0.3 * np.exp(Copula("clayton", 2, theta=2).logpdf(u))
                    + 0.7 * np.exp(Copula("gumbel", 2, theta=3, survival=True).logpdf(u)))
    np.testing.assert_allclose(mix.logpdf(u), direct, atol=1e-12)


@pytest.mark.parametrize("spec", ["clayton:theta=-1", "gumbel:theta=0.5", "nope:theta=1",
                                  "student:rho=0.6,nu=-1", "gaussian:rho=1.5", "clayton:beta=2"])
def test_bad_specs_are_refused(spec):
    with pytest.raises(ValueError):
        parse_spec(spec, 3)


def test_pseudo_observations_ranks_ties_and_interpolated_ecdf():
    x = np.array([[3.0, 1.0], [1.0, 1.0], [2.0, 5.0], [5.0, 1.0]])
    u = mg.pseudo_observations(x, "average")
    np.testing.assert_allclose(u[:, 0], [3, 1, 2, 4] / np.float64(5))
    np.testing.assert_allclose(u[:, 1], [2, 2, 4, 2] / np.float64(5))
    a = mg.pseudo_observations(x, "random", np.random.default_rng(0))
    assert sorted(a[:, 1]) == pytest.approx([0.2, 0.4, 0.6, 0.8])  # ties broken, ranks a permutation
    np.testing.assert_array_equal(a, mg.pseudo_observations(x, "random", np.random.default_rng(0)))
    marg = mg.fit_ecdf(x)
    np.testing.assert_allclose(marg.cdf(x), u)                     # training rows: their mean ranks
    new = marg.cdf(np.array([[2.5, 3.0], [-10.0, 99.0]]))
    np.testing.assert_allclose(new, [[0.5, 0.6], [0.2, 0.8]])         # linear between, clipped
    np.testing.assert_allclose(marg.quantile(marg.cdf(x[:, :])) [:, 0], x[:, 0])


def test_kde_marginal_is_a_smooth_cdf_close_to_the_truth():
    x = np.random.default_rng(4).standard_normal((3000, 1))
    marg = mg.fit_kde(x)
    grid = np.linspace(-2, 2, 41)[:, None]
    assert np.abs(marg.cdf(grid)[:, 0] - stats.norm.cdf(grid[:, 0])).max() < 0.03
    dens = np.exp(marg.log_density(grid))[:, 0]
    assert np.abs(dens - stats.norm.pdf(grid[:, 0])).max() < 0.05

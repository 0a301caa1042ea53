"""log Z by importance sampling with the issue's proposal and with one built from samples, on
closed-form copulas whose exact density integrates to one (true log Z = 0)."""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from cortexkit.tools.copula import metrics
from cortexkit.tools.copula.closed_form import Copula, Mixture


def _block(d: int, r: float) -> list:
    R = np.eye(d)
    for i in range(0, d, 2):
        R[i, i + 1] = R[i + 1, i] = r
    return R.tolist()


def _case(truth, n_fit: int, seed: int):
    rng = np.random.default_rng(seed)
    z = special.ndtri(truth.sample(n_fit, rng))
    corr = np.corrcoef(z, rowvar=False)
    return rng, z, corr, lambda q: truth.logpdf(special.ndtr(q))


def test_mixture_proposal_density_and_sampler_agree_with_scipy():
    rng = np.random.default_rng(0)
    covs = np.stack([np.array([[1.0, 0.7], [0.7, 1.0]]), np.diag([0.5, 2.0])])
    q = metrics.Proposal("t", [0.3, 0.7], np.array([[1.0, -1.0], [0.0, 0.5]]), covs)
    z = rng.normal(size=(50, 2))
    ref = np.log(0.3 * stats.multivariate_normal([1, -1], covs[0]).pdf(z)
                 + 0.7 * stats.multivariate_normal([0, 0.5], covs[1]).pdf(z))
    np.testing.assert_allclose(q.log_pdf(z), ref, rtol=1e-10)
    draws = q.sample(200_000, rng)
    np.testing.assert_allclose(draws.mean(0), 0.3 * np.array([1, -1]) + 0.7 * np.array([0, 0.5]), atol=0.01)


def test_samples_proposal_fixes_the_issue_proposal_on_a_two_mode_copula():
    """An 8-D mixture of two Gaussian copulas (pairs at +0.95 and -0.95): the training correlation is
    ~0, so the issue's 0.5 N(0, R) + 0.5 N(0, I) misses both thin modes (ESS < 1 %, flagged); the
    mixture fitted to samples recovers log Z = 0 within its standard error with ESS > 30 %."""
    d = 8
    truth = Mixture([Copula("gaussian", d, rho=_block(d, 0.95)), Copula("gaussian", d, rho=_block(d, -0.95))],
                    [0.5, 0.5])
    rng, z, corr, log_c = _case(truth, 5000, 0)
    issue = metrics.importance_log_z(log_c, corr, 100_000, rng)
    samples = metrics.importance_log_z(log_c, corr, 100_000, rng,
                                       proposal=metrics.sample_proposal(z, corr, rng))
    assert issue.proposal == "issue" and not issue.trusted and issue.ess_fraction < 0.01
    assert samples.proposal == "samples" and samples.trusted and samples.ess_fraction > 0.3
    assert samples.ess_fraction > 20 * issue.ess_fraction
    assert abs(samples.log_z) < 3 * samples.stderr + 1e-3 and samples.stderr < 0.005
    assert abs(issue.log_z) < 4 * issue.stderr + 0.01


def test_samples_proposal_on_student_t_8d_is_unbiased():
    """The issue's 8-D Student-t (rho 0.6, nu 4): both proposals give log Z = 0 within their SE."""
    truth = Copula("student", 8, rho=0.6, nu=4)
    rng, z, corr, log_c = _case(truth, 5000, 1)
    for q in (None, metrics.sample_proposal(z, corr, rng)):
        lz = metrics.importance_log_z(log_c, corr, 40_000, rng, proposal=q)
        assert abs(lz.log_z) < 4 * lz.stderr + 0.005 and lz.trusted, lz

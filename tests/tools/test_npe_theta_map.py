"""The z-score map of box parameters (issue 36, item 1): samples stay in the box, log q is a
density on the box (the leaked mass renormalised), -inf outside, and deterministic."""
import math

import pytest
import torch

from cortexkit.tools.npe.estimator import FlowConfig, PosteriorEstimator
from cortexkit.tools.npe.io import posterior_from, posterior_metadata, posterior_tensors
from cortexkit.tools.npe.estimator import EnsemblePosterior
from cortexkit.tools.npe.priors import Prior

BOX = Prior.from_spec([{"name": "a", "dist": "uniform", "low": -1.0, "high": 2.0}])
SMALL = dict(transforms=1, bins=4, hidden=8, depth=1)


def _leaky(prior=BOX, shift=1.5):
    """An untrained flow whose first-layer bias is moved so a good part of its mass lies outside."""
    torch.manual_seed(0)
    est = PosteriorEstimator(prior, 1, FlowConfig(theta_map="zscore", **SMALL))
    with torch.no_grad():
        for p in est.flow.parameters():
            p.mul_(0.1)
    est.eval()
    return est


def test_zscore_map_is_the_prior_affine_map_and_its_inverse():
    theta = torch.tensor([[-1.0], [0.5], [2.0]])
    u, logdet = BOX.to_unconstrained(theta, "zscore")
    sd = 3 / math.sqrt(12)
    assert torch.allclose(u, (theta - 0.5) / sd) and torch.allclose(logdet, torch.full((3,), -math.log(sd)))
    assert torch.allclose(BOX.from_unconstrained(u * 3, "zscore"), 0.5 + 3 * (theta - 0.5))  # not clamped


def test_log_q_integrates_to_one_on_the_box_and_is_minus_inf_outside():
    est = _leaky()
    x = torch.zeros(1)
    grid = torch.linspace(-1, 2, 6001)[:, None]
    with torch.no_grad():
        lp = est.log_prob(grid, x)
        flow_mass = torch.trapezoid(est.flow_log_prob(grid, x).exp(), grid[:, 0])
        mass = torch.trapezoid(lp.exp(), grid[:, 0])
    assert flow_mass < 0.95  # the flow leaks: without renormalisation the box holds less than 1
    assert mass == pytest.approx(1.0, abs=0.03)  # Monte Carlo estimate of Z from 2000 draws
    assert torch.isinf(est.log_prob(torch.tensor([[2.5], [-1.2]]), x)).all()
    # a deterministic function of (theta, x, weights): same numbers on every call
    assert torch.equal(lp, est.log_prob(grid, x))


def test_samples_are_drawn_by_rejection_inside_the_box():
    est = _leaky()
    torch.manual_seed(1)
    s = est.sample(5000, torch.zeros(1))
    assert s.shape == (5000, 1) and BOX.in_support(s).all()
    # the kept draws follow the renormalised density: mean under it on a grid matches
    grid = torch.linspace(-1, 2, 6001)[:, None]
    with torch.no_grad():
        w = est.log_prob(grid, torch.zeros(1)).exp()
    mean = torch.trapezoid(w * grid[:, 0], grid[:, 0]) / torch.trapezoid(w, grid[:, 0])
    assert s.mean() == pytest.approx(float(mean), abs=0.05)


def test_logit_files_from_before_the_option_still_load_as_logit():
    torch.manual_seed(0)
    est = PosteriorEstimator(BOX, 1, FlowConfig(theta_map="logit", **SMALL))
    post = EnsemblePosterior([est])
    meta = posterior_metadata(post)
    meta["npe.flow"] = {k: v for k, v in meta["npe.flow"].items() if k != "theta_map"}  # an old file
    back = posterior_from(posterior_tensors(post), meta)
    assert back.members[0].cfg.theta_map == "logit" and not back.members[0].leaks
    theta = torch.tensor([[0.0], [1.9]])
    with torch.no_grad():
        assert torch.equal(back.log_prob(theta, torch.zeros(1)), post.log_prob(theta, torch.zeros(1)))


def test_normal_priors_are_unaffected_by_the_box_map():
    prior = Prior.from_spec([{"name": "w", "dist": "normal", "loc": 1.0, "scale": 2.0}])
    torch.manual_seed(0)
    a = PosteriorEstimator(prior, 1, FlowConfig(theta_map="zscore", **SMALL))
    torch.manual_seed(0)
    b = PosteriorEstimator(prior, 1, FlowConfig(theta_map="logit", **SMALL))
    theta = torch.tensor([[0.0], [5.0]])
    with torch.no_grad():
        assert not a.leaks and torch.equal(a.log_prob(theta, torch.zeros(1)), b.log_prob(theta, torch.zeros(1)))

"""The z-score map of log-normal parameters (stop 42, sbi's handling): theta itself z-scored with the
prior's mean and sd, samples kept above 0 by rejection, log q renormalised for the mass below 0;
--lognormal-map log keeps the earlier map, and files written before the option load with it."""
import math

import pytest
import torch

from cortexkit.tools.npe.estimator import EnsemblePosterior, FlowConfig, PosteriorEstimator
from cortexkit.tools.npe.io import posterior_from, posterior_metadata, posterior_tensors
from cortexkit.tools.npe.priors import Prior

LOGN = Prior.from_spec([{"name": "k", "dist": "lognormal", "loc": -1.0, "scale": 0.5},
                        {"name": "w", "dist": "normal", "loc": 1.0, "scale": 2.0}])
SMALL = dict(transforms=1, bins=4, hidden=8, depth=1)


def test_zscore_map_uses_the_lognormal_mean_and_sd_and_inverts():
    theta = torch.tensor([[0.2, 0.0], [0.5, 3.0], [1.5, -1.0]], dtype=torch.float64)
    u, logdet = LOGN.to_unconstrained(theta, "zscore", "zscore")
    m = math.exp(-1.0 + 0.125)
    s = m * math.sqrt(math.expm1(0.25))
    assert torch.allclose(u[:, 0], (theta[:, 0] - m) / s) and torch.allclose(u[:, 1], (theta[:, 1] - 1) / 2)
    assert torch.allclose(logdet, torch.full((3,), -math.log(s) - math.log(2.0), dtype=torch.float64))
    assert torch.allclose(LOGN.from_unconstrained(u, "zscore", "zscore"), theta)
    # an affine map: u far below reaches theta <= 0, which the caller rejects
    assert LOGN.from_unconstrained(torch.tensor([[-10.0, 0.0]]), "zscore", "zscore")[0, 0] < 0
    # the log map is unchanged by the new argument's default
    u_log, _ = LOGN.to_unconstrained(theta, "zscore")
    assert torch.allclose(u_log[:, 0], (torch.log(theta[:, 0]) + 1) / 0.5)


def _leaky(lognormal_map="zscore"):
    prior = Prior.from_spec([{"name": "k", "dist": "lognormal", "loc": 0.0, "scale": 1.0}])
    torch.manual_seed(0)
    est = PosteriorEstimator(prior, 1, FlowConfig(lognormal_map=lognormal_map, **SMALL))
    with torch.no_grad():
        for p in est.flow.parameters():
            p.mul_(0.1)
    return est.eval(), prior


def test_leaked_mass_below_zero_is_rejected_and_renormalised():
    est, prior = _leaky()
    assert est.leaks
    x = torch.zeros(1)
    torch.manual_seed(1)
    s = est.sample(4000, x)
    assert (s > 0).all()
    grid = torch.linspace(1e-4, 40, 40001)[:, None]
    with torch.no_grad():
        flow_mass = torch.trapezoid(est.flow_log_prob(grid, x).exp(), grid[:, 0])
        mass = torch.trapezoid(est.log_prob(grid, x).exp(), grid[:, 0])
        assert torch.isinf(est.log_prob(torch.tensor([[-0.5]]), x)).all()
    assert flow_mass < 0.95  # the untrained affine flow puts mass below 0
    assert mass == pytest.approx(1.0, abs=0.03)


def test_log_map_option_and_files_from_before_the_option_keep_the_log_map():
    est, prior = _leaky("log")
    assert not est.leaks
    post = EnsemblePosterior([est])
    meta = posterior_metadata(post)
    assert meta["npe.flow"]["lognormal_map"] == "log"
    meta["npe.flow"] = {k: v for k, v in meta["npe.flow"].items() if k != "lognormal_map"}  # an old file
    back = posterior_from(posterior_tensors(post), meta)
    assert back.members[0].cfg.lognormal_map == "log" and not back.members[0].leaks
    theta = torch.tensor([[0.3], [2.0]])
    with torch.no_grad():
        assert torch.equal(back.log_prob(theta, torch.zeros(1)), post.log_prob(theta, torch.zeros(1)))


def test_box_and_normal_priors_are_unaffected_by_the_lognormal_map():
    prior = Prior.from_spec([{"name": "a", "dist": "uniform", "low": -1, "high": 2},
                             {"name": "w", "dist": "normal", "loc": 1.0, "scale": 2.0}])
    torch.manual_seed(0)
    a = PosteriorEstimator(prior, 1, FlowConfig(lognormal_map="zscore", **SMALL))
    torch.manual_seed(0)
    b = PosteriorEstimator(prior, 1, FlowConfig(lognormal_map="log", **SMALL))
    theta = torch.tensor([[0.0, 0.0], [1.5, 5.0]])
    with torch.no_grad():
        assert torch.equal(a.log_prob(theta, torch.zeros(1)), b.log_prob(theta, torch.zeros(1)))


def test_unknown_lognormal_map_is_refused():
    with pytest.raises(ValueError, match="log-normal map"):
        PosteriorEstimator(LOGN, 1, FlowConfig(lognormal_map="logit"))


def test_auto_is_zscore_for_npe_and_log_for_the_pretrained_and_sequential_methods():
    from cortexkit.tools.npe.methods import fit_mf_npe
    from cortexkit.tools.npe.training import TrainConfig

    assert FlowConfig().lognormal_map == "auto"
    assert FlowConfig().resolve("npe").lognormal_map == "zscore"
    assert {FlowConfig().resolve(m).lognormal_map for m in ("mf-npe", "tsnpe", "mf-tsnpe", "a-mf-tsnpe")} == {"log"}
    assert FlowConfig(lognormal_map="zscore").resolve("mf-npe").lognormal_map == "zscore"  # a choice stays
    bare = PosteriorEstimator(LOGN, 1, FlowConfig(**SMALL))  # a bare estimator is plain NPE's
    assert bare.cfg.lognormal_map == "zscore" and bare.leaks
    g = torch.Generator().manual_seed(0)
    theta = LOGN.sample(60, g)
    x = theta[:, :1] + 0.1 * torch.randn(60, 1, generator=g)
    model, _, pre = fit_mf_npe(LOGN, theta, x, theta, x, FlowConfig(**SMALL), base_cfg=TrainConfig(max_epochs=2))
    assert pre.cfg.lognormal_map == "log" and model.cfg.lognormal_map == "log" and not model.leaks

"""simulate-npe: training loop, MF-NPE transfer, truncation, acquisition, sequential rounds."""
import math

import pytest
import torch

from cortexkit.tools.npe import methods as M
from cortexkit.tools.npe.estimator import EnsemblePosterior, FlowConfig, PosteriorEstimator
from cortexkit.tools.npe.priors import Prior
from cortexkit.tools.npe.tasks import get_task
from cortexkit.tools.npe import training
from cortexkit.tools.npe.training import TrainConfig, split_indices, train

TINY = FlowConfig(transforms=1, bins=4, hidden=16, depth=2)
GAUSS = Prior.from_spec([{"name": "t", "dist": "normal", "loc": 0.0, "scale": 1.0}])


def gaussian_data(n, seed=0, noise=0.5):
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(n, 1, generator=g)
    return theta, theta + noise * torch.randn(n, 1, generator=g)


def test_split_is_sbi_like():
    tr, va = split_indices(50, 0.1, torch.Generator().manual_seed(0))
    assert (len(tr), len(va)) == (45, 5)
    assert sorted(torch.cat([tr, va]).tolist()) == list(range(50))


def test_early_stopping_and_best_weights():
    torch.manual_seed(0)
    theta, x = gaussian_data(300)
    model = PosteriorEstimator(GAUSS, 1, TINY)
    model.standardizer.fit(x)
    cfg = TrainConfig(lr=5e-3, patience=4, max_epochs=400)
    hist = train(model, theta, x, cfg, torch.Generator().manual_seed(1))
    # stops exactly `patience` epochs after the best validation epoch, unless max_epochs hit first
    assert hist.epochs == hist.best_epoch + 1 + cfg.patience
    assert min(hist.val_loss) == hist.best_val_loss == hist.val_loss[hist.best_epoch]
    # the returned model carries the best-validation weights
    _, va = split_indices(300, 0.1, torch.Generator().manual_seed(1))
    with torch.no_grad():
        val = -model.log_prob(theta[va], x[va]).mean().item()
    assert val == pytest.approx(hist.best_val_loss, abs=1e-5)


def test_a_shorter_patience_runs_the_first_epochs_of_a_longer_one():
    """benchmarks/simulate_npe/stop_rule_bench.py (stop 44) reads shorter patiences off one fit: the
    trajectory must not depend on the patience, only where it stops and which best weights it keeps."""
    theta, x = gaussian_data(400, seed=6)
    fits = {}
    for p in (2, 40):
        torch.manual_seed(0)
        model = PosteriorEstimator(GAUSS, 1, TINY)
        model.standardizer.fit(x)
        fits[p] = (model, train(model, theta, x, TrainConfig(lr=2e-2, patience=p, max_epochs=300),
                                torch.Generator().manual_seed(1)))
    (short, hs), (_, hl) = fits[2], fits[40]
    assert hs.stop_reason == "patience" and hs.epochs < hl.epochs
    assert hs.val_loss == hl.val_loss[:hs.epochs]  # bit for bit
    assert hs.best_val_loss == min(hl.val_loss[:hs.epochs]) and hs.best_epoch == hs.epochs - 3
    with torch.no_grad():
        val = -short.log_prob(theta[hs.split[1]], x[hs.split[1]]).mean().item()
    assert val == hs.best_val_loss


def test_npe_recovers_a_conjugate_gaussian_posterior():
    # theta ~ N(0,1), x ~ N(theta, 0.5^2): posterior N(0.8 x, 0.2)
    theta, x = gaussian_data(3000, seed=2)
    model, _ = M.fit_npe(GAUSS, theta, x, FlowConfig(transforms=2, bins=8, hidden=32, depth=2),
                         TrainConfig(lr=5e-3, patience=5, max_epochs=60), seed=3)
    for x_o in (-1.0, 0.0, 1.5):
        s = model.sample(20_000, torch.tensor([x_o]))
        assert s.mean().item() == pytest.approx(0.8 * x_o, abs=0.06)
        assert s.std().item() == pytest.approx(math.sqrt(0.2), abs=0.05)


def test_mf_npe_transfers_every_weight_and_uses_the_paper_learning_rates(monkeypatch):
    lrs = []
    real_adam = training.Adam

    def spy(params, lr):
        lrs.append(lr)
        return real_adam(params, lr=lr)

    monkeypatch.setattr(training, "Adam", spy)
    th_lf, x_lf = gaussian_data(200, 4)
    th_hf, x_hf = gaussian_data(40, 5, noise=0.3)
    x_hf = x_hf + 3.0  # an HF x-space with another offset: the standardiser must be re-fitted
    cfg = TrainConfig(max_epochs=3)
    model, hists, pre = M.fit_mf_npe(GAUSS, th_lf, x_lf, th_hf, x_hf, TINY, base_cfg=cfg, seed=0)
    assert lrs == [1e-4, 5e-4]
    assert set(hists) == {"pretrain", "finetune"}
    assert torch.allclose(model.standardizer.mean, x_hf.mean(0))
    assert torch.allclose(pre.standardizer.mean, x_lf.mean(0))
    # nothing frozen: every parameter tensor moved during fine-tuning
    moved = [not torch.equal(a, b) for a, b in zip(model.parameters(), pre.parameters())]
    assert all(moved)
    # keeping the LF statistics (MF-TSNPE's behaviour) leaves them untouched
    kept, _ = M.fine_tune(pre, th_hf, x_hf, cfg, refit_x_stats=False)
    assert torch.equal(kept.standardizer.mean, pre.standardizer.mean)


def test_adam_steps_like_torch_optim_adam_to_the_bit():
    # training.Adam stands in for torch.optim.Adam (whose first construction imports torch._dynamo):
    # seeded fits must keep their weights, so every step has to match it exactly
    torch.manual_seed(0)
    ours = [torch.randn(7, 5, requires_grad=True), torch.randn(3, requires_grad=True)]
    theirs = [p.detach().clone().requires_grad_(True) for p in ours]
    opt_ours, opt_theirs = training.Adam(ours, lr=5e-4), torch.optim.Adam(theirs, lr=5e-4)
    for step in range(25):
        grads = [torch.randn_like(p) * 10 ** (step % 4 - 2) for p in ours]
        for params, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            for p, g in zip(params, grads):
                p.grad = g.clone()
            opt.step()
        assert all(torch.equal(a, b) for a, b in zip(ours, theirs)), step


def test_mf_npe_rejects_different_x_spaces():
    th, x = gaussian_data(20)
    with pytest.raises(ValueError, match="share the x-space"):
        M.fit_mf_npe(GAUSS, th, torch.cat([x, x], 1), th, x, TINY)


class StdNormal2D:
    """A known 'posterior': N(0, I_2), ignoring x."""

    def sample(self, n, x_o, generator=None):
        return torch.randn(n, 2)

    def log_prob(self, theta, x_o):
        return -0.5 * (theta**2).sum(-1) - math.log(2 * math.pi)


def test_density_threshold_keeps_one_minus_quantile_of_the_mass():
    torch.manual_seed(0)
    q = 0.1
    tau = M.density_threshold(StdNormal2D(), None, quantile=q, n_samples=200_000)
    # HPD region of N(0, I_2) holding 90% mass: radius^2 = chi2_2 quantile = -2 log(0.1)
    r2 = -2 * math.log(q)
    assert tau == pytest.approx(-0.5 * r2 - math.log(2 * math.pi), abs=0.02)


def test_truncated_prior_samples_lie_in_the_region():
    prior = Prior.from_spec([{"name": "a", "dist": "uniform", "low": -4, "high": 4}] * 1 +
                            [{"name": "b", "dist": "uniform", "low": -4, "high": 4}])
    post = StdNormal2D()
    tau = post.log_prob(torch.tensor([[1.0, 0.0]]), None).item()  # the unit disc
    th, rate = M.sample_truncated_prior(prior, post, None, tau, 5000, torch.Generator().manual_seed(0))
    assert th.shape == (5000, 2)
    assert (post.log_prob(th, None) > tau).all()
    assert rate == pytest.approx(math.pi / 64, rel=0.1)  # disc area / box area


def test_acquisition_round_sizes_and_candidates():
    assert M.round_sizes(100, 5, 0.2) == [(20, 0)] + [(16, 4)] * 4
    assert M.round_sizes(52, 5, 0.0) == [(10, 0)] * 5
    assert [M.acquisition_candidates(n) for n in (50, 1000, 1001, 10_000, 10_001)] == [250, 250, 2500, 2500, 25000]
    torch.manual_seed(0)
    prior = get_task("ou").prior
    est = PosteriorEstimator(prior, 3, TINY)
    same = EnsemblePosterior([est, est, est])
    th = prior.sample(50)
    assert torch.equal(M.acquisition_scores(same, th, torch.zeros(3)), torch.zeros(50))
    other = EnsemblePosterior([est, PosteriorEstimator(prior, 3, TINY)])
    with torch.no_grad():
        lp = other.member_log_probs(th, torch.zeros(3))
        assert torch.allclose(M.acquisition_scores(other, th, torch.zeros(3)), (lp[0] - lp[1]) ** 2 / 2, atol=1e-5)


def test_a_mf_tsnpe_rounds():
    task = get_task("ou")
    g = torch.Generator().manual_seed(0)
    th_lf = task.prior.sample(200, g)
    pre, _ = M.fit_npe(task.prior, th_lf, task.simulator("lf")(th_lf, g), TINY, TrainConfig(max_epochs=3))
    x_o = task.simulator("hf")(task.prior.sample(1, g), g)[0]
    calls = []

    def sim(theta):
        calls.append(theta.shape[0])
        return task.simulator("hf")(theta, g)

    post, recs = M.run_sequential(task.prior, sim, x_o, 50, pretrained=pre, flow_cfg=TINY, ensemble_size=3,
                                  active_fraction=0.2, rounds=5, truncation_samples=2000, candidates=40,
                                  train_cfg=TrainConfig(max_epochs=2), seed=1)
    assert calls == [10] * 5
    assert [int(r.acquired.sum()) for r in recs] == [0, 2, 2, 2, 2]
    assert len(post.members) == 3 and all(len(r.train) == 3 for r in recs)
    # MF-TSNPE keeps the pretrained flow's LF x-statistics
    assert all(torch.equal(m.standardizer.mean, pre.standardizer.mean) for m in post.members)
    assert all(task.prior.in_support(r.theta).all() for r in recs)
    assert all(math.isfinite(r.tau) for r in recs[:-1]) and math.isnan(recs[-1].tau)
    # members start equal (same pretrained copy) and drift apart only through their data order
    assert not torch.equal(next(post.members[0].parameters()), next(post.members[1].parameters()))
    # the proposal of round r+1 is the truncated region of round r's posterior
    for r in range(1, 5):
        prop = recs[r].theta[~recs[r].acquired]
        assert prop.shape[0] == 8

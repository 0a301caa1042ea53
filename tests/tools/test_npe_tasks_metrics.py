"""simulate-npe: built-in simulators against closed forms, metrics against known values."""
import math

import numpy as np
import pytest
import torch

from cortexkit.tools.npe import metrics as Q
from cortexkit.tools.npe import tasks as T


def test_ou_hf_matches_the_euler_maruyama_moments():
    n = 40_000
    theta = torch.tensor([[1.5, 0.4]]).expand(n, 2)
    x = T.ou_hf(theta, torch.Generator().manual_seed(0)).double()
    a = 1 - T.OU_GAMMA * T.OU_DT
    for j, k in enumerate(T.OU_KEEP):
        mean = 1.5 + 3.0 * a**k
        var = a ** (2 * k) + 0.4**2 * T.OU_DT * (1 - a ** (2 * k)) / (1 - a * a)
        assert x[:, j].mean().item() == pytest.approx(mean, abs=4 * math.sqrt(var / n))
        assert x[:, j].var().item() == pytest.approx(var, rel=0.04)


def test_ou_lf_is_iid_normal():
    x = T.ou_lf(torch.tensor([[2.0, 0.3]]).expand(50_000, 2), torch.Generator().manual_seed(1)).double()
    assert x.shape == (50_000, 10)
    assert x.mean().item() == pytest.approx(2.0, abs=0.003)
    assert x.std().item() == pytest.approx(0.3, abs=0.002)
    assert abs(np.corrcoef(x[:, 0].numpy(), x[:, 1].numpy())[0, 1]) < 0.02


def test_ou_exact_likelihood_integrates_like_a_density():
    # 1-d check of one transition factor: exact OU log-likelihood of x given theta is a normalised density in x[1]
    theta = torch.tensor([[1.0, 0.3]])
    x = torch.zeros(10)
    x[0] = 4.0
    grid = torch.linspace(-3, 8, 4001)
    vals = []
    for v in grid:
        xx = x[:2].clone()
        xx[1] = v
        vals.append(T.ou_log_likelihood(theta, xx).exp().item())
    p0 = math.exp(-0.5 * 0 ** 2) / math.sqrt(2 * math.pi)  # x0 = mu + 3 exactly
    assert np.trapezoid(vals, grid.numpy()) / p0 == pytest.approx(1.0, abs=1e-3)


def test_sir_rk4_matches_scipy():
    from scipy.integrate import solve_ivp

    theta = torch.tensor([[0.4, 0.125], [1.2, 0.1], [0.2, 0.15]])
    got = T.sir_infected(theta, T.SIR_HF_TIMES).numpy()
    for i, (b, g) in enumerate(theta.double().numpy()):
        sol = solve_ivp(lambda t, y: [-b * y[0] * y[1] / 1e6, b * y[0] * y[1] / 1e6 - g * y[1]], (0, 160),
                        [1e6 - 1, 1], t_eval=T.SIR_HF_TIMES, rtol=1e-10, atol=1e-8, method="DOP853")
        assert np.allclose(got[i], sol.y[1], rtol=1e-4, atol=1e-2)


def test_sir_outputs_binomial_counts_and_lf_grids():
    theta = torch.tensor([[0.6, 0.1]]).expand(20_000, 2)
    hf = T.sir_hf(theta, torch.Generator().manual_seed(0))
    lf = T.sir_lf(theta, torch.Generator().manual_seed(0))
    assert hf.shape == lf.shape == (20_000, 10)
    assert torch.equal(hf, hf.round()) and (hf >= 0).all() and (hf <= 1000).all()
    # the LF days follow the coarse solver's rule: 10 evenly spaced (rounded) indices of its save grid
    for saveat in (1.0, 4.0, 8.0):
        steps = int(160 / saveat) + 1
        idx = torch.linspace(0, steps - 1, 10).round().long()
        assert T.sir_lf_times(saveat) == [float(i) * saveat for i in idx]
    assert T.sir_lf_times(32) == [0.0, 32.0, 64.0, 96.0, 128.0] + [160.0] * 5
    # counts are Binomial(1000, I(t)/N) at those days
    p = T.sir_infected(theta[:1], T.SIR_LF_TIMES)[0] / 1e6
    assert lf.double().mean(0).numpy() == pytest.approx((1000 * p).numpy(), abs=0.05 + 4 * math.sqrt(1000 * 0.25 / 20_000))
    # repeated days of the coarsest grid are independent draws of the same binomial
    coarse = T.sir_lf(theta, torch.Generator().manual_seed(1), saveat=32)
    assert not torch.equal(coarse[:, 5], coarse[:, 9])
    assert float(coarse[:, 5].mean()) == pytest.approx(float(coarse[:, 9].mean()), abs=0.5)


def test_slcp_covariance_and_fixed_mean_lf():
    theta = torch.tensor([[0.5, -1.0, 1.2, -0.8, 0.7]]).expand(100_000, 5)
    x = T.slcp_hf(theta, torch.Generator().manual_seed(0)).double().reshape(-1, 2)
    s1, s2, rho = 1.2**2, 0.8**2, math.tanh(0.7)
    cov = np.cov(x.numpy().T)
    assert x.mean(0).numpy() == pytest.approx([0.5, -1.0], abs=0.02)
    assert cov == pytest.approx(np.array([[s1**2, rho * s1 * s2], [rho * s1 * s2, s2**2]]), rel=0.03)
    xl = T.slcp_lf(theta, torch.Generator().manual_seed(0)).double().reshape(-1, 2)
    assert xl.mean(0).numpy() == pytest.approx([0.0, 0.0], abs=0.02)


def test_two_moons_and_gaussian_linear():
    x = T.two_moons(torch.zeros(20_000, 2), torch.Generator().manual_seed(0)).double()
    r = (x - torch.tensor([0.25, 0.0], dtype=torch.float64)).norm(dim=1)
    assert r.mean().item() == pytest.approx(0.1, abs=0.002)
    assert (x[:, 0] >= 0.25 - 0.2).all()
    theta = torch.full((50_000, 10), 0.3)
    xg = T.gaussian_linear(theta, torch.Generator().manual_seed(0)).double()
    assert (xg - 0.3).var().item() == pytest.approx(0.1, rel=0.02)


def test_two_moons_lf_is_the_crescent_with_the_biased_radius_and_offset():
    """Given theta, x + (|z0|, -z1) is the crescent point p = (r cos a + c, r sin a), a ~ U(-pi/2, pi/2):
    |p - (c, 0)| = r, so its mean and sd are the radius's (LF 0.12, 0.02; HF 0.1, 0.01), and
    E[p] = (E[r] 2 / pi + c, 0)."""
    n = 200_000
    theta = torch.tensor([[0.4, -0.2]]).expand(n, 2)
    z0 = (0.4 - 0.2) * math.sqrt(0.5)
    z1 = (-0.4 - 0.2) * math.sqrt(0.5)
    shift = torch.tensor([-abs(z0), z1], dtype=torch.float64)
    for sim, radius, sd, offset in ((T.two_moons_lf, 0.12, 0.02, 0.3), (T.two_moons, 0.1, 0.01, 0.25)):
        p = sim(theta, torch.Generator().manual_seed(3)).double() - shift
        r = (p - torch.tensor([offset, 0.0], dtype=torch.float64)).norm(dim=1)
        assert r.mean().item() == pytest.approx(radius, abs=4 * sd / math.sqrt(n) + 1e-6)
        assert r.std().item() == pytest.approx(sd, rel=0.02)
        assert p.mean(0).numpy() == pytest.approx([radius * 2 / math.pi + offset, 0.0], abs=5 * radius / math.sqrt(n))
    hf = T.two_moons(theta[:2000], torch.Generator().manual_seed(3))
    assert not torch.equal(hf, T.two_moons_lf(theta[:2000], torch.Generator().manual_seed(3)))


def test_gaussian_linear_lf_has_gain_0_9_and_variance_0_2():
    n = 100_000
    theta = torch.linspace(-0.5, 0.5, 10).expand(n, 10)
    x = T.gaussian_linear_lf(theta, torch.Generator().manual_seed(4)).double()
    assert x.mean(0).numpy() == pytest.approx((0.9 * theta[0]).double().numpy(), abs=4 * math.sqrt(0.2 / n))
    assert x.var(0).numpy() == pytest.approx([0.2] * 10, rel=0.02)
    # the residuals are independent across coordinates
    cov = torch.cov((x - 0.9 * theta.double()).T)
    assert (cov - torch.diag(torch.diag(cov))).abs().max().item() < 0.01


def test_tasks_prior_shapes():
    for name, task in T.TASKS.items():
        th = task.prior.sample(7, torch.Generator().manual_seed(0))
        for fid in task.simulators:
            assert task.simulator(fid)(th, torch.Generator().manual_seed(0)).shape == (7, task.x_dim), name
    with pytest.raises(ValueError, match="unknown task"):
        T.get_task("nope")
    with pytest.raises(ValueError, match="no 'mf' simulator"):
        T.get_task("two_moons").simulator("mf")
    assert all(set(task.simulators) == {"hf", "lf"} for task in T.TASKS.values())


def test_c2st_known_values():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1000, 2, generator=g), torch.randn(1000, 2, generator=g)
    assert Q.c2st(a, b, "rf") == pytest.approx(0.5, abs=0.05)
    assert Q.c2st(a, b + 10, "rf") == 1.0
    assert Q.c2st(a[:300], b[:300], "mlp") == pytest.approx(0.5, abs=0.08)
    assert Q.c2st(a[:300], b[:300] + 10, "mlp") == 1.0


def test_c2st_agrees_with_sbi_when_installed():
    sbi_metrics = pytest.importorskip("sbi.utils.metrics")
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(500, 2, generator=g), 0.3 + torch.randn(500, 2, generator=g)
    assert Q.c2st(a, b, "rf") == pytest.approx(float(sbi_metrics.c2st(a, b)), abs=1e-12)


def test_mmd_closed_forms():
    g = torch.Generator().manual_seed(2)
    a = torch.randn(300, 2, generator=g)
    assert Q.mmd2(a, a, bandwidth=1.0) == pytest.approx(0.0, abs=1e-12)
    b = a + 1.0
    # brute force biased MMD^2
    k = lambda u, v: torch.exp(-torch.cdist(u.double(), v.double()) ** 2 / 2).mean().item()
    assert Q.mmd2(a, b, bandwidth=1.0) == pytest.approx(k(a, a) + k(b, b) - 2 * k(a, b), rel=1e-9)


def test_sbc_of_an_exact_posterior_is_uniform():
    # theta ~ N(0,1), x ~ N(theta, 0.25): exact posterior N(0.8 x, 0.2)
    g = torch.Generator().manual_seed(3)
    theta = torch.randn(500, 1, generator=g)
    x = theta + 0.5 * torch.randn(500, 1, generator=g)
    samples = 0.8 * x[:, None, :] + math.sqrt(0.2) * torch.randn(500, 200, 1, generator=g)
    ranks = Q.sbc_ranks(theta, samples)
    s = Q.sbc_summary(ranks, 200, ["t"])["t"]
    assert s["ks_pvalue"] > 0.01 and abs(s["mean_rank"] - 0.5) < 0.05
    # an overconfident posterior fails
    narrow = 0.8 * x[:, None, :] + 0.1 * torch.randn(500, 200, 1, generator=g)
    assert Q.sbc_summary(Q.sbc_ranks(theta, narrow), 200, ["t"])["t"]["ks_pvalue"] < 1e-6
    lq = lambda th, xx: -0.5 * (th - 0.8 * xx) ** 2 / 0.2
    cov = Q.expected_coverage(lq(theta[:, 0], x[:, 0]), lq(samples[..., 0], x[:, :1]))
    assert cov["0.5"] == pytest.approx(0.5, abs=0.07) and cov["0.9"] == pytest.approx(0.9, abs=0.05)


def test_mean_ci95():
    s = Q.mean_ci95([1.0, 2.0, 3.0, 4.0])
    assert s["mean"] == 2.5 and s["n"] == 4
    assert s["ci95"] == pytest.approx(1.96 * np.std([1, 2, 3, 4], ddof=1) / 2)

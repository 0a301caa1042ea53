"""RaCO-DP accounting: the issue's figure 1 numbers, closed forms, and cross-checks against anchors."""
import math

import pytest
import yaml
from scipy import optimize, stats

from cortexkit.tools.dpfair import accounting

Q_DEMO = 4096 / 29676     # official Adult demo: expected batch 4096 of 29,676 training rows


def test_figure1_official_demo_spends_10_83_not_1():
    # sigma 4, b 0.5 (inverse scale), q 4096/29676, T 1000: the demo labelled "epsilon 1".
    assert accounting.epsilon_spent(4.0, 0.5, Q_DEMO, 1000, 1e-4) == pytest.approx(10.83, abs=0.005)
    assert accounting.epsilon_spent(4.0, 0.5, Q_DEMO, 1000, 1e-5) == pytest.approx(12.15, abs=0.005)
    assert accounting.epsilon_spent(4.0, None, Q_DEMO, 1000, 1e-4) == pytest.approx(4.34, abs=0.005)


def test_figure1_largest_T_for_epsilon_1():
    assert accounting.max_steps(4.0, 0.5, Q_DEMO, 1.0, 1e-4) == 17
    assert accounting.max_steps(4.0, 0.5, Q_DEMO, 1.0, 1e-5) == 12
    assert accounting.epsilon_spent(4.0, 0.5, Q_DEMO, 17, 1e-4) <= 1.0 < accounting.epsilon_spent(4.0, 0.5, Q_DEMO, 18, 1e-4)
    assert accounting.max_steps(10.0, 0.03, 4096 / 33916, 1.0, 1e-5) == 444


def test_matches_dp_accounting_dpevent_api():
    """Same composition through dp_accounting's independent DpEvent/PLDAccountant code path."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    q, sigma, b, T = 0.05, 3.0, 0.2, 300
    event = dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), T),
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.LaplaceDpEvent(1.0 / b)), T),
    ])
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(event)
    ref = acc.get_epsilon(1e-5)
    ours = accounting.epsilon_spent(sigma, b, q, T, 1e-5)
    # different default discretisations: agree to 1%
    assert ours == pytest.approx(ref, rel=0.01)


def test_laplace_convention_pure_epsilon_is_b():
    """q = 1, one release: Laplace(scale 1/b) with L1 sensitivity 1 is exactly b-DP."""
    for b in (0.1, 0.5, 2.0):
        eps = accounting.epsilon_parts(1.0, b, 1.0, 1, 1e-12)["laplace_only"]
        assert eps == pytest.approx(b, rel=2e-3)


def test_gaussian_q1_matches_analytic_gaussian_mechanism():
    """q = 1, T = 1: delta(eps) = Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s) (Balle & Wang 2018)."""
    sigma, delta = 2.0, 1e-5

    def delta_of(eps):
        return (stats.norm.cdf(0.5 / sigma - eps * sigma)
                - math.exp(eps) * stats.norm.cdf(-0.5 / sigma - eps * sigma)) - delta

    exact = optimize.brentq(delta_of, 1e-6, 50)
    ours = accounting.epsilon_spent(sigma, None, 1.0, 1, delta)
    assert exact <= ours <= exact * 1.01     # pessimistic PLD: an upper bound, tight to 1%


def test_gaussian_part_matches_opacus_prv():
    opacus = pytest.importorskip("opacus", reason="opacus (bench extra) not installed")
    from opacus.accountants import PRVAccountant

    for sigma, q, T, delta in [(3.047, 1024 / 33916, 680, 1e-5), (4.0, Q_DEMO, 1000, 1e-4),
                               (1.323, 1024 / 33916, 680, 1e-5)]:
        prv = PRVAccountant()
        prv.history = [(sigma, q, T)]
        ref = prv.get_epsilon(delta, eps_error=1e-3)
        ours = accounting.epsilon_spent(sigma, None, q, T, delta)
        assert ours == pytest.approx(ref, rel=0.01), (sigma, q, T)


def test_monotone_and_calibration():
    q = 0.1
    e = [accounting.epsilon_spent(5.0, 0.05, q, T, 1e-5) for T in (10, 50, 200)]
    assert e[0] < e[1] < e[2]
    assert accounting.epsilon_spent(8.0, 0.05, q, 50, 1e-5) < accounting.epsilon_spent(5.0, 0.05, q, 50, 1e-5)
    sigma = accounting.calibrate_sigma(0.05, q, 200, 2.0, 1e-5)
    assert accounting.epsilon_spent(sigma, 0.05, q, 200, 1e-5) <= 2.0
    assert accounting.epsilon_spent(sigma * 0.995, 0.05, q, 200, 1e-5) > 2.0
    T = accounting.max_steps(sigma, 0.05, q, 2.0, 1e-5)
    assert T >= 200


def test_histogram_alone_over_budget_and_zero_steps():
    with pytest.raises(ValueError, match="histogram alone"):
        accounting.calibrate_sigma(0.5, Q_DEMO, 1000, 1.0, 1e-5)
    assert accounting.max_steps(0.3, 5.0, 0.5, 0.1, 1e-5) == 0


def test_non_private_and_no_steps():
    assert math.isinf(accounting.epsilon_spent(0.0, None, 0.1, 10, 1e-5))
    assert math.isinf(accounting.epsilon_spent(4.0, math.inf, 0.1, 10, 1e-5))
    assert accounting.epsilon_spent(4.0, 0.1, 0.1, 0, 1e-5) == 0.0
    with pytest.raises(ValueError):
        accounting.epsilon_spent(4.0, 0.1, 0.1, 10, 1.5)
    with pytest.raises(ValueError):
        accounting.epsilon_spent(4.0, 0.1, 0.0, 10, 1e-5)


def test_ledger_states_the_convention():
    led = accounting.make_ledger(10.0, 3.0, 0.03, 0.12, 33916, 444, 1e-5, epsilon_target=1.0)
    d = led.to_dict()
    assert d["laplace_scale"] == pytest.approx(1 / 0.03)
    assert "inverse scale" in d["laplace_convention"]
    assert d["epsilon_spent"] <= 1.0 and d["private"]
    assert d["epsilon_gaussian_only"] < d["epsilon_spent"] and d["epsilon_laplace_only"] < d["epsilon_spent"]


def test_little_noise_is_accounted_quickly_and_stays_tight(cli):
    """sigma 0.1 or b 50 make the privacy loss span thousands: the grid widens with it (it took minutes
    at sigma 0.03 on dp-accounting's fixed 1e-4 grid) and the bound stays within 1 % of the closed form."""
    sigma, steps, delta = 0.1, 4, 1e-5
    s = sigma / math.sqrt(steps)              # q = 1: T Gaussian steps are one of std sigma / sqrt(T)

    def delta_of(eps):                        # in logs: e^eps overflows
        return (math.exp(stats.norm.logcdf(0.5 / s - eps * s))
                - math.exp(eps + stats.norm.logcdf(-0.5 / s - eps * s))) - delta

    exact = optimize.brentq(delta_of, 1.0, 1e4)
    assert exact <= accounting.epsilon_spent(sigma, None, 1.0, steps, delta) <= exact * 1.01
    b = 50.0                                  # q = 1, one release: b-DP
    assert accounting.epsilon_parts(1.0, b, 1.0, 1, 1e-12)["laplace_only"] == pytest.approx(b, rel=2e-3)
    p = cli("dp-fairness-train", "account", "--sigma", "0.03", "--sampling-rate", "0.01",
            "--steps", "1000", timeout=90)
    assert p.returncode == 0, p.stderr
    assert float(yaml.safe_load(p.stdout)["epsilon"]) > 1e4

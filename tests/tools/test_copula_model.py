"""CopulaModel's own checks of bad input and of its reports (in process, fast)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cortexkit.tools.copula import metrics
from cortexkit.tools.copula.model import EvalConfig, FitConfig, evaluate_model, fit_model


@pytest.fixture(scope="module")
def gaussian_model():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 3)) @ np.array([[1, 0.5, 0], [0, 1, 0.3], [0, 0, 1.0]])
    return fit_model(x, ["a", "b", "c"], FitConfig(copula="gaussian"), generator=torch.Generator().manual_seed(0),
                     rng=rng), x


def _evaluate(model, x, **kw):
    return evaluate_model(model, x, EvalConfig(is_draws=1000, samples=50), generator=torch.Generator().manual_seed(1),
                          rng=np.random.default_rng(2), **kw)


def test_evaluate_refuses_undefined_sample_metrics_and_any_non_finite_figure(gaussian_model, monkeypatch):
    model, x = gaussian_model
    rep = _evaluate(model, x[:60])
    assert np.isfinite(rep["tau_frobenius"]) and rep["log_z"] == 0.0
    with pytest.raises(ValueError, match="too few"):
        _evaluate(model, x[:9])
    beyond = x[:60].copy()
    beyond[:, 1] = 1e6                     # every row past the training range: one value on the cube
    with pytest.raises(ValueError, match="'b'.*Kendall tau"):
        _evaluate(model, beyond)
    monkeypatch.setattr(metrics, "tau_frobenius", lambda a, b: float("nan"))
    with pytest.raises(ValueError, match="non-finite.*tau_frobenius"):
        _evaluate(model, x[:60])


def test_cube_input_outside_the_unit_cube_is_refused_and_data_outside_the_support_is_named(gaussian_model):
    model, x = gaussian_model
    u = np.full((4, 3), 0.5)
    np.testing.assert_allclose(model.to_space(u, "cube", "gaussian"), 0, atol=1e-12)
    u[2, 1] = 1.5
    with pytest.raises(ValueError, match="column 'b', row 3"):
        model.to_space(u, "cube", "gaussian")
    far = x[:5].copy()
    far[:2, 2] = x[:, 2].max() + 1
    assert model.outside_support(far) == {"c": 2}
    assert np.isneginf(model.score(far, "data", data_density=True)["log_density"][:2]).all()

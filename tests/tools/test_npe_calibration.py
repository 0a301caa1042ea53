"""SBC verdicts on rank sets of known shape, and the stop reason of the training loop."""
import pytest
import torch

from cortexkit.tools.npe import metrics as Q
from cortexkit.tools.npe.training import TrainConfig, train


def _ranks(scale: float, shift: float = 0.0, n: int = 600, draws: int = 100, seed: int = 0):
    """theta_true ~ N(0, 1); 'posterior' draws ~ N(shift, scale^2) independent of theta_true:
    scale 1, shift 0 is exactly calibrated; scale < 1 too narrow, > 1 too wide; shift biases."""
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(n, 2, generator=g)
    samples = shift + scale * torch.randn(n, draws, 2, generator=g)
    return Q.sbc_ranks(theta, samples), draws


@pytest.mark.parametrize("scale, shift, verdict, key, shape", [
    (1.0, 0.0, "calibrated", None, "uniform"),
    (0.5, 0.0, "miscalibrated", "over_confident", "u-shaped"),
    (2.0, 0.0, "miscalibrated", "under_confident", "hump"),
    (1.0, 0.6, "miscalibrated", "biased", "low"),
    (1.0, -0.6, "miscalibrated", "biased", "high"),
])
def test_sbc_verdict_names_the_shape_of_the_rank_histogram(scale, shift, verdict, key, shape):
    ranks, draws = _ranks(scale, shift)
    params = Q.sbc_summary(ranks, draws, ["a", "b"])
    v = Q.sbc_verdict(params)
    assert v["verdict"] == verdict
    assert {p["shape"] for p in params.values()} == {shape}
    if key:
        assert v[key] == ["a", "b"] and Q.SHAPES[shape] in v["summary"]
    else:
        assert v["over_confident"] == v["under_confident"] == v["biased"] == []


def test_sbc_z_scores_are_standard_under_calibration():
    """Over 40 calibrated rank sets the bias and dispersion z-scores have mean ~0 and sd ~1
    (the closed-form standard errors sqrt(1/12n) and sqrt(1/180n) are right)."""
    zs = {"bias_z": [], "dispersion_z": []}
    for seed in range(40):
        ranks, draws = _ranks(1.0, seed=seed, n=400)
        for p in Q.sbc_summary(ranks, draws, ["a", "b"]).values():
            for k in zs:
                zs[k].append(p[k])
    for k, v in zs.items():
        t = torch.tensor(v)
        assert abs(t.mean()) < 0.35 and 0.7 < t.std() < 1.3, (k, t.mean(), t.std())


class _Gauss(torch.nn.Module):
    """log N(theta; m, 1): one parameter, trained by the same loop as the flows."""

    def __init__(self):
        super().__init__()
        self.m = torch.nn.Parameter(torch.zeros(1))

    def log_prob(self, theta, x):
        return -0.5 * ((theta - self.m) ** 2).sum(1)


def test_training_says_which_limit_ended_it_and_reports_each_epoch():
    g = torch.Generator().manual_seed(0)
    theta, x = 3 + torch.randn(200, 1, generator=g), torch.zeros(200, 1)
    seen = []
    h = train(_Gauss(), theta, x, TrainConfig(lr=0.1, max_epochs=7, patience=50), g, seen.append)
    assert (h.stop_reason, h.epochs, len(seen)) == ("step-cap", 7, 7)
    assert [r.epoch for r in seen] == list(range(7)) and seen[-1].best_val_loss == min(h.val_loss)
    h = train(_Gauss(), theta, x, TrainConfig(lr=0.1, max_epochs=10_000, patience=5), g, seen.append)
    assert h.stop_reason == "patience" and h.epochs == h.best_epoch + 1 + 5 < 10_000
    assert seen[-1].patience_left == 0 and h.curve()["val_loss"] == h.val_loss

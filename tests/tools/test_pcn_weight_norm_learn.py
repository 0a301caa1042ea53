"""Weight normalisation with learnt per-layer gains (pcn21, ``--weight-norm-mode learn``):
Salimans & Kingma's w = g v / ||v|| with one trainable log-gain per normalised layer, initialised at
the resolved gain and trained by the weights' AdamW from dLoss/d log g_l = <dLoss/dW_l, W_l>.
Init is pin's; the gain's gradient is the loss's derivative along the layer's scale; Meta-PCN at its
defaults (T = L - 1, eta_x = 1) keeps BP + WN's weights and gains under it (the gradient identity);
and the gains do move (a run is not pin's)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cortexkit.tools.pcn import api
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn.train import (LearntGains, TrainConfig, layer_gains, normalize_weights,
                                       spectral_proxy)

MLP = NetworkSpec("mlp", (1, 4, 4), classes=5, width=12, depth=6, activation="gelu")


def _images(n=80, seed=0, classes=5, shape=(1, 4, 4)):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % classes
    images = rng.integers(0, 256, size=(n, *shape)).astype(np.uint8)
    images[:, 0, 0, 0] = (labels * 50).astype(np.uint8)  # learnable
    return images, labels.astype(np.int64)


@pytest.mark.parametrize("gain", ["fan", 1.5, "fan-free-readout"])
def test_the_gain_gradient_is_the_loss_derivative_along_each_layers_scale(gain):
    """set_grad's <G_l, W_l> equals d loss / d s at s = 0 for W_l -> exp(s) W_l (finite
    differences, float64); a layer a rule leaves free has no gain."""
    torch.manual_seed(0)
    net = build_network(MLP, dtype=torch.float64)
    normalize_weights(net, gain)
    gains = LearntGains(net, gain)
    targets = layer_gains(net, gain)
    assert gains.log_gain.numel() == sum(t is not None for t in targets)
    assert torch.allclose(gains.log_gain.exp(),
                          torch.tensor([t for t in targets if t is not None], dtype=torch.float64))
    x = torch.randn(7, 1, 4, 4, dtype=torch.float64)
    y = torch.arange(7) % 5
    F.cross_entropy(net(x), y).backward()
    gains.set_grad()
    layers = weight_layers(net)
    for k, i in enumerate(gains.learnt):
        weight, h = layers[i].weight, 1e-6
        with torch.no_grad():
            weight.mul_(np.exp(h))
            up = float(F.cross_entropy(net(x), y))
            weight.mul_(np.exp(-2 * h))
            down = float(F.cross_entropy(net(x), y))
            weight.mul_(np.exp(h))
        assert float(gains.log_gain.grad[k]) == pytest.approx((up - down) / (2 * h), rel=1e-6,
                                                              abs=1e-10)


def test_initialisation_is_pins():
    images, labels = _images()
    models = [api.fit(images, labels, MLP, TrainConfig(epochs=0, weight_norm_mode=mode,
                                                       inference=InferenceConfig(5, 1.0)),
                      seed=4)[0] for mode in ("pin", "learn")]
    assert all(torch.equal(p, q) for p, q in zip(models[0].net.parameters(),
                                                 models[1].net.parameters()))


def test_meta_pcn_learn_is_bp_with_learnt_gains_and_the_gains_move():
    """The gradient identity (T = L - 1, eta_x = 1) holds with the learnt gains: Meta-PCN learn and
    BP + WN learn end with the same weights in float64, so with the same gains (every layer's
    proxy); the gains left the resolved values (the run is not pin's, and its layers' proxies
    are not the fan gains); each layer stays pinned at its own gain (one proxy per layer)."""
    images, labels = _images()
    common = dict(epochs=3, batch_size=16, lr=0.02)
    fits = {}
    for name, method, mode in [("meta-learn", "meta-pcn", "learn"), ("bp-learn", "bp", "learn"),
                               ("meta-pin", "meta-pcn", "pin")]:
        steps = MLP.depth - 1 if method == "meta-pcn" else 0
        cfg = TrainConfig(method=method, weight_norm=True, weight_norm_mode=mode,
                          inference=InferenceConfig(steps, 1.0), **common)
        fits[name] = api.fit(images, labels, MLP, cfg, seed=5, dtype=torch.float64)[0].net
    for p, q in zip(fits["meta-learn"].parameters(), fits["bp-learn"].parameters()):
        assert torch.allclose(p, q, rtol=0, atol=1e-9)
    gap = max(float((p - q).detach().abs().max())
              for p, q in zip(fits["meta-learn"].parameters(), fits["meta-pin"].parameters()))
    assert gap > 1e-3
    gains = layer_gains(fits["meta-learn"], "fan")
    learnt = [spectral_proxy(l.weight) for l in weight_layers(fits["meta-learn"])]
    pinned = [spectral_proxy(l.weight) for l in weight_layers(fits["meta-pin"])]
    assert pinned == pytest.approx(gains, rel=1e-9)
    moved = [abs(a / g - 1) for a, g in zip(learnt, gains)]
    assert max(moved) > 0.01, moved       # 3 epochs x 5 steps at rate 0.02: room for ~30 %
    assert learnt == pytest.approx([spectral_proxy(l.weight)
                                    for l in weight_layers(fits["bp-learn"])], rel=1e-9)


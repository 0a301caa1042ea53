"""Weight normalisation's modes: ``pin`` (today's, the spectral proxy set to the gain
after every weight step) and ``cap`` (the proxy clipped from above at the gain: a layer may shrink,
never grow past it; pcn17) and ``learn`` (pcn21: Salimans & Kingma's w = g v / ||v||, one trainable
log-gain per normalised layer initialised at the resolved gain and trained by the weights' AdamW from
dLoss/d log g_l = <dLoss/dW_l, W_l>). Init is exact in each; pin is today's arithmetic bit for bit;
Meta-PCN at its defaults keeps BP + WN's weights (and learnt gains) under every mode (the gradient
identity)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cortexkit.tools.pcn import api, train as train_module
from cortexkit.tools.pcn.inference import InferenceConfig, meta_inference
from cortexkit.tools.pcn.network import NetworkSpec, build_network, fan_out_in, weight_layers
from cortexkit.tools.pcn.train import (LearntGains, TrainConfig, layer_gains, normalize_weights,
                                       spectral_proxy)

MLP = NetworkSpec("mlp", (1, 4, 4), classes=5, width=12, depth=6, activation="gelu")
CONV = NetworkSpec("vgg5", (3, 16, 16), classes=5, width_scale=1 / 32, activation="tanh")


@torch.no_grad()
def _today(net, gain=1.0, clip=None):
    """normalize_weights as it was before pcn17 (the reference pin mode must equal bit for bit)."""
    for layer, target in zip(weight_layers(net), layer_gains(net, gain)):
        weight = layer.weight
        m, n = fan_out_in(weight)
        std = weight.std(unbiased=False)
        if target is not None and std > 0:
            weight.mul_(target / ((math.sqrt(m) + math.sqrt(n)) * std))
        if clip is not None:
            weight.clamp_(-clip, clip)


def _net(spec, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    return build_network(spec, dtype=dtype)


def _images(n=60, seed=0, classes=5, shape=(1, 4, 4)):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % classes
    images = rng.integers(0, 256, size=(n, *shape)).astype(np.uint8)
    images[:, 0, 0, 0] = (labels * 50).astype(np.uint8)  # learnable
    return images, labels.astype(np.int64)


@pytest.mark.parametrize("spec", [MLP, CONV], ids=["mlp", "vgg5"])
@pytest.mark.parametrize("gain", ["fan", 1.0, "fan-free-readout"])
def test_cap_scales_a_layer_above_the_gain_down_to_it_and_leaves_one_below_untouched(spec, gain):
    net = _net(spec)
    normalize_weights(net, gain)                  # at the gain exactly
    layers, targets = weight_layers(net), layer_gains(net, gain)
    with torch.no_grad():                         # even layers grown x3, odd ones shrunk x0.4
        for i, layer in enumerate(layers):
            layer.weight.mul_(3.0 if i % 2 == 0 else 0.4)
    before = [layer.weight.clone() for layer in layers]
    normalize_weights(net, gain, mode="cap")
    for i, (layer, target, old) in enumerate(zip(layers, targets, before)):
        if target is None:                        # a rule that leaves the output layer free
            assert torch.equal(layer.weight, old)
        elif i % 2 == 0:
            assert spectral_proxy(layer.weight) == pytest.approx(target, rel=1e-12)
        else:                                     # below the gain: bit for bit as it was
            assert torch.equal(layer.weight, old)
            assert spectral_proxy(layer.weight) == pytest.approx(0.4 * target, rel=1e-12)
    # pin on the same weights sets every normalised layer to the gain, the shrunk ones too
    normalize_weights(net, gain, mode="pin")
    for layer, target in zip(layers, targets):
        if target is not None:
            assert spectral_proxy(layer.weight) == pytest.approx(target, rel=1e-12)


def test_cap_never_lets_the_proxy_exceed_the_gain_after_a_step_and_lets_layers_shrink():
    """Real weight steps (Meta-PCN gradients, AdamW at a large rate, weight decay pulling the
    weights in): after every step each proxy is <= its gain; some layer ends below it, which
    pin would not allow."""
    net = _net(MLP)
    normalize_weights(net, "fan")
    gains = layer_gains(net, "fan")
    opt = torch.optim.AdamW(net.parameters(), lr=0.05, weight_decay=5.0)
    g = torch.Generator().manual_seed(1)
    below = 0
    for step in range(25):
        x = torch.randn(16, *MLP.in_shape, generator=g, dtype=torch.float64)
        y = torch.randint(0, MLP.classes, (16,), generator=g)
        res = meta_inference(net, x, y, InferenceConfig(steps=MLP.depth - 1, state_lr=1.0),
                             scale=1 / 16)
        for p, grad in zip(net.parameters(), res.grads):
            p.grad = grad
        opt.step()
        normalize_weights(net, "fan", mode="cap")
        proxies = [spectral_proxy(layer.weight) for layer in weight_layers(net)]
        assert all(p <= t * (1 + 1e-12) for p, t in zip(proxies, gains)), (step, proxies)
        below += sum(p < 0.99 * t for p, t in zip(proxies, gains))
    assert below > 0


def test_bad_mode_is_refused():
    with pytest.raises(ValueError, match="unknown weight-norm mode 'clip'"):
        normalize_weights(_net(MLP), 1.0, mode="clip")
    with pytest.raises(ValueError, match="unknown weight-norm mode 'clip'"):
        TrainConfig(weight_norm_mode="clip")


@pytest.mark.parametrize("spec", [MLP, CONV], ids=["mlp", "vgg5"])
@pytest.mark.parametrize("gain, clip", [("fan", None), (1.5, None), ("fan-act", 0.05)])
def test_pin_mode_is_todays_arithmetic_bit_for_bit(spec, gain, clip):
    for dtype in (torch.float32, torch.float64):
        a, b = _net(spec, 3, dtype), _net(spec, 3, dtype)
        with torch.no_grad():
            for la, lb in zip(weight_layers(a), weight_layers(b)):
                la.weight.mul_(1.7)
                lb.weight.mul_(1.7)
        normalize_weights(a, gain, clip)                 # the default mode
        _today(b, gain, clip)
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
        normalize_weights(a, gain, clip, mode="pin")
        _today(b, gain, clip)
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_a_pinned_training_run_is_todays_bit_for_bit(monkeypatch):
    """The whole loop in float32 with mode pin equals the loop with pre-pcn17 normalize_weights."""
    images, labels = _images()
    cfg = TrainConfig(epochs=2, batch_size=16, inference=InferenceConfig(5, 1.0))
    assert cfg.weight_norm_mode == "pin"
    new, _ = api.fit(images, labels, MLP, cfg, seed=2)
    monkeypatch.setattr(train_module, "normalize_weights",
                        lambda net, gain=1.0, clip=None, mode="pin": _today(net, gain, clip))
    old, _ = api.fit(images, labels, MLP, cfg, seed=2)
    assert all(torch.equal(p, q) for p, q in zip(new.net.parameters(), old.net.parameters()))


def test_initialisation_is_the_same_in_both_modes():
    images, labels = _images()
    models = [api.fit(images, labels, MLP, TrainConfig(epochs=0, weight_norm_mode=mode,
                                                       inference=InferenceConfig(5, 1.0)),
                      seed=4)[0] for mode in ("pin", "cap")]
    assert all(torch.equal(p, q) for p, q in zip(models[0].net.parameters(),
                                                 models[1].net.parameters()))
    gains = layer_gains(models[0].net, "fan")
    for layer, target in zip(weight_layers(models[1].net), gains):
        assert spectral_proxy(layer.weight) == pytest.approx(target, rel=1e-6)


def _identity_fits(mode, images, labels):
    """Meta-PCN and BP + WN under ``mode`` and Meta-PCN under pin, float64, 3 epochs: asserts the
    gradient identity (T = L - 1, eta_x = 1: the two ``mode`` runs end with the same weights) and that
    ``mode``'s run is not pin's -> the three networks."""
    common = dict(epochs=3, batch_size=16, lr=0.02)
    fits = {}
    for name, method, m in [("meta", "meta-pcn", mode), ("bp", "bp", mode), ("meta-pin", "meta-pcn", "pin")]:
        steps = MLP.depth - 1 if method == "meta-pcn" else 0
        cfg = TrainConfig(method=method, weight_norm=True, weight_norm_mode=m,
                          inference=InferenceConfig(steps, 1.0), **common)
        fits[name] = api.fit(images, labels, MLP, cfg, seed=5, dtype=torch.float64)[0].net
    for p, q in zip(fits["meta"].parameters(), fits["bp"].parameters()):
        assert torch.allclose(p, q, rtol=0, atol=1e-9)
    gap = max(float((p - q).detach().abs().max())
              for p, q in zip(fits["meta"].parameters(), fits["meta-pin"].parameters()))
    assert gap > 1e-3
    return fits


def test_meta_pcn_cap_is_bp_with_capped_weight_norm_and_differs_from_pin():
    """The gradient identity (T = L - 1, eta_x = 1) holds under cap as under pin: Meta-PCN cap and
    BP + WN cap end with the same weights in float64; cap's run is not pin's (the cap acted)."""
    fits = _identity_fits("cap", *_images(80))
    gains = layer_gains(fits["meta"], "fan")
    proxies = [spectral_proxy(layer.weight) for layer in weight_layers(fits["meta"])]
    assert all(p <= t * (1 + 1e-12) for p, t in zip(proxies, gains))


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


def test_learn_initialisation_is_pins():
    images, labels = _images(80)
    models = [api.fit(images, labels, MLP, TrainConfig(epochs=0, weight_norm_mode=mode,
                                                       inference=InferenceConfig(5, 1.0)),
                      seed=4)[0] for mode in ("pin", "learn")]
    assert all(torch.equal(p, q) for p, q in zip(models[0].net.parameters(),
                                                 models[1].net.parameters()))


def test_meta_pcn_learn_is_bp_with_learnt_gains_and_the_gains_move():
    """The gradient identity holds with the learnt gains (pcn21): Meta-PCN learn and BP + WN learn end
    with the same weights in float64, so with the same gains (every layer's proxy); the gains left the
    resolved values (the run is not pin's, and its layers' proxies are not the fan gains); each layer
    stays pinned at its own gain (one proxy per layer)."""
    fits = _identity_fits("learn", *_images(80))
    gains = layer_gains(fits["meta"], "fan")
    learnt = [spectral_proxy(l.weight) for l in weight_layers(fits["meta"])]
    pinned = [spectral_proxy(l.weight) for l in weight_layers(fits["meta-pin"])]
    assert pinned == pytest.approx(gains, rel=1e-9)
    moved = [abs(a / g - 1) for a, g in zip(learnt, gains)]
    assert max(moved) > 0.01, moved       # 3 epochs x 5 steps at rate 0.02: room for ~30 %
    assert learnt == pytest.approx([spectral_proxy(l.weight) for l in weight_layers(fits["bp"])], rel=1e-9)

"""The default rules of train-pcn (issue 31, item 1): the block counts the rules read, the fan
gain rule's unit root-mean-square gain per layer, and the plot's axes (item 3)."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from cortexkit.tools.pcn.defaults import BLOCKS, block_count, default_steps
from cortexkit.tools.pcn.network import Network, NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn.train import activation_gain, layer_gains, normalize_weights, spectral_proxy

SPECS = [NetworkSpec("mlp", (1, 28, 28), 10, width=64, depth=6),
         NetworkSpec("vgg7", (3, 32, 32), 10, width_scale=1 / 8),
         NetworkSpec("vgg13", (3, 32, 32), 10, width_scale=1 / 8),
         NetworkSpec("resnet18", (3, 32, 32), 10, width_scale=1 / 8)]


@pytest.mark.parametrize("arch", sorted(BLOCKS) + ["mlp"])
def test_block_counts_are_the_networks(arch):
    spec = NetworkSpec(arch, (3, 32, 32), 10, depth=7, width_scale=1 / 16)
    assert block_count(arch, 7) == len(Network(spec).blocks)
    assert default_steps("meta-pcn", block_count(arch, 7)) == len(Network(spec).blocks) - 1


def _rms_gain(layer, generator):
    """root-mean-square of layer(x) / of x for a unit Gaussian x (bias left out)."""
    w = layer.weight.detach()
    if isinstance(layer, nn.Linear):
        x = torch.randn(512, w.shape[1], generator=generator, dtype=w.dtype)
        y = x @ w.T
    else:  # the interior of a convolution: no padding, so every output sees n inputs
        x = torch.randn(64, w.shape[1], 12, 12, generator=generator, dtype=w.dtype)
        y = F.conv2d(x, w, stride=layer.stride)
    return float(y.pow(2).mean().sqrt() / x.pow(2).mean().sqrt())


@pytest.mark.parametrize("spec", SPECS, ids=[s.arch for s in SPECS])
def test_fan_rule_keeps_every_layers_forward_signal(spec):
    """fan: (sqrt m + sqrt n) std W = 1 + sqrt(m/n), i.e. std W sqrt(n) = 1: every weight layer
    passes a random input at unit RMS (gain 1, the paper's literal one, gives
    sqrt(n) / (sqrt m + sqrt n): 1/2 per square layer); fan-act adds 1 / rms(phi(z))."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    net = build_network(spec, dtype=torch.float64)
    normalize_weights(net, "fan")
    gains = [_rms_gain(layer, g) for layer in weight_layers(net)]
    assert all(0.9 < r < 1.1 for r in gains), gains
    fan = layer_gains(net, "fan")
    normalize_weights(net, 1.0)
    literal = [_rms_gain(layer, g) for layer in weight_layers(net)]
    assert literal == pytest.approx([1 / f for f in fan], rel=0.1) and max(literal) < 0.8
    act = layer_gains(net, "fan-act")
    factor = activation_gain(spec.activation)
    assert [a / f for a, f in zip(act[:-1], fan[:-1])] == pytest.approx([factor] * (len(fan) - 1))
    assert act[-1] == pytest.approx(fan[-1])   # the output layer feeds no activation


def test_activation_gain_closed_forms():
    assert activation_gain("relu") == pytest.approx(math.sqrt(2), rel=1e-6)
    assert activation_gain("identity") == pytest.approx(1.0, rel=1e-9)
    assert 1.5 < activation_gain("gelu") < 1.56


def test_plot_axes_span_the_measured_range_with_integer_epochs():
    pytest.importorskip("matplotlib")
    from cortexkit.cli.train_pcn import _plot

    class Stub:
        def write_figure(self, fig, path, **kw):
            self.fig = fig

    run = Stub()
    trace = [[0.0, 0.0, 2.0], [0.0, 1e-3, 1.5], [1e-4, 2e-3, 1.0]]  # zeros: not reached yet
    history = [{"epoch": e, "train_top1": 0.5, "test_top1": 0.4} for e in (1, 2, 3)]
    _plot(run, "x.png", history, trace)
    energy_ax, acc_ax = run.fig.axes
    low, high = energy_ax.get_ylim()
    assert 1e-5 <= low <= 1e-4 and 2.0 <= high <= 5.0   # 1e-30 no more: a few decades only
    ticks = [t for t in acc_ax.get_xticks() if 1 <= t <= 3]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_python_default_config_is_what_the_command_resolves():
    from cortexkit.tools.pcn.api import default_config

    cfg = default_config(NetworkSpec("mlp", depth=12))
    assert (cfg.inference.steps, cfg.inference.state_lr, cfg.weight_norm,
            cfg.weight_norm_gain) == (11, 1.0, True, "fan")
    pc = default_config(NetworkSpec("vgg9", (3, 32, 32)), "pc", epochs=2)
    assert (pc.inference.steps, pc.inference.state_lr, pc.weight_norm, pc.epochs) == (8, 0.1,
                                                                                      False, 2)


@pytest.mark.parametrize("spec", SPECS, ids=[s.arch for s in SPECS])
def test_gain_rules_between_fan_and_fan_act(spec):
    """fan-sqrt-act: fan times sqrt(1 / rms(phi)) on every layer that feeds the activation, the
    output layer at fan's; fan-act-readout: fan-act's hidden layers, the output layer at 1/8 of
    fan's; fan-sqrt-act-readout: fan-sqrt-act's, the output at 1/3 (train_pcn/RESULTS.md, pcn13)."""
    net = build_network(spec)
    fan, act = layer_gains(net, "fan"), layer_gains(net, "fan-act")
    half = layer_gains(net, "fan-sqrt-act")
    factor = activation_gain(spec.activation)
    assert [h / f for h, f in zip(half[:-1], fan[:-1])] == pytest.approx(
        [math.sqrt(factor)] * (len(fan) - 1))
    assert half[-1] == pytest.approx(fan[-1])
    readout = layer_gains(net, "fan-act-readout")
    assert readout[:-1] == pytest.approx(act[:-1]) and readout[-1] == pytest.approx(fan[-1] / 8)
    both = layer_gains(net, "fan-sqrt-act-readout")
    assert both[:-1] == pytest.approx(half[:-1]) and both[-1] == pytest.approx(fan[-1] / 3)
    with pytest.raises(ValueError, match="unknown weight-norm gain rule 'fan-half'"):
        layer_gains(net, "fan-half")


@pytest.mark.parametrize("spec", SPECS, ids=[s.arch for s in SPECS])
def test_fan_free_readout_leaves_the_output_layer_unnormalised(spec):
    """fan-free-readout (pcn14 candidate): fan's gain on every layer but the output one, whose
    weights normalize_weights leaves as they are (its norm is learnt, as plain BP's)."""
    net = build_network(spec)
    gains = layer_gains(net, "fan-free-readout")
    assert gains[-1] is None and gains[:-1] == pytest.approx(layer_gains(net, "fan")[:-1])
    layers = weight_layers(net)
    out = layers[-1].weight
    before = out.detach().clone()
    out.data.mul_(3.0)
    normalize_weights(net, "fan-free-readout")
    assert torch.equal(out.detach(), 3.0 * before)
    assert spectral_proxy(layers[0].weight) == pytest.approx(gains[0], rel=1e-5)


@torch.no_grad()
def _signal_ratio_per_block(net, x):
    """Geometric-mean ratio per block, block 1 to the last hidden block, of the RMS of the
    input-dependent part of each block's pre-activation (stop40b_signal.py's measurement)."""
    rms, a = [], x
    for block in net.blocks[:-1]:
        h = block.layer(a.flatten(1) if isinstance(block.layer, nn.Linear) else a)
        a = block(a)
        rms.append(float((h - h.mean(0)).pow(2).mean().sqrt()))
    return (rms[-1] / rms[0]) ** (1 / (len(rms) - 1))


@pytest.mark.parametrize("spec", [NetworkSpec("mlp", (1, 12, 12), 10, width=128, depth=8),
                                  NetworkSpec("vgg9", (3, 32, 32), 10, width_scale=1 / 8)],
                         ids=["mlp", "vgg9"])
def test_signal_per_block_at_initialisation(spec):
    """Issue 31 item 1's "neither halves nor explodes per layer", on a synthetic input: fan lets
    the input-dependent signal fall to about 0.55 of itself per block; fan-sqrt-act and fan-act
    keep it within [0.7, 1.4] (a GELU MLP and a ReLU VGG)."""
    x = torch.randn(256, *spec.in_shape, generator=torch.Generator().manual_seed(0))
    ratios = {}
    for rule in ("fan", "fan-sqrt-act", "fan-act"):
        torch.manual_seed(0)
        net = build_network(spec)
        normalize_weights(net, rule)
        ratios[rule] = _signal_ratio_per_block(net, x)
    assert ratios["fan"] < 0.7, ratios
    assert 0.7 <= ratios["fan-sqrt-act"] < ratios["fan-act"] <= 1.4, ratios


@pytest.mark.parametrize("spec", SPECS, ids=[s.arch for s in SPECS])
def test_fan_init_is_torchs_default_init_scale(spec):
    """fan-init (pcn22) = fan / sqrt(3) on every layer, output included: the spectral proxy
    torch's default Linear / Conv2d init has (uniform, std 1 / sqrt(3 n): (sqrt(m) + sqrt(n)) /
    sqrt(3 n) = (1 + sqrt(m/n)) / sqrt(3)), so a pinned layer stays at the scale plain BP starts
    from. Measured on freshly built networks: the proxy of each layer's init weights."""
    torch.manual_seed(0)
    net = build_network(spec)
    fan, init = layer_gains(net, "fan"), layer_gains(net, "fan-init")
    assert [i / f for i, f in zip(init, fan)] == pytest.approx([1 / math.sqrt(3)] * len(fan))
    for layer, gain in zip(weight_layers(net), init):
        # the sample std of >= 640 uniform entries is within a few % of its expectation
        assert spectral_proxy(layer.weight) == pytest.approx(gain, rel=0.06), layer
    normalize_weights(net, "fan-init")
    assert [spectral_proxy(l.weight) for l in weight_layers(net)] == pytest.approx(init, rel=1e-5)

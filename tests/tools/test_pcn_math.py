"""Meta-PCN's algebra in float64: the gradient identity with backprop, PC's energy descent, the
geometric fall of J, weight normalisation, the schedule and the depth warning."""

import math

import pytest
import torch

from cortexkit.tools.pcn.inference import (InferenceConfig, binomial_tail, bp_gradients,
                                           meta_inference, pc_inference)
from cortexkit.tools.pcn.network import NetworkSpec, build_network, fan_out_in
from cortexkit.tools.pcn.train import (depth_warning, normalize_weights, spectral_proxy,
                                       sweep_factor, warmup_cosine)

MLP = NetworkSpec("mlp", (1, 4, 4), classes=5, width=12, depth=6, activation="gelu")
# a conv/pool net: VGG-5's block structure (conv, act, max-pool) at 1/32 width, 16x16 inputs
CONV = NetworkSpec("vgg5", (3, 16, 16), classes=5, width_scale=1 / 32, activation="tanh")
CONV7 = NetworkSpec("vgg7", (3, 32, 32), classes=4, width_scale=1 / 32, activation="gelu")


def _batch(spec, n=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = build_network(spec, dtype=torch.float64)
    x = torch.randn(n, *spec.in_shape, generator=g, dtype=torch.float64)
    y = torch.randint(0, spec.classes, (n,), generator=g)
    return net, x, y


def _weights(grads):
    return grads[0::2]  # (weight, bias) per block


def _cos(a, b):
    a, b = a.flatten(), b.flatten()
    return float(a @ b / (a.norm() * b.norm()))


@pytest.mark.parametrize("spec, steps, rate", [(MLP, 9, 0.3), (CONV, 6, 0.4), (CONV7, 8, 0.55)],
                         ids=["mlp", "vgg5-conv-pool", "vgg7-pad0"])
def test_meta_pcn_gradient_is_binomially_scaled_backprop(spec, steps, rate):
    net, x, y = _batch(spec)
    meta = meta_inference(net, x, y, InferenceConfig(steps=steps, state_lr=rate), scale=1 / len(y))
    bp = bp_gradients(net, x, y, scale=1 / len(y))
    L = net.depth
    for l, (gm, gb) in enumerate(zip(_weights(meta.grads), _weights(bp.grads)), 1):
        assert abs(_cos(gm, gb) - 1) < 1e-10, l
        expected = binomial_tail(steps, rate, L - l)
        assert float(gm.norm() / gb.norm()) == pytest.approx(expected, rel=1e-9, abs=1e-12), l
    # the biases follow the same scalar
    for l, (gm, gb) in enumerate(zip(meta.grads[1::2], bp.grads[1::2]), 1):
        torch.testing.assert_close(gm, binomial_tail(steps, rate, L - l) * gb, rtol=1e-9,
                                   atol=1e-14)


@pytest.mark.parametrize("spec", [MLP, CONV], ids=["mlp", "conv"])
def test_momentum_keeps_the_gradients_collinear(spec):
    net, x, y = _batch(spec, seed=3)
    meta = meta_inference(net, x, y, InferenceConfig(steps=7, state_lr=0.2, momentum=0.6))
    bp = bp_gradients(net, x, y)
    for l, (gm, gb) in enumerate(zip(_weights(meta.grads), _weights(bp.grads)), 1):
        assert abs(_cos(gm, gb) - 1) < 1e-10, l


@pytest.mark.parametrize("spec, schedule, steps", [(MLP, "jacobi", 5), (MLP, "jacobi", 9),
                                                   (CONV, "jacobi", 4), (MLP, "sweep", 1),
                                                   (CONV, "sweep", 1)])
def test_unit_rate_and_enough_steps_give_backprop_exactly(spec, schedule, steps):
    net, x, y = _batch(spec, seed=1)
    assert steps >= net.depth - 1 or schedule == "sweep"
    meta = meta_inference(net, x, y, InferenceConfig(steps=steps, state_lr=1.0, schedule=schedule))
    bp = bp_gradients(net, x, y)
    for gm, gb in zip(meta.grads, bp.grads):
        torch.testing.assert_close(gm, gb, rtol=1e-12, atol=1e-15)


def test_too_few_steps_leave_the_bottom_layer_without_error():
    net, x, y = _batch(MLP)
    meta = meta_inference(net, x, y, InferenceConfig(steps=net.depth - 2, state_lr=1.0))
    assert float(meta.grads[0].abs().max()) == 0.0
    assert float(meta.grads[2].abs().max()) > 0.0


def test_the_state_is_the_error_itself_not_z_minus_c():
    """d_l is stored directly: a 1e-12 error survives in float32 next to O(1) activities."""
    spec = NetworkSpec("mlp", (1, 2, 2), classes=3, width=6, depth=3)
    torch.manual_seed(0)
    net = build_network(spec)
    x, y = torch.randn(4, 1, 2, 2), torch.tensor([0, 1, 2, 0])
    with torch.no_grad():
        for p in net.blocks[-1].parameters():
            p.mul_(1e-12)  # tiny feedback: hidden errors of order 1e-12
    meta = meta_inference(net, x, y, InferenceConfig(steps=4, state_lr=1.0))
    assert float(meta.errors[0].abs().max()) > 0
    bp = bp_gradients(net.double(), x.double(), y)
    assert abs(_cos(meta.grads[0].double(), bp.grads[0]) - 1) < 1e-4


def test_j_has_the_binomial_closed_form_and_falls_geometrically():
    net, x, y = _batch(MLP, seed=2)
    rate, steps = 0.35, 60
    meta = meta_inference(net, x, y, InferenceConfig(steps=steps, state_lr=rate), record=True)
    bp = bp_gradients(net, x, y, errors=True)
    L = net.depth
    delta_sq = [float(e.flatten(1).pow(2).sum()) / len(y) for e in bp.errors]
    for t in range(steps + 1):
        # residual of layer l at step t = -P(Bin(t, eta) = L - l - 1) delta_l
        closed = 0.5 * sum(_pmf(t, rate, L - l - 1) ** 2 * delta_sq[l - 1] for l in range(1, L))
        assert float(meta.objective[t]) == pytest.approx(closed, rel=1e-9, abs=1e-300)
    ratios = (meta.objective[1:] / meta.objective[:-1]).tolist()
    assert ratios[-1] == pytest.approx((1 - rate) ** 2, rel=0.25)
    assert all(r < 1 for r in ratios[20:])
    assert float(meta.objective[-1]) < 1e-8 * float(meta.objective.max())
    # one hidden layer: exactly geometric with ratio (1 - eta)^2 from the first step
    spec = NetworkSpec("mlp", (1, 4, 4), classes=5, width=12, depth=2)
    net2, x2, y2 = _batch(spec)
    j = meta_inference(net2, x2, y2, InferenceConfig(steps=12, state_lr=rate), record=True).objective
    torch.testing.assert_close(j[1:] / j[:-1], torch.full((12,), (1 - rate) ** 2,
                                                          dtype=torch.float64), rtol=1e-9, atol=0)


def _pmf(t, p, k):
    if k < 0 or k > t:
        return 0.0
    return math.comb(t, k) * p ** k * (1 - p) ** (t - k)


def test_j_reaches_zero_after_l_minus_1_unit_steps():
    net, x, y = _batch(MLP)
    j = meta_inference(net, x, y, InferenceConfig(steps=net.depth + 1, state_lr=1.0),
                       record=True).objective
    assert float(j[0]) > 0
    assert float(j[net.depth - 1:].abs().max()) < 1e-25


@pytest.mark.parametrize("spec", [MLP, CONV], ids=["mlp", "conv"])
def test_pc_energy_never_increases_for_small_rates(spec):
    net, x, y = _batch(spec, seed=4)
    res = pc_inference(net, x, y, InferenceConfig(steps=40, state_lr=0.02), record=True)
    f = res.objective
    assert f.shape == (41,)
    diffs = f[1:] - f[:-1]
    assert float(diffs.max()) <= 1e-12
    assert float(f[-1]) < float(f[0])
    # and its hidden errors start at zero (forward initialisation) and grow
    assert float(res.trace[0, :-1].abs().max()) == 0.0
    assert float(res.trace[-1, :-1].min()) > 0.0


def test_pc_without_inference_learns_only_the_top_layer_as_backprop():
    """Forward-initialised latents have zero hidden errors: with T = 0 PC's top gradient is BP's
    and every hidden layer's is zero; one step moves the layer below the top."""
    net, x, y = _batch(MLP, seed=5)
    pc = pc_inference(net, x, y, InferenceConfig(steps=0))
    bp = bp_gradients(net, x, y)
    torch.testing.assert_close(pc.grads[-2], bp.grads[-2], rtol=1e-12, atol=1e-15)
    assert all(float(g.abs().max()) == 0.0 for g in pc.grads[:-2])
    one = pc_inference(net, x, y, InferenceConfig(steps=1, state_lr=0.1))
    assert float(one.grads[-4].abs().max()) > 0 and float(one.grads[-6].abs().max()) == 0.0


def test_ipc_updates_weights_at_every_step():
    net, x, y = _batch(MLP)
    calls = []
    pc_inference(net, x, y, InferenceConfig(steps=5, state_lr=0.1), weight_step=calls.append)
    assert len(calls) == 5
    assert len(calls[0]) == len(list(net.parameters()))


@pytest.mark.parametrize("spec", [MLP, CONV, CONV7], ids=["mlp", "vgg5", "vgg7"])
@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_normalisation_sets_the_spectral_proxy(spec, gain):
    net, _, _ = _batch(spec)
    biases = [b.layer.bias.clone() for b in net.blocks]
    normalize_weights(net, gain)
    for block, bias in zip(net.blocks, biases):
        w = block.layer.weight
        m, n = fan_out_in(w)
        if w.dim() == 4:
            assert n == w.shape[1] * w.shape[2] * w.shape[3]  # kernel area in the fan-in
        assert (math.sqrt(m) + math.sqrt(n)) * float(w.detach().std(unbiased=False)) == pytest.approx(
            gain, rel=1e-12)
        assert spectral_proxy(w) == pytest.approx(gain, rel=1e-12)
        assert torch.equal(block.layer.bias, bias)


def test_normalised_gaussian_matrix_has_unit_spectral_norm():
    torch.manual_seed(0)
    spec = NetworkSpec("mlp", (1, 16, 16), classes=128, width=384, depth=2)
    net = build_network(spec, dtype=torch.float64)
    with torch.no_grad():
        for b in net.blocks:
            b.layer.weight.normal_()
    normalize_weights(net)
    for b in net.blocks:
        assert float(torch.linalg.matrix_norm(b.layer.weight, 2)) == pytest.approx(1.0, abs=0.1)


def test_weight_clip_bounds_entries():
    net, _, _ = _batch(MLP)
    normalize_weights(net, 1.0, clip=0.01)
    assert max(float(b.layer.weight.abs().max()) for b in net.blocks) <= 0.01


def test_warmup_cosine_schedule():
    f = warmup_cosine(100, 0.1)
    assert f(0) == pytest.approx(1.0)
    assert f(10) == pytest.approx(1.1)
    assert f(100) == pytest.approx(0.1)
    values = [f(s) for s in range(10, 101)]
    assert all(a >= b for a, b in zip(values, values[1:]))


def test_depth_warning():
    deep = InferenceConfig(steps=20, state_lr=0.1)
    message = depth_warning(16, "meta-pcn", deep)
    assert message is not None and "16 layers" in message
    assert depth_warning(16, "meta-pcn", InferenceConfig(steps=16, state_lr=1.0)) is None
    assert depth_warning(16, "meta-pcn", InferenceConfig(steps=1, state_lr=1.0,
                                                         schedule="sweep")) is None
    # a sweep at a small rate moves each layer only eta_x of the way: the bottom gets ~eta^15
    slow = depth_warning(16, "meta-pcn", InferenceConfig(steps=2, state_lr=0.1, schedule="sweep"))
    assert slow is not None and "2 top-down sweeps at eta_x = 0.1" in slow
    assert depth_warning(16, "bp", deep) is None
    assert depth_warning(4, "pc", InferenceConfig(steps=8, state_lr=0.5)) is None
    assert binomial_tail(20, 0.1, 15) < 1e-10


def test_binomial_tail_sums_pmf():
    for t, p, k in [(9, 0.3, 4), (5, 1.0, 5), (5, 1.0, 6), (3, 0.5, 0)]:
        assert binomial_tail(t, p, k) == pytest.approx(sum(_pmf(t, p, j) for j in range(k, t + 1)))


def _naive_meta_errors(net, x, y, cfg):
    """Reference: every g_l recomputed every step from a plain forward graph, no skipping."""
    from cortexkit.tools.pcn.inference import forward_point, top_error

    point = forward_point(net, x)
    L = len(point.outputs)
    d = [torch.zeros_like(o) for o in point.outputs[:-1]] + [top_error(point.outputs[-1].detach(), y, "ce")]
    v = [torch.zeros_like(o) for o in d[:-1]]
    for _ in range(cfg.steps):
        order = [list(range(L - 1))] if cfg.schedule == "jacobi" else [[k] for k in reversed(range(L - 1))]
        for layers in order:
            gs = torch.autograd.grad([point.outputs[k + 1] for k in layers],
                                     [point.inputs[k + 1] for k in layers],
                                     grad_outputs=[d[k + 1] for k in layers], retain_graph=True)
            for k, g in zip(layers, gs):
                v[k] = cfg.momentum * v[k] + (d[k] - g)
                d[k] = d[k] - cfg.state_lr * v[k]
    return d


@pytest.mark.parametrize("rate, momentum, schedule", [(0.3, 0.0, "jacobi"), (0.4, 0.5, "jacobi"),
                                                      (1.0, 0.0, "jacobi"), (0.6, 0.2, "sweep"),
                                                      (1.0, 0.0, "sweep")])
def test_skipping_settled_layers_matches_the_naive_loop(rate, momentum, schedule):
    net, x, y = _batch(CONV, seed=6)
    cfg = InferenceConfig(steps=6, state_lr=rate, momentum=momentum, schedule=schedule)
    fast = meta_inference(net, x, y, cfg).errors
    for a, b in zip(fast, _naive_meta_errors(net, x, y, cfg)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)


RESNET = NetworkSpec("resnet18", (3, 8, 8), classes=4, width_scale=1 / 16, activation="gelu")


def test_resnet18_shape():
    from cortexkit.tools.pcn.network import weight_layers

    net = build_network(NetworkSpec("resnet18", (3, 32, 32), classes=10))
    assert net.depth == 10  # stem, 8 residual blocks, head
    assert net(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    # stem + 8 x 2 convolutions + 3 projection shortcuts + the head
    assert len(weight_layers(net)) == 21
    assert [tuple(b.conv1.weight.shape[:2]) for b in net.blocks[1:9]][2] == (128, 64)


def test_resnet_blocks_follow_the_binomial_identity_skips_included():
    """A residual block is one f_l: its VJP carries the skip, and every parameter of block l
    (both convolutions, the shortcut) gets backprop's gradient times P(Bin(T, eta) >= L - l)."""
    net, x, y = _batch(RESNET, n=5, seed=7)
    steps, rate, L = 12, 0.5, net.depth
    meta = meta_inference(net, x, y, InferenceConfig(steps=steps, state_lr=rate), scale=1 / 5)
    bp = bp_gradients(net, x, y, scale=1 / 5)
    owner = [l for l, block in enumerate(net.blocks, 1) for _ in block.parameters()]
    assert len(owner) == len(meta.grads) == len(bp.grads)
    for l, gm, gb in zip(owner, meta.grads, bp.grads):
        torch.testing.assert_close(gm, binomial_tail(steps, rate, L - l) * gb, rtol=1e-9,
                                   atol=1e-15)
    assert float(meta.grads[0].abs().max()) > 0
    exact = meta_inference(net, x, y, InferenceConfig(steps=L - 1, state_lr=1.0), scale=1 / 5)
    for gm, gb in zip(exact.grads, bp.grads):
        torch.testing.assert_close(gm, gb, rtol=1e-12, atol=1e-15)


def test_normalisation_reaches_every_convolution_of_a_residual_block():
    from cortexkit.tools.pcn.network import weight_layers

    net, _, _ = _batch(RESNET)
    biases = [m.bias.clone() for m in weight_layers(net)]
    normalize_weights(net, 4 / 3)
    for layer, bias in zip(weight_layers(net), biases):
        assert spectral_proxy(layer.weight) == pytest.approx(4 / 3, rel=1e-12)
        assert torch.equal(layer.bias, bias)


@pytest.mark.parametrize("rate, momentum, steps", [(0.3, 0.0, 3), (0.6, 0.4, 2), (1.0, 0.0, 1)])
def test_sweep_factor_is_the_bottom_layers_share_of_backprop(rate, momentum, steps):
    """The scalar chain behind the sweep warning against real sweeps: every layer's error is
    backprop's times the chain's factor (collinear, as with Jacobi)."""
    net, x, y = _batch(MLP, seed=8)
    cfg = InferenceConfig(steps=steps, state_lr=rate, momentum=momentum, schedule="sweep")
    meta = meta_inference(net, x, y, cfg)
    bp = bp_gradients(net, x, y, errors=True)
    L = net.depth
    for l in range(1, L):
        factor = sweep_factor(steps, rate, momentum, L - l)
        torch.testing.assert_close(meta.errors[l - 1], factor * bp.errors[l - 1], rtol=1e-9,
                                   atol=1e-15)


def test_augmentation_is_a_flip_and_a_padded_crop_of_each_image():
    """Every augmented image equals one of the 2 x 9 x 9 flip/offset crops of its zero-padded
    original (pad 4, size kept), and the draws vary over the batch."""
    import torch.nn.functional as F

    from cortexkit.tools.pcn.train import augment_batch

    x = torch.randn(16, 3, 8, 8, dtype=torch.float64)
    out = augment_batch(x, torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    found = []
    for i in range(len(x)):
        matches = [(f, dy, dx) for f in (False, True) for dy in range(9) for dx in range(9)
                   if torch.equal(out[i], F.pad(x[i].flip(2) if f else x[i], (4,) * 4)
                                  [:, dy:dy + 8, dx:dx + 8])]
        assert matches, i
        found.append(matches[0])
    assert len({f for f, _, _ in found}) == 2 and len({(dy, dx) for _, dy, dx in found}) > 4

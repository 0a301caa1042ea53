"""Networks as stacks of blocks: z_0 = x, z_l = f_l(z_{l-1}), l = 1..L.

A block is one weight layer (Linear or Conv2d) followed by an activation and, in VGG blocks, a
2x2 max-pool; the output block L is linear (its output u_L are the logits). Predictive coding puts
one latent (or one error variable) on every block output, so the block is the unit every method
here works with: ``net.blocks[l - 1]`` is f_l.

Architectures (``arch``):

- ``mlp``: ``depth`` weight layers (depth >= 1): Linear(in, width), depth - 2 x Linear(width,
  width), Linear(width, classes); the input image is flattened.
- ``vgg5``, ``vgg7``: the PCX benchmark definitions (Pinchetti et al., ICLR 2025): VGG-5 =
  conv 128, 256, 512, 512 (3x3, pad 1, each followed by the activation and max-pool 2) + Linear;
  VGG-7 = 128 (pool), 128, 256 (pool), 256 (pad 0), 512 (pool), 512 (pad 0) + Linear.
- ``vgg9``, ``vgg11``, ``vgg13``: PCX publishes no such models. Ours keep VGG-5/7's style
  (3x3 convs, pad 1, max-pool 2 after a pair) and count weight layers as the name says:
  VGG-9 = 128, 128P, 256, 256P, 512, 512P, 512, 512P + Linear; VGG-11/13 = the standard CIFAR
  VGG-11/13 convolution stacks (64 .. 512 channels) + Linear(512, 512), Linear(512, 512),
  Linear(512, classes).

- ``resnet18``: the CIFAR ResNet-18 (He et al. 2016, CIFAR stem): conv 3x3 64 + activation, then
  8 basic residual blocks f(z) = act(conv(act(conv(z))) + shortcut(z)) of 64, 64, 128, 128, 256,
  256, 512, 512 channels (stride 2 entering 128, 256, 512; shortcut = identity, or a 1x1 conv of
  stride 2 where the shape changes), then global average pooling + Linear. Each residual block is
  ONE block f_l (one latent on its output: L = 10), so the methods see a 10-layer chain whose VJPs
  include the skips. No BatchNorm: the sources do not say how the paper handles it, and batch
  statistics would couple the samples of PC's per-sample energies.

``width_scale`` multiplies every convolution's channel count (reduced-width runs on CPU).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch import nn

ACTIVATIONS = ("gelu", "relu", "tanh", "hardtanh", "leaky-relu", "identity")
ARCHS = ("mlp", "vgg5", "vgg7", "vgg9", "vgg11", "vgg13", "resnet18")

# (channels, padding, pool) per convolution; the output Linear follows.
_VGG = {
    "vgg5": [(128, 1, True), (256, 1, True), (512, 1, True), (512, 1, True)],
    "vgg7": [(128, 1, True), (128, 1, False), (256, 1, True), (256, 0, False), (512, 1, True),
             (512, 0, False)],
    "vgg9": [(128, 1, False), (128, 1, True), (256, 1, False), (256, 1, True), (512, 1, False),
             (512, 1, True), (512, 1, False), (512, 1, True)],
    "vgg11": [(64, 1, True), (128, 1, True), (256, 1, False), (256, 1, True), (512, 1, False),
              (512, 1, True), (512, 1, False), (512, 1, True)],
    "vgg13": [(64, 1, False), (64, 1, True), (128, 1, False), (128, 1, True), (256, 1, False),
              (256, 1, True), (512, 1, False), (512, 1, True), (512, 1, False), (512, 1, True)],
}
_VGG_HEAD = {"vgg5": (), "vgg7": (), "vgg9": (), "vgg11": (512, 512), "vgg13": (512, 512)}


def activation(name: str) -> nn.Module:
    """The activation module of ``name`` (one of :data:`ACTIVATIONS`)."""
    table = {"gelu": nn.GELU, "relu": nn.ReLU, "tanh": nn.Tanh, "hardtanh": nn.Hardtanh,
             "leaky-relu": nn.LeakyReLU, "identity": nn.Identity}
    if name not in table:
        raise ValueError(f"unknown activation '{name}' (one of {', '.join(ACTIVATIONS)})")
    return table[name]()


@dataclass
class NetworkSpec:
    """What a network is: enough to rebuild it from an artifact."""

    arch: str = "mlp"
    in_shape: tuple[int, int, int] = (1, 28, 28)   # (channels, height, width)
    classes: int = 10
    width: int = 128                               # MLP hidden width
    depth: int = 4                                 # MLP weight layers L
    width_scale: float = 1.0                       # VGG channel multiplier
    activation: str = "gelu"
    class_names: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["in_shape"] = list(self.in_shape)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "NetworkSpec":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if "in_shape" in known:
            known["in_shape"] = tuple(int(v) for v in known["in_shape"])
        return cls(**known)


class Block(nn.Module):
    """f_l(z) = pool(act(layer(flatten(z)))): one weight layer, its activation, an optional pool.

    ``z``: (batch, C, H, W) for a conv block, (batch, features) or any shape (flattened) for a
    linear block. The output block has ``act=None`` and no pool.
    """

    def __init__(self, layer: nn.Module, act: str | None, pool: bool = False,
                 global_pool: bool = False):
        super().__init__()
        self.layer = layer
        self.act = activation(act) if act else nn.Identity()
        self.pool = nn.MaxPool2d(2, 2) if pool else nn.Identity()
        self.flatten = isinstance(layer, nn.Linear)
        self.global_pool = global_pool   # average over (H, W) first (ResNet head)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        if self.global_pool and z.dim() == 4:
            z = z.mean(dim=(2, 3))
        if self.flatten and z.dim() > 2:
            z = z.flatten(1)
        return self.pool(self.act(self.layer(z)))

    @property
    def weight(self) -> torch.Tensor:
        return self.layer.weight


class ResidualBlock(nn.Module):
    """f_l(z) = act(conv2(act(conv1(z))) + shortcut(z)): a ResNet basic block without BatchNorm.

    ``z``: (batch, C_in, H, W) -> (batch, C_out, H / stride, W / stride); the shortcut is the
    identity, or a 1x1 convolution of the same stride when the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, act: str):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.act1, self.act2 = activation(act), activation(act)
        self.shortcut = (nn.Identity() if stride == 1 and in_channels == out_channels
                         else nn.Conv2d(in_channels, out_channels, 1, stride=stride))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.act2(self.conv2(self.act1(self.conv1(z))) + self.shortcut(z))


def weight_layers(module: nn.Module) -> list[nn.Module]:
    """Every Linear and Conv2d inside ``module`` (one per plain block; two or three per residual
    block), the layers weight normalisation and initialisation act on."""
    return [m for m in module.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]


class Network(nn.Module):
    """A stack of :class:`Block` s (and :class:`ResidualBlock` s); ``forward(x)`` (batch, C, H, W)
    -> logits (batch, classes)."""

    def __init__(self, spec: NetworkSpec):
        super().__init__()
        self.spec = spec
        self.blocks = nn.ModuleList(_build_blocks(spec))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x

    def activities(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The forward activities [z_1, ..., z_L] (z_L = logits)."""
        out = []
        for block in self.blocks:
            x = block(x)
            out.append(x)
        return out

    @property
    def depth(self) -> int:
        return len(self.blocks)


def _build_blocks(spec: NetworkSpec) -> list[nn.Module]:
    channels, height, width = spec.in_shape
    act = spec.activation
    if spec.arch == "mlp":
        if spec.depth < 1:
            raise ValueError(f"an MLP needs depth >= 1 weight layers, got {spec.depth}")
        sizes = [channels * height * width] + [spec.width] * (spec.depth - 1) + [spec.classes]
        return [Block(nn.Linear(sizes[i], sizes[i + 1]), act if i < spec.depth - 1 else None)
                for i in range(spec.depth)]
    if spec.arch == "resnet18":
        return _resnet18(spec)
    if spec.arch not in _VGG:
        raise ValueError(f"unknown architecture '{spec.arch}' (one of {', '.join(ARCHS)})")
    blocks, c, h, w = [], channels, height, width
    for out_channels, pad, pool in _VGG[spec.arch]:
        out_channels = max(1, int(round(out_channels * spec.width_scale)))
        blocks.append(Block(nn.Conv2d(c, out_channels, 3, padding=pad), act, pool))
        c, h, w = out_channels, h + 2 * pad - 2, w + 2 * pad - 2
        if pool:
            h, w = h // 2, w // 2
        if h < 1 or w < 1:
            raise ValueError(f"{spec.arch} needs larger images than {spec.in_shape[1]}x"
                             f"{spec.in_shape[2]} (the feature map vanishes)")
    features = c * h * w
    for hidden in _VGG_HEAD[spec.arch]:
        hidden = max(1, int(round(hidden * spec.width_scale)))
        blocks.append(Block(nn.Linear(features, hidden), act))
        features = hidden
    blocks.append(Block(nn.Linear(features, spec.classes), None))
    return blocks


def _resnet18(spec: NetworkSpec) -> list[nn.Module]:
    channels, height, width = spec.in_shape
    if min(height, width) < 8:
        raise ValueError(f"resnet18 needs images of at least 8x8, got {height}x{width}")

    def scaled(c: int) -> int:
        return max(1, int(round(c * spec.width_scale)))

    c = scaled(64)
    blocks: list[nn.Module] = [Block(nn.Conv2d(channels, c, 3, padding=1), spec.activation)]
    for out_channels, stride in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1),
                                 (512, 2), (512, 1)]:
        blocks.append(ResidualBlock(c, scaled(out_channels), stride, spec.activation))
        c = scaled(out_channels)
    blocks.append(Block(nn.Linear(c, spec.classes), None, global_pool=True))
    return blocks


def build_network(spec: NetworkSpec, *, dtype=torch.float32, init: str = "default") -> Network:
    """A freshly initialised network (torch's default init, or ``init='kaiming'`` normal)."""
    net = Network(spec).to(dtype)
    if init == "kaiming":
        for layer in weight_layers(net):
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            nn.init.zeros_(layer.bias)
    elif init != "default":
        raise ValueError(f"unknown init '{init}' (default or kaiming)")
    return net


def fan_out_in(weight: torch.Tensor) -> tuple[int, int]:
    """(m, n) = (fan-out, fan-in) of a Linear (out, in) or Conv2d (out, in, kH, kW) weight;
    a convolution's fan-in includes the kernel area."""
    return int(weight.shape[0]), int(weight[0].numel())

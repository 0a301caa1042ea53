"""The defaults that follow the network: inference steps, state rate, weight normalisation and its
gain, resolved from the method and the architecture (no torch import: ``--print-config`` and
``--help`` stay fast).

The rule (measured in benchmarks/train_pcn/RESULTS.md, MNIST and the CIFAR-10 subset chose it,
two image sets built from package data checked it):

- Meta-PCN: eta_x = 1, Jacobi steps, T = L - 1, so the output error reaches the first layer
  (information moves one layer per Jacobi step; with eta_x = 1 and T >= L - 1 the weight
  gradients are backprop's exactly, and the settled layers cost nothing more, so a larger T
  would only repeat work).
- PC and iPC: PCX's state rate eta_x = 0.1 and T = max(8, L - 1) steps: the baselines as
  published; at that rate the error reaches layer l with weight about P(Bin(T, 0.1) >= L - l),
  which is the depth failure the paper contrasts Meta-PCN with (train warns about it).
- Weight normalisation on for Meta-PCN (the paper's regulariser), off for the others (BP + WN
  is --method bp --weight-norm), at the per-layer gain rule :data:`DEFAULT_GAIN`.
"""

from __future__ import annotations

# weight layers (blocks) of each fixed architecture; an MLP has --depth
BLOCKS = {"vgg5": 5, "vgg7": 7, "vgg9": 9, "vgg11": 11, "vgg13": 13, "resnet18": 10}

# per-layer gain rules: 1 + sqrt(m/n) times (1 / rms(phi))^p for the layers that feed the
# activation phi and times s for the output layer; (p, s) of each rule; s None: the output
# layer is not normalised (its norm is learnt, as plain BP's)
GAIN_RULE_PARAMS = {"fan": (0.0, 1.0), "fan-act": (1.0, 1.0), "fan-sqrt-act": (0.5, 1.0),
                    "fan-act-readout": (1.0, 0.125), "fan-sqrt-act-readout": (0.5, 1 / 3),
                    "fan-free-readout": (0.0, None), "fan-init": (0.0, 1.0)}
# a factor on every layer's gain (output included) of a rule: fan-init = fan / sqrt(3), the
# proxy torch's default Linear / Conv init has in every layer (std 1 / sqrt(3 n), so
# (sqrt(m) + sqrt(n)) / sqrt(3 n) = (1 + sqrt(m/n)) / sqrt(3)), the scale plain BP's hidden
# layers keep through training (pcn21); pcn22
GAIN_RULE_SCALE = {"fan-init": 1 / 3 ** 0.5}
GAIN_RULES = tuple(GAIN_RULE_PARAMS)
DEFAULT_GAIN = "fan"
# after every weight step: pin = normalise exactly to the gain (the paper's regulariser as
# written); cap = scale down only a layer whose spectral proxy exceeds the gain (pcn17); learn =
# pin at a per-layer gain that is itself trained (Salimans & Kingma's w = g v / ||v||; pcn21)
WEIGHT_NORM_MODES = ("pin", "cap", "learn")
DEFAULT_WEIGHT_NORM_MODE = "pin"
PC_STATE_LR = 0.1
PC_MIN_STEPS = 8


def block_count(arch: str, depth: int) -> int:
    """L, the number of blocks (latent layers, output included) of ``arch``."""
    return depth if arch == "mlp" else BLOCKS[arch]


def default_steps(method: str, blocks: int) -> int:
    """T: L - 1 for Meta-PCN, max(8, L - 1) for PC and iPC, 0 for backprop."""
    if method == "bp":
        return 0
    if method == "meta-pcn":
        return max(0, blocks - 1)
    return max(PC_MIN_STEPS, blocks - 1)


def default_state_lr(method: str) -> float:
    """eta_x: 1 for Meta-PCN (each step copies the settled target), PCX's 0.1 for PC / iPC
    (backprop has no states; 1 is stored so the config has no null)."""
    return PC_STATE_LR if method in ("pc", "ipc") else 1.0


def default_weight_norm(method: str) -> bool:
    return method == "meta-pcn"


BASELINES = ("bp+wn", "bp", "none")


def same_as_bp_wn(method: str, blocks: int, steps: int, state_lr: float, momentum: float,
                  schedule: str, loss: str, weight_norm: bool) -> bool:
    """Meta-PCN whose weight gradients are BP + WN's exactly: eta_x 1, no state momentum, Jacobi
    steps, T >= L - 1, cross-entropy, weight normalisation on (the gradient identity above)."""
    return (method == "meta-pcn" and weight_norm and state_lr == 1.0 and momentum == 0.0
            and schedule == "jacobi" and loss == "ce" and steps >= blocks - 1)


def default_baseline(method: str, same: bool) -> str:
    """The first-try model ``train`` scores beside the method on a validation split: BP + WN,
    the baseline the Meta-PCN paper contrasts; plain BP where the method is BP + WN's exact
    computation (``same``, Meta-PCN at its defaults), and none for BP itself."""
    if method == "bp":
        return "none"
    return "bp" if same else "bp+wn"

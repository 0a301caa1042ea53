"""CodeBrain's TFDual tokenizer: a LaBraM-style encoder, two heads, two NormEMA codebooks and
two decoders (training only).

Shapes: ``x`` (batch, channels C, patches P, patch_size L=200) in units of 100 uV. Patch tokens
are in channel-major order, token ``c * P + p``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cortexkit.tools.eeg.quantizer import NormEMAQuantizer


@dataclass
class TokenizerConfig:
    """Architecture of a tokenizer. Defaults are the paper's (LaBraM-size encoder)."""

    channels: int = 19
    max_patches: int = 30
    patch_size: int = 200
    dim: int = 200
    depth: int = 12
    heads: int = 10
    mlp_ratio: float = 4.0
    decoder_depth: int = 3
    stem: str = "time+freq-sum"  # or "time"
    code_dim: int = 32
    codebook_size: int = 4096
    codebooks: str = "dual"  # "dual" (TFDual) or "frequency" (one codebook, LaBraM's design)
    beta: float = 1.0
    decay: float = 0.99
    kmeans_init: bool = False
    dead_code_threshold: float = 0.0
    dropout: float = 0.0  # residual dropout in the encoder's blocks (the paper: none)
    # not the paper's: a second head on the temporal decoder that predicts each patch's amplitude
    # spectrum |rfft| (orthonormal, the L//2+1 bins) from the temporal tokens; when present it is
    # the tokens-only amplitude read-out (analysis.Reconstruction), instead of |rfft(x_hat)|
    amplitude_head: bool = False
    # with amplitude_head: the amplitude comes from a decoder of its own (decoder_a: embed, backbone
    # and head like decoder_t's) fed the temporal codes detached, so its term trains that decoder
    # only and the tokens and the waveform train as without it (issue 33 eeg20, candidate adet)
    amplitude_head_detach: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TokenizerConfig":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


PRESETS = {
    # the paper's: 12 x 200, 10 heads, two 3-layer decoders
    "base": dict(dim=200, depth=12, heads=10, decoder_depth=3),
    # CPU presets: same width and stems, fewer layers / narrower
    "small": dict(dim=200, depth=4, heads=10, decoder_depth=2),
    "tiny": dict(dim=64, depth=2, heads=4, decoder_depth=1),
}


# ---------------------------------------------------------------------------------------------
# building blocks

class TemporalConv(nn.Module):
    """LaBraM's patch stem: (B, C, P, L) -> (B, C*P, 8 * L/8) via three GroupNorm-GELU convs."""

    def __init__(self, patch_size: int = 200):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, (1, 15), stride=(1, 8), padding=(0, 7)), nn.GroupNorm(4, 8), nn.GELU(),
            nn.Conv2d(8, 8, (1, 3), padding=(0, 1)), nn.GroupNorm(4, 8), nn.GELU(),
            nn.Conv2d(8, 8, (1, 3), padding=(0, 1)), nn.GroupNorm(4, 8), nn.GELU())
        self.out_dim = 8 * ((patch_size - 1) // 8 + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, p, length = x.shape
        h = self.net(x.reshape(b, 1, c * p, length))  # (B, 8, C*P, L/8)
        return h.permute(0, 2, 3, 1).reshape(b, c * p, -1)


class PatchEmbed(nn.Module):
    """Temporal conv stem, plus (``time+freq-sum``) a linear map of |rfft(patch)| (norm forward)."""

    def __init__(self, config: TokenizerConfig):
        super().__init__()
        self.conv = TemporalConv(config.patch_size)
        self.proj = (nn.Identity() if self.conv.out_dim == config.dim
                     else nn.Linear(self.conv.out_dim, config.dim))
        self.freq = (nn.Linear(config.patch_size // 2 + 1, config.dim)
                     if config.stem == "time+freq-sum" else None)
        if config.stem not in ("time", "time+freq-sum"):
            raise ValueError(f"stem must be 'time' or 'time+freq-sum', not {config.stem!r}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, P, L) -> (B, C*P, dim)."""
        h = self.proj(self.conv(x))
        if self.freq is not None:
            spectrum = torch.fft.rfft(x.float(), dim=-1, norm="forward").abs()
            h = h + self.freq(spectrum.to(h.dtype)).reshape(h.shape)
        return h


class Attention(nn.Module):
    """Multi-head self-attention with biases on q and v only (LaBraM), fused by SDPA."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"width {dim} is not divisible by {heads} heads")
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(dim))
        self.v_bias = nn.Parameter(torch.zeros(dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        bias = torch.cat([self.q_bias, torch.zeros_like(self.v_bias), self.v_bias])
        qkv = F.linear(x, self.qkv.weight, bias).reshape(b, n, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(LN x); x + mlp(LN x)."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float, dropout: float = 0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x)))
        return x + self.drop(self.mlp(self.norm2(x)))


class Backbone(nn.Module):
    """CLS token + channel embeddings (slot 0 = CLS, channel i = slot i+1) + time embeddings,
    pre-LN blocks, LayerNorm of the patch tokens. (B, C*P, dim) -> (B, C*P, dim)."""

    def __init__(self, channels: int, max_patches: int, dim: int, depth: int, heads: int,
                 mlp_ratio: float, dropout: float = 0.0):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, channels + 1, dim))
        self.time_embed = nn.Parameter(torch.zeros(1, max_patches, dim))
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio, dropout) for _ in range(depth))
        self.fc_norm = nn.LayerNorm(dim, eps=1e-6)
        for param in (self.cls_token, self.pos_embed, self.time_embed):
            nn.init.trunc_normal_(param, std=0.02)
        self.apply(_init_weights)
        for layer, block in enumerate(self.blocks, start=1):  # LaBraM's fix_init_weight
            block.attn.proj.weight.data.div_(math.sqrt(2.0 * layer))
            block.mlp[2].weight.data.div_(math.sqrt(2.0 * layer))

    def forward(self, h: torch.Tensor, channels: int, patches: int) -> torch.Tensor:
        b, n, d = h.shape
        if patches > self.time_embed.shape[1]:
            raise ValueError(f"{patches} patches per window, the model has "
                             f"{self.time_embed.shape[1]} time slots")
        pos = self.pos_embed[:, 1:channels + 1, None, :].expand(1, channels, patches, d)
        time = self.time_embed[:, None, :patches, :].expand(1, channels, patches, d)
        h = h + (pos + time).reshape(1, channels * patches, d)
        cls = self.cls_token.expand(b, 1, d) + self.pos_embed[:, :1]
        x = torch.cat([cls, h], dim=1)
        for block in self.blocks:
            x = block(x)
        return self.fc_norm(x[:, 1:])


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def _head(dim: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, out))


class Encoder(nn.Module):
    """Patch embedding + backbone: x (B, C, P, L) -> features (B, C*P, dim)."""

    def __init__(self, config: TokenizerConfig):
        super().__init__()
        self.patch_embed = PatchEmbed(config)
        self.backbone = Backbone(config.channels, config.max_patches, config.dim, config.depth,
                                 config.heads, config.mlp_ratio, config.dropout)
        self.patch_embed.apply(_init_weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, c, p, _ = x.shape
        return self.backbone(self.patch_embed(x), c, p)


class Decoder(nn.Module):
    """1x1 conv (a per-token linear map) of the codes, a backbone, and output heads.
    codes (B, C*P, code_dim) -> {head: (B, C, P, patch_size)}."""

    def __init__(self, config: TokenizerConfig, heads: tuple[str, ...]):
        super().__init__()
        self.embed = nn.Linear(config.code_dim, config.dim)
        self.backbone = Backbone(config.channels, config.max_patches, config.dim,
                                 config.decoder_depth, config.heads, config.mlp_ratio)
        self.heads = nn.ModuleDict({name: _head(config.dim, config.patch_size) for name in heads})
        self.embed.apply(_init_weights)
        self.heads.apply(_init_weights)

    def forward(self, codes: torch.Tensor, channels: int, patches: int) -> dict[str, torch.Tensor]:
        h = self.backbone(self.embed(codes), channels, patches)
        return {name: head(h).reshape(h.shape[0], channels, patches, -1)
                for name, head in self.heads.items()}


class TFDualTokenizer(nn.Module):
    """Encoder, temporal and frequency heads + codebooks, and the two training decoders.

    ``codebooks="frequency"`` keeps only the frequency head, codebook and decoder (LaBraM's
    single-codebook design, the paper's ablation)."""

    def __init__(self, config: TokenizerConfig):
        super().__init__()
        self.config = config
        self.encoder = Encoder(config)
        quantizer = dict(beta=config.beta, decay=config.decay, kmeans_init=config.kmeans_init,
                         dead_code_threshold=config.dead_code_threshold)
        self.dual = config.codebooks == "dual"
        if config.codebooks not in ("dual", "frequency"):
            raise ValueError(f"codebooks must be 'dual' or 'frequency', not {config.codebooks!r}")
        self.head_f = _head(config.dim, config.code_dim)
        self.quantize_f = NormEMAQuantizer(config.codebook_size, config.code_dim, **quantizer)
        self.decoder_f = Decoder(config, ("amplitude", "phase"))
        if self.dual:
            self.head_t = _head(config.dim, config.code_dim)
            self.quantize_t = NormEMAQuantizer(config.codebook_size, config.code_dim, **quantizer)
            shared = config.amplitude_head and not config.amplitude_head_detach
            self.decoder_t = Decoder(config, ("signal", "signal_amplitude") if shared else ("signal",))
        for module in (self.head_f, getattr(self, "head_t", None)):
            if module is not None:
                module.apply(_init_weights)
        if self.dual and config.amplitude_head and config.amplitude_head_detach:
            # built last, so every other parameter starts as without it (same random stream)
            self.decoder_a = Decoder(config, ("signal_amplitude",))

    def quantize(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """x (B, C, P, L) -> features (B, C*P, dim); per stream s in (t, f): z_q_s (B, C*P, code_dim),
        loss_s (scalar commitment), token_s (B, C*P) int64."""
        features = self.encoder(x)
        out = {"features": features}
        streams = (("t", self.head_t, self.quantize_t),) if self.dual else ()
        for name, head, quantizer in streams + (("f", self.head_f, self.quantize_f),):
            z_q, loss, idx = quantizer(head(features))
            out[f"z_q_{name}"], out[f"loss_{name}"], out[f"token_{name}"] = z_q, loss, idx
        return out

    def decode(self, codes: dict[str, torch.Tensor], channels: int, patches: int):
        """Codes per stream (B, C*P, code_dim) -> signal (B, C, P, L) and standardised amplitude
        and phase of the 200-point FFT (B, C, P, L); with ``config.amplitude_head`` also
        ``signal_amplitude`` (B, C, P, L), whose first L//2+1 values predict |rfft| (orthonormal)."""
        out = dict(self.decoder_f(codes["f"], channels, patches))
        if self.dual:
            out.update(self.decoder_t(codes["t"], channels, patches))
            if hasattr(self, "decoder_a"):  # the tokens get no gradient from the amplitude read-out
                out.update(self.decoder_a(codes["t"].detach(), channels, patches))
        return out

    @torch.no_grad()
    def encode(self, x: torch.Tensor, precision: str = "fp32") -> dict[str, torch.Tensor]:
        """Tokens only: one encoder pass, no decoders or contrastive term.
        x (B, C, P, L) -> token_t, token_f (B, C, P) int64. ``precision="bf16"`` runs the
        transformer under bfloat16 autocast (AMX/AVX-512 CPUs, GPUs); heads and the nearest-code
        search stay float32, as the quantizers do in mixed-precision training."""
        if precision not in ("fp32", "bf16"):
            raise ValueError(f"precision must be fp32 or bf16, got {precision!r}")
        b, c, p, _ = x.shape
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            features = self.encoder(x)
        features = features.float()
        out = {}
        streams = (("t", self.head_t, self.quantize_t),) if self.dual else ()
        for name, head, quantizer in streams + (("f", self.head_f, self.quantize_f),):
            z = F.normalize(head(features).float(), dim=-1)
            out[f"token_{name}"] = quantizer.nearest(z.reshape(-1, z.shape[-1])).reshape(b, c, p)
        return out

    def codewords(self, tokens: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """token_s (B, C, P) -> codes s (B, C*P, code_dim)."""
        out = {}
        for name in (("t", "f") if self.dual else ("f",)):
            tok = tokens[f"token_{name}"]
            out[name] = getattr(self, f"quantize_{name}").lookup(tok.reshape(tok.shape[0], -1))
        return out


PRESET_LR = {"base": 1e-4, "small": 1e-4, "tiny": 1e-3}


def auto_preset(patches: int, device_type: str) -> str:
    """``--preset auto``: the encoder size from the training patches (windows x channels x
    patches) and the device. On a CPU only ``tiny`` trains in minutes (a 30-epoch run on 278
    4-s windows of 19 channels: ~10 min on one loaded core, while ``base`` needs ~1 s per window
    just to encode); on a GPU ``small`` below 500k patches (it would overfit ``base``'s 9 M
    parameters) and the paper's ``base`` above."""
    if device_type != "cuda":
        return "tiny"
    return "base" if patches >= 500_000 else "small"


def auto_codebook_size(patches: int) -> int:
    """``--codebook-size auto``: the power of two nearest below patches / 16, within 256..4096
    (the paper's 4096 needs ~65k training patches to keep its codes used; LaBraM issue #37: a
    8192-code book on small data leaves 8191 codes unused)."""
    size = 1 << max(0, int(patches // 16).bit_length() - 1)
    return int(min(4096, max(256, size)))


# ``--encoder-depth auto``: the preset's, except tiny's per-patch encoder (no transformer blocks:
# a patch's codes depend on its own samples and its channel/time slot only), chosen by the
# 2026-12-06 generalisation study (benchmarks/tokenize_eeg/RESULTS.md): on two choosing splits x 2
# seeds it lowered the time NMSE ratio to k-means 1.205 -> 1.162 and trained in 0.7x the CPU time.
AUTO_ENCODER_DEPTH = {"tiny": 0}


def auto_encoder_depth(preset: str) -> int:
    """``--encoder-depth auto``: 0 for tiny, the preset's depth otherwise (base: the paper's 12)."""
    return AUTO_ENCODER_DEPTH.get(preset, PRESETS[preset]["depth"])


def resolve_auto(patches: int, device_type: str, preset, codebook_size, lr, depth="auto"):
    """The ``auto`` values of preset, codebook size, learning rate and encoder depth for
    ``patches`` training patches on ``device_type``: (preset, codebook_size, lr, depth, what was
    chosen, as phrases)."""
    chosen = []
    if preset == "auto":
        preset = auto_preset(patches, device_type)
        chosen.append(f"preset {preset}")
    if codebook_size == "auto":
        codebook_size = auto_codebook_size(patches)
        chosen.append(f"codebook size {codebook_size}")
    if lr == "auto":
        lr = PRESET_LR[preset]
        chosen.append(f"lr {lr:g}")
    if depth == "auto":
        depth = auto_encoder_depth(preset)
        chosen.append(f"encoder depth {depth}")
    return preset, codebook_size, lr, depth, chosen


def build(config: TokenizerConfig) -> TFDualTokenizer:
    return TFDualTokenizer(config)


def config_from_preset(preset: str, **overrides) -> TokenizerConfig:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    values = {**PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
    return TokenizerConfig(**values)

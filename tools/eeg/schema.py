"""The tokenize-eeg schemas, checked on read (see formats/schema.py): the tokenizer's config and
finite weights and codebooks (a NaN codebook would tokenize every window to the same id); tokens of
integer ids, one row per window, with their sources and montage; decoded signals that are finite.

Symbols: W windows, C channels, P patches per window, S source files."""

from __future__ import annotations

from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register

def _tokenizer_state(artifact) -> dict[str, tuple]:
    """The state-dict shapes of the tokenizer its 'eeg.model' config builds (no memory used)."""
    import torch

    from cortexkit.tools.eeg.model import TFDualTokenizer, TokenizerConfig

    config = TokenizerConfig.from_dict(artifact.meta_json("eeg.model"))
    with torch.device("meta"):
        model = TFDualTokenizer(config)
    return {name: tuple(value.shape) for name, value in model.state_dict().items()}


TOKENIZER = Schema(
    "eeg-tokenizer", version=1,
    metadata=("eeg.model", "eeg.preprocessing"),
    json_metadata=("eeg.model", "eeg.preprocessing", "eeg.training", "eeg.history"),
    tensors=(Tensor("*", "any", finite=True),),
    state=_tokenizer_state)



def _check_tokens(artifact, sizes) -> None:
    channels, sources = artifact.meta_json("eeg.channels"), artifact.meta_json("eeg.sources")
    shape = tuple(artifact.tensors["token_f"].shape)
    if shape[0] == 0:
        raise CortexError(f"{artifact.source}: the eeg-tokens hold no windows; nothing to decode or "
                          "describe (encode a recording of at least one window)")
    if not isinstance(channels, list) or len(channels) != shape[1]:
        raise CortexError(f"{artifact.source}: metadata 'eeg.channels' does not name the {shape[1]} channels "
                          "of tensor 'token_f'")
    source = artifact.tensors["window_source"]
    if len(source) and (not isinstance(sources, list) or int(source.max()) >= len(sources)):
        raise CortexError(f"{artifact.source}: tensor 'window_source' points past the "
                          f"{len(sources) if isinstance(sources, list) else 0} files of 'eeg.sources'")


TOKENS = Schema(
    "eeg-tokens", version=1,
    metadata=("eeg.channels", "eeg.sources", "eeg.preprocessing"),
    json_metadata=("eeg.channels", "eeg.sources", "eeg.preprocessing", "eeg.labels"),
    tensors=(Tensor("token_f", "int", ("W", "C", "P"), min=0),
             Tensor("token_t", "int", ("W", "C", "P"), min=0, optional=True),
             Tensor("window_start", "float", ("W",), finite=True, min=0),
             Tensor("window_source", "int", ("W",), min=0),
             Tensor("window_label", "int", ("W",), min=0)),
    check=_check_tokens)

SIGNAL = Schema(
    "eeg-signal", version=1,
    metadata=("eeg.channels",), json_metadata=("eeg.channels", "eeg.sfreq", "eeg.sources"),
    tensors=(Tensor("window_start", "float", ("W",), finite=True),
             Tensor("*", "float", finite=True)))

register(TOKENIZER, TOKENS, SIGNAL)

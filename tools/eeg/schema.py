"""The eeg-tokenizer schema, checked on read (see formats/schema.py): its config and finite
weights and codebooks (a NaN codebook would tokenize every window to the same id)."""

from __future__ import annotations

from cortexkit.formats.schema import Schema, Tensor, register

TOKENIZER = Schema(
    "eeg-tokenizer", version=1,
    metadata=("eeg.model", "eeg.preprocessing"),
    json_metadata=("eeg.model", "eeg.preprocessing", "eeg.training", "eeg.history"),
    tensors=(Tensor("*", "any", finite=True),))

register(TOKENIZER)

"""CodeBrain's TFDual tokenizer (ICLR 2026): EEG windows -> paired temporal/frequency tokens.

Modules: ``model`` (encoder, heads, decoders, presets), ``quantizer`` (normalised EMA codebooks),
``losses`` (the training objective), ``train`` (AdamW warmup + cosine), ``analysis`` (encode,
decode, metrics, features) and ``api`` (what each command-line verb calls).
"""

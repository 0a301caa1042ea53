"""cortexkit tokenize-eeg: CodeBrain's TFDual tokenizer, EEG recordings -> (temporal, frequency) tokens."""

from __future__ import annotations

import click

from cortexkit.cli.base import tool_group, verb
from cortexkit.cli.options import Size, option_set
from cortexkit.tools.eeg import schema as _schema  # noqa: F401  (registers the schemas checked on read)

KIND_TOKENIZER = "eeg-tokenizer"
KIND_TOKENS = "eeg-tokens"
KIND_SIGNAL = "eeg-signal"
VERSION = 1

group = tool_group(
    "tokenize-eeg",
    help="CodeBrain TFDual tokenizer (ICLR 2026): EEG recordings -> paired temporal/frequency "
         "tokens, with training, decoding, evaluation and per-window features.",
)

recording_options = option_set(
    click.option("--stride", type=click.FloatRange(min=0, min_open=True), default=None,
                 help="Seconds between window starts (default: one window, no overlap)."),
    click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True,
                 help="Windows per batch."),
    click.option("--sfreq", type=click.FloatRange(min=0, min_open=True), default=None,
                 help="Sampling rate of array recordings (.npy/.safetensors)."),
    click.option("--channel-names", default=None, metavar="A,B,..",
                 help="Channel names of array recordings, in row order."),
    click.option("--units", type=click.Choice(["uV", "mV", "V", "nV"]), default=None,
                 help="Units of array recordings (default uV) or of EDF channels with unknown units."),
)
ADVANCED_RECORDING = ("sfreq", "channel_names", "units", "batch_size")
precision_option = click.option(
    "--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
    help="bf16: the transformer under bfloat16 autocast, ~1.4x faster on AMX CPUs; ~3 % of tokens "
         "differ from fp32 on a random encoder.")


def _check_output(run):
    """Refuse, before any work, an output path whose directory does not exist."""
    from pathlib import Path

    from cortexkit.formats.errors import CortexError
    from cortexkit.formats.stdio import is_stdio

    if not is_stdio(run.output) and not Path(run.output).resolve().parent.is_dir():
        raise CortexError(f"{run.output}: directory {Path(run.output).parent} does not exist")


def _names(text):
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _recordings(run, paths, prep, sfreq, channel_names, units):
    """A lazy stream of prepared recordings (checked to exist first)."""
    from pathlib import Path

    from cortexkit.formats import eeg
    from cortexkit.formats.errors import CortexError

    for path in paths:
        if not Path(path).is_file():
            raise CortexError(f"{path}: no such file")
    names = _names(channel_names)
    return (eeg.load(p, prep, sfreq=sfreq, channel_names=names, units=units,
                     warn=run.warn) for p in paths)


def _load_tokenizer(run, source):
    from cortexkit.formats.eeg import Preprocessing
    from cortexkit.tools.eeg.api import from_state
    from cortexkit.tools.eeg.model import TokenizerConfig

    artifact = run.read_artifact(source, KIND_TOKENIZER, max_version=VERSION)
    config = TokenizerConfig.from_dict(artifact.meta_json("eeg.model"))
    model = from_state(config, artifact.tensors).to(run.device)
    return model, Preprocessing.from_dict(artifact.meta_json("eeg.preprocessing"))


class _Tracker:
    """Collects per-recording facts (name, rates, band) while the windows stream."""

    def __init__(self, stream):
        self.stream, self.items = stream, []

    def __iter__(self):
        for rec in self.stream:
            self.items.append(rec)
            yield rec
            rec.data = None  # only the facts stay, not the signal


def _encode(run, model, prep, recordings, stride, batch_size, sfreq, channel_names, units,
            precision="fp32"):
    from cortexkit.formats import eeg
    from cortexkit.tools.eeg.api import encode_windows

    tracker = _Tracker(_recordings(run, recordings, prep, sfreq, channel_names, units))
    batches = eeg.iter_windows(tracker, prep, stride, batch_size)
    encoded = encode_windows(model, batches, device=run.device, progress=run.progress,
                             high_amplitude=lambda x: eeg.high_amplitude(x, prep), precision=precision)
    return tracker.items, encoded


@verb(group, "train", output="artifact", torch_options=True,
      advanced=ADVANCED_RECORDING + ("stem", "min_lr", "weight_decay", "warmup_epochs", "amp",
                                     "no_contrastive", "codebooks", "patches", "max_windows"))
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option("--channels", default="standard-1020", show_default=True, metavar="standard-1020|A,B,..",
              help="Montage, in order (missing channels are an error).")
@click.option("--mains", type=click.Choice(["50", "60", "none"]), default="60", show_default=True,
              help="Notch frequency (Hz).")
@click.option("--patches", type=Size(min=2, bytes=800, what='patches per window'), default=30, show_default=True,
              help="Patches of 200 samples (1 s) per window.")
@click.option("--preset", type=click.Choice(["base", "small", "tiny"]), default="base",
              show_default=True, help="Encoder size: base = the paper's 12 x 200; small, tiny for CPU.")
@click.option("--codebook-size", type=Size(min=2, bytes=lambda k, p: 4 * 4 * 32.0 * k, what="codes"),
              default=4096, show_default=True,
              help="Codes per codebook (use 256-1024 on small data).")
@click.option("--kmeans-init", is_flag=True,
              help="Initialise codebooks by cosine k-means on the first batch (recommended on small data).")
@click.option("--dead-code-threshold", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Restart codes whose EMA usage falls below this (1 recommended on small data; 0 = off).")
@click.option("--codebooks", type=click.Choice(["dual", "frequency"]), default="dual", show_default=True,
              help="dual = TFDual; frequency = one frequency codebook (LaBraM's design, the ablation).")
@click.option("--stem", type=click.Choice(["time+freq-sum", "time"]), default="time+freq-sum",
              show_default=True, help="Patch embedding: conv stem plus linear |rfft|, or conv only.")
@click.option("--epochs", type=Size(min=1, seconds=1e-4, what='epochs'), default=20, show_default=True, help="Epochs.")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=1e-4, show_default=True,
              help="Peak learning rate (AdamW).")
@click.option("--min-lr", type=click.FloatRange(min=0), default=1e-5, show_default=True,
              help="Final learning rate of the cosine schedule.")
@click.option("--weight-decay", type=click.FloatRange(min=0), default=1e-4, show_default=True,
              help="AdamW weight decay.")
@click.option("--warmup-epochs", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Linear warmup from 1e-6 (epochs; capped at the run's length).")
@click.option("--no-contrastive", is_flag=True, help="Leave out the NT-Xent term.")
@click.option("--amp", is_flag=True, help="bf16 autocast (quantizers stay fp32).")
@click.option("--max-windows", type=click.IntRange(min=0), default=0, show_default=True,
              help="Use at most this many training windows (evenly spaced; 0 = all).")
@recording_options
def train_cmd(run, recordings, channels, mains, patches, preset, codebook_size, kmeans_init,
              dead_code_threshold, codebooks, stem, epochs, lr, min_lr, weight_decay, warmup_epochs,
              no_contrastive, amp, max_windows, stride, batch_size, sfreq, channel_names, units):
    """Train a tokenizer on recordings -> eeg-tokenizer artifact."""
    _check_output(run)
    from cortexkit.formats import eeg
    from cortexkit.tools.eeg import api
    from cortexkit.tools.eeg.model import config_from_preset
    from cortexkit.tools.eeg.train import TrainConfig

    prep = eeg.Preprocessing(channels=eeg.parse_channels(channels), patches=patches,
                             mains=None if mains == "none" else float(mains))
    x, high = _training_windows(run, recordings, prep, stride, sfreq, channel_names, units, max_windows)
    model_config = config_from_preset(preset, channels=len(prep.channels), max_patches=patches,
                                      codebook_size=codebook_size, kmeans_init=kmeans_init,
                                      dead_code_threshold=dead_code_threshold, codebooks=codebooks,
                                      stem=stem)
    train_config = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, min_lr=min_lr,
                               weight_decay=weight_decay, warmup_epochs=min(warmup_epochs, epochs / 2),
                               contrastive=not no_contrastive, amp=amp)
    model, history = api.fit(x, model_config, train_config, seed=run.seed, device=run.device,
                             on_epoch=lambda e, r: run.info(_epoch_line(e, epochs, r)),
                             progress=lambda it, total: run.progress(it, total=total, desc="steps"))
    run.write_artifact(api.state_tensors(model), KIND_TOKENIZER, version=str(VERSION), metadata={
        "eeg.model": model_config.to_dict(), "eeg.preprocessing": prep.to_dict(),
        "eeg.training": {**train_config.to_dict(), "windows": len(x), "high_amplitude_share": high,
                         "last_epoch": history[-1]}, "eeg.history": history})


def _training_windows(run, recordings, prep, stride, sfreq, channel_names, units, max_windows):
    from cortexkit.formats import eeg

    stream = _recordings(run, recordings, prep, sfreq, channel_names, units)
    x = eeg.collect_windows(stream, prep, stride, max_windows)
    high = float(eeg.high_amplitude(x, prep).mean())
    run.info(f"{len(x)} training windows of {prep.window_seconds:g} s; "
             f"{100 * high:.1f}% with |x| >= 100 uV")
    return x, high


def _epoch_line(epoch, epochs, record):
    parts = [f"{k} {record[k]:.4f}" for k in ("total", "signal", "amplitude", "phase", "ntxent")
             if k in record]
    usage = [f"codes_{s} {record[f'codebook_{s}']['used']} (ppl {record[f'codebook_{s}']['perplexity']:.0f})"
             for s in ("t", "f") if f"codebook_{s}" in record]
    return f"epoch {epoch}/{epochs}: " + ", ".join(parts + usage)


@verb(group, "encode", output="artifact", torch_options=True, advanced=ADVANCED_RECORDING + ("precision",))
@click.argument("tokenizer", metavar="TOKENIZER")
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option("--channels", default=None, metavar="A,B,..",
              help="Check the tokenizer's montage is this one (an error if not).")
@recording_options
@precision_option
def encode_cmd(run, tokenizer, recordings, channels, stride, batch_size, sfreq, channel_names, units,
               precision):
    """Tokenize recordings -> eeg-tokens artifact (token_t, token_f per channel and patch)."""
    _check_output(run)
    model, prep = _load_tokenizer(run, tokenizer)
    _check_montage(channels, prep)
    items, enc = _encode(run, model, prep, recordings, stride, batch_size, sfreq, channel_names, units,
                         precision)
    tensors, metadata = _tokens_payload(prep, items, enc, stride)
    run.info(f"{len(enc.token_f)} windows; {100 * metadata['eeg.high_amplitude_share']:.1f}% "
             "with |x| >= 100 uV")
    run.write_artifact(tensors, KIND_TOKENS, version=str(VERSION), metadata=metadata)


def _check_montage(channels, prep):
    from cortexkit.formats.eeg import parse_channels
    from cortexkit.formats.errors import CortexError

    if channels is not None and parse_channels(channels) != prep.channels:
        raise CortexError(f"the tokenizer was trained on the montage {','.join(prep.channels)}, "
                          f"not {','.join(parse_channels(channels))}; train one for this montage")


def _tokens_payload(prep, items, enc, stride):
    import numpy as np

    from cortexkit.formats.table import categorical

    labels = [label or "none" for label in enc.labels]
    codes, levels = categorical(labels)
    tensors = {"token_f": enc.token_f, "window_start": enc.starts.astype(np.float64),
               "window_source": enc.source, "window_label": codes}
    if enc.token_t is not None:
        tensors["token_t"] = enc.token_t
    metadata = {"eeg.sources": [r.source for r in items], "eeg.channels": prep.channels,
                "eeg.file_channels": [r.file_channels for r in items],
                "eeg.sfreq_in": [r.sfreq_in for r in items], "eeg.sfreq_out": prep.sfreq,
                "eeg.h_freq": [r.h_freq for r in items], "eeg.stride": stride,
                "eeg.labels": levels, "eeg.preprocessing": prep.to_dict(),
                "eeg.high_amplitude_share": enc.high_amplitude / max(len(enc.token_f), 1)}
    return tensors, metadata


def _read_tokens(run, source, model, prep):
    from cortexkit.formats.errors import CortexError

    tokens = run.read_artifact(source, KIND_TOKENS, framework="np", max_version=VERSION)
    if tokens.meta_json("eeg.channels") != prep.channels:
        raise CortexError(f"{tokens.source}: tokens of the montage {tokens.meta_json('eeg.channels')}"
                          f" do not fit this tokenizer's {prep.channels}")
    token_f = tokens.tensor("token_f")
    token_t = tokens.tensors.get("token_t")
    if model.dual and token_t is None:
        raise CortexError(f"{tokens.source}: no token_t, but the tokenizer has two codebooks")
    top = max(int(token_f.max(initial=0)), int(token_t.max(initial=0)) if token_t is not None else 0)
    if top >= model.config.codebook_size or min(token_f.min(initial=0), 0) < 0:
        raise CortexError(f"{tokens.source}: token ids up to {top} do not fit a codebook of "
                          f"{model.config.codebook_size}")
    return tokens, token_t, token_f


@verb(group, "decode", output="artifact", torch_options=True)
@click.argument("tokenizer", metavar="TOKENIZER")
@click.argument("tokens", metavar="TOKENS|-")
def decode_cmd(run, tokenizer, tokens):
    """Tokens -> eeg-signal artifact (signal in uV, standardised FFT amplitude and phase)."""
    _check_output(run)
    from cortexkit.tools.eeg.api import decode_tokens

    model, prep = _load_tokenizer(run, tokenizer)
    artifact, token_t, token_f = _read_tokens(run, tokens, model, prep)
    out = decode_tokens(model, token_t, token_f)
    if "signal" in out:
        out["signal"] = out["signal"] * prep.scale_uv
    out["window_start"] = artifact.tensors["window_start"]
    run.write_artifact(out, KIND_SIGNAL, version=str(VERSION),
                       metadata={"eeg.channels": prep.channels, "eeg.sfreq": prep.sfreq,
                                 "eeg.sources": artifact.meta_json("eeg.sources")})


@verb(group, "evaluate", output="report", torch_options=True, advanced=ADVANCED_RECORDING)
@click.argument("tokenizer", metavar="TOKENIZER")
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@recording_options
def evaluate_cmd(run, tokenizer, recordings, stride, batch_size, sfreq, channel_names, units):
    """Reconstruction (NMSE) and codebook health on recordings -> YAML report."""
    _check_output(run)
    from cortexkit.formats import eeg
    from cortexkit.tools.eeg.api import evaluate

    model, prep = _load_tokenizer(run, tokenizer)
    stream = _recordings(run, recordings, prep, sfreq, channel_names, units)
    high = []
    batches = (b for b in eeg.iter_windows(stream, prep, stride, batch_size)
               if high.append(eeg.high_amplitude(b.x, prep)) or True)
    report = evaluate(model, batches, device=run.device, progress=run.progress)
    share = float(sum(h.sum() for h in high) / max(sum(len(h) for h in high), 1))
    run.write_report({"windows": report["windows"], "high_amplitude_share": share,
                      **{k: v for k, v in report.items() if k != "windows"}})


@verb(group, "features", output="artifact", torch_options=True,
      advanced=ADVANCED_RECORDING + ("parts", "precision"))
@click.argument("tokenizer", metavar="TOKENIZER")
@click.argument("inputs", nargs=-1, required=True, metavar="RECORDING...|TOKENS|-")
@click.option("--parts", default="hist,mean", show_default=True, metavar="hist,mean",
              help="Feature groups: token histograms and/or mean quantized vectors.")
@recording_options
@precision_option
def features_cmd(run, tokenizer, inputs, parts, stride, batch_size, sfreq, channel_names, units,
                 precision):
    """Per-window features (token histograms, mean codes, label) -> table artifact."""
    _check_output(run)
    from cortexkit.formats.table import write_table
    from cortexkit.tools.eeg.api import features

    model, prep = _load_tokenizer(run, tokenizer)
    sources, starts, labels, token_t, token_f = _feature_inputs(
        run, inputs, model, prep, stride, batch_size, sfreq, channel_names, units, precision)
    columns = features(model, token_t, token_f, parts=_parts(parts))
    write_table(run.output, _feature_table(sources, starts, labels, columns),
                producer=run.producer, config=run.config)


def _parts(text):
    from cortexkit.formats.errors import CortexError

    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    if not parts or set(parts) - {"hist", "mean"}:
        raise CortexError(f"--parts {text!r}: choose from hist,mean")
    return parts


def _feature_inputs(run, inputs, model, prep, stride, batch_size, sfreq, channel_names, units,
                    precision="fp32"):
    import numpy as np

    from cortexkit.formats.errors import CortexError

    from cortexkit.formats.eeg import is_artifact_of_kind

    if any(p == "-" or is_artifact_of_kind(p, KIND_TOKENS) for p in inputs):
        if len(inputs) != 1:
            raise CortexError("features takes one eeg-tokens artifact, or recordings, not both")
        artifact, token_t, token_f = _read_tokens(run, inputs[0], model, prep)
        names = artifact.meta_json("eeg.sources")
        levels = artifact.meta_json("eeg.labels")
        return ([names[i] for i in artifact.tensors["window_source"]],
                artifact.tensors["window_start"], [levels[i] for i in artifact.tensors["window_label"]],
                token_t, token_f)
    items, enc = _encode(run, model, prep, inputs, stride, batch_size, sfreq, channel_names, units,
                         precision)
    return ([items[i].source for i in enc.source], np.asarray(enc.starts),
            [lab or "none" for lab in enc.labels], enc.token_t, enc.token_f)


def _feature_table(sources, starts, labels, columns):
    import numpy as np

    from cortexkit.formats.table import Table, categorical

    source_codes, source_levels = categorical(list(sources))
    label_codes, label_levels = categorical(list(labels))
    cols = {"source": source_codes, "window_start": np.asarray(starts, dtype=np.float64),
            "label": label_codes, **columns}
    return Table(cols, {"source": source_levels, "label": label_levels}, "features")

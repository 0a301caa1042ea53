"""cortexkit tokenize-eeg: CodeBrain's TFDual tokenizer, EEG recordings -> (temporal, frequency) tokens."""

from __future__ import annotations

import click

from cortexkit.cli.base import tool_group, verb
from cortexkit.cli.options import AutoFloat, AutoSize, Size, option_set
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
    click.option("--windows", "window_mode", type=click.Choice(["fixed", "events"]), default="fixed",
                 show_default=True,
                 help="fixed: the paper's windows every --stride s; events: one window per annotation "
                      "(--events, --tmin, --tmax, --baseline), labelled by it."),
    click.option("--events", default=None, metavar="NAME,..",
                 help="Annotations that get an event window (default: all)."),
    click.option("--tmin", type=float, default=0.0, show_default=True,
                 help="Event window start, seconds from the onset."),
    click.option("--tmax", type=float, default=None,
                 help="Event window end (exclusive), seconds from the onset (default: tmin + the "
                      "tokenizer's window)."),
    click.option("--baseline", default="none", show_default=True, metavar="none|START,END",
                 help="Subtract each channel's mean over [START, END] s (an empty side = the "
                      "window's edge, as MNE's None)."),
)
# --amplitude-head -> TokenizerConfig fields (issue 33 eeg20: "own" chosen by measurement)
AMPLITUDE_HEADS = {"own": dict(amplitude_head=True, amplitude_head_detach=True),
                   "shared": dict(amplitude_head=True, amplitude_head_detach=False),
                   "none": dict(amplitude_head=False, amplitude_head_detach=False)}
ADVANCED_RECORDING = ("sfreq", "channel_names", "units", "batch_size", "tmin", "tmax", "baseline")
precision_option = click.option(
    "--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
    help="bf16: the transformer under bfloat16 autocast, ~1.4x faster on AMX CPUs; ~3 % of tokens "
         "differ from fp32 on a random encoder.")


def _load_tokenizer(run, source):
    from cortexkit.formats.eeg import Preprocessing
    from cortexkit.tools.eeg.api import from_state
    from cortexkit.tools.eeg.model import TokenizerConfig

    artifact = run.read_artifact(source, KIND_TOKENIZER, max_version=VERSION)
    config = TokenizerConfig.from_dict(artifact.meta_json("eeg.model"))
    model = from_state(config, artifact.tensors).to(run.device)
    return model, Preprocessing.from_dict(artifact.meta_json("eeg.preprocessing"))


def _encode(run, model, windows, recordings, precision="fp32"):
    from cortexkit.formats import eeg
    from cortexkit.tools.eeg.api import encode_windows

    tracker, batches = windows.stream(recordings)
    try:
        encoded = encode_windows(model, batches, device=run.device, progress=run.progress,
                                 high_amplitude=lambda x: eeg.high_amplitude(x, windows.prep),
                                 precision=precision)
    except ValueError:
        windows.check_found(tracker.items)
        raise
    windows.check_found(tracker.items)
    return tracker.items, encoded


def _speed(run, verb_name, windows, started, model_seconds):
    """-v: windows per second, end to end (reading and preprocessing included) and in the model."""
    import time

    total = time.perf_counter() - started
    run.detail(f"{verb_name}: {windows} windows in {total:.2f} s ({windows / max(total, 1e-9):.2f} "
               f"windows/s end to end; model {model_seconds:.2f} s, "
               f"{windows / max(model_seconds, 1e-9):.2f} windows/s)")


@verb(group, "train", output="artifact", torch_options=True,
      advanced=ADVANCED_RECORDING + ("stem", "encoder_depth", "min_lr", "weight_decay", "warmup_epochs", "amp",
                                     "contrastive", "codebooks", "patches", "max_windows",
                                     "validation_share", "kmeans_init", "dead_code_threshold",
                                     "signal_weight", "signal_amplitude_weight", "warm_start_epochs",
                                     "random_crop", "amplitude_head"))
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option("--channels", default="standard-1020", show_default=True, metavar="standard-1020|A,B,..",
              help="Montage, in order (missing channels are an error).")
@click.option("--mains", type=click.Choice(["50", "60", "none"]), default="60", show_default=True,
              help="Notch frequency (Hz).")
@click.option("--patches", type=Size(min=2, bytes=800, what='patches per window'), default=30, show_default=True,
              help="Patches of 200 samples (1 s) per window.")
@click.option("--preset", type=click.Choice(["auto", "base", "small", "tiny"]), default="auto",
              show_default=True,
              help="Encoder size: base = the paper's 12 x 200; small, tiny; auto: from data and device.")
@click.option("--encoder-depth", default="auto", show_default=True, metavar="auto|N",
              type=AutoSize(min=0, max=48, bytes=lambda n, p: 4 * 4 * 200 * 200 * 12.0 * n,
                            what="encoder layers"),
              help="Transformer blocks in the encoder; auto: the preset's (base 12, the paper's; "
                   "small 4), tiny 0 = per-patch codes (measured, see the man page; was 2).")
@click.option("--codebook-size", default="auto", show_default=True, metavar="auto|N",
              type=AutoSize(min=2, bytes=lambda k, p: 4 * 4 * 32.0 * k, what="codes"),
              help="Codes per codebook; auto: training patches / 16 as a power of two, 256..4096.")
@click.option("--kmeans-init/--no-kmeans-init", default=True, show_default=True,
              help="Initialise codebooks by cosine k-means on the first batch (the paper: off).")
@click.option("--dead-code-threshold", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Restart codes whose EMA usage falls below this (0 = off, the paper's).")
@click.option("--codebooks", type=click.Choice(["dual", "frequency"]), default="dual", show_default=True,
              help="dual = TFDual; frequency = one frequency codebook (LaBraM's design, the ablation).")
@click.option("--stem", type=click.Choice(["time+freq-sum", "time"]), default="time+freq-sum",
              show_default=True, help="Patch embedding: conv stem plus linear |rfft|, or conv only.")
@click.option("--epochs", type=Size(min=1, seconds=1e-4, what='epochs'), default=160, show_default=True,
              help="Epochs (160: chosen by measurement against 40 and 80, see the man page).")
@click.option("--lr", type=AutoFloat(0, min_open=True), default="auto", show_default=True, metavar="auto|LR",
              help="Peak learning rate (AdamW); auto: 1e-3 for tiny, the paper's 1e-4 otherwise.")
@click.option("--min-lr", type=click.FloatRange(min=0), default=1e-5, show_default=True,
              help="Final learning rate of the cosine schedule.")
@click.option("--weight-decay", type=click.FloatRange(min=0), default=1e-4, show_default=True,
              help="AdamW weight decay.")
@click.option("--warmup-epochs", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Linear warmup from 1e-6 (epochs; capped at the run's length).")
@click.option("--contrastive/--no-contrastive", default=False, show_default=True,
              help="NT-Xent between the two halves of each window (the paper's; off: it costs two "
                   "more encoder passes a step and worsens reconstruction, see the man page).")
@click.option("--signal-weight", type=AutoFloat(0, min_open=True), default=1.0, show_default=True, metavar="auto|W",
              help="Weight of the raw-signal term (the paper's 1); auto: 1 / the training patches' "
                   "variance, a time NMSE on the scale of the standardised FFT terms.")
@click.option("--signal-amplitude-weight", type=click.FloatRange(min=0), default=0.0, show_default=True,
              metavar="W",
              help="Weight of an amplitude-spectrum term on the temporal decoder's output, "
                   "mse(|rfft(x_hat)|, |rfft(x)|) per patch (0 = the paper's objective; was 0.1 until "
                   "--amplitude-head own took over the tokens-only amplitude, see the man page).")
@click.option("--amplitude-head", type=click.Choice(list(AMPLITUDE_HEADS)), default="own", show_default=True,
              help="Where the tokens-only amplitude spectrum is read: own = a decoder of its own on the "
                   "temporal tokens, trained on |rfft| of each patch without moving the tokens or the "
                   "signal (measured, see the man page); shared = a second head on the temporal "
                   "decoder; none = |rfft| of the decoded signal (the paper's decoders).")
@click.option("--warm-start-epochs", type=click.FloatRange(min=0), default=16.0, show_default=True,
              help="Epochs' worth of steps fitting tokens and decoders to k-means of the patches before "
                   "training, which then starts from k-means's codes (0 = off, the paper's random start).")
@click.option("--random-crop/--no-random-crop", default=True, show_default=True,
              help="Cut each training window anew every batch at a random sub-patch offset of the "
                   "recording (fixed windows; off: the paper's fixed grid; measured, see the man page).")
@click.option("--amp", is_flag=True, help="bf16 autocast (quantizers stay fp32).")
@click.option("--max-windows", type=click.IntRange(min=0), default=0, show_default=True,
              help="Use at most this many training windows (evenly spaced; 0 = all).")
@click.option("--validation-share", type=click.FloatRange(0, 0.5), default=0.1, show_default=True,
              help="Windows held out to score the tokenizer beside k-means on the same patches "
                   "(0 = no check).")
@recording_options
def train_cmd(run, recordings, channels, mains, patches, preset, encoder_depth, codebook_size, kmeans_init,
              dead_code_threshold, codebooks, stem, epochs, lr, min_lr, weight_decay, warmup_epochs,
              contrastive, signal_weight, signal_amplitude_weight, amplitude_head, warm_start_epochs,
              random_crop, amp, max_windows, validation_share, **reading):
    """Train a tokenizer on recordings -> eeg-tokenizer artifact."""
    from cortexkit.formats import eeg
    from cortexkit.tools.eeg import api
    from cortexkit.tools.eeg.windows import WindowCut

    prep = eeg.Preprocessing(channels=eeg.parse_channels(channels), patches=patches,
                             mains=None if mains == "none" else float(mains))
    windows = WindowCut(run, prep, patches, **reading)
    random_crop = random_crop and windows.spec is None  # event windows stay locked to their events
    x, high = windows.training_windows(recordings, max_windows, context=random_crop)
    model, metadata = api.train_tokenizer(
        run, x, prep, preset=preset, encoder_depth=encoder_depth, codebook_size=codebook_size, lr=lr,
        validation_share=validation_share,
        model_options=dict(kmeans_init=kmeans_init, dead_code_threshold=dead_code_threshold,
                           codebooks=codebooks, stem=stem, **AMPLITUDE_HEADS[amplitude_head]),
        train_options=dict(epochs=epochs, batch_size=reading["batch_size"], min_lr=min_lr,
                           weight_decay=weight_decay, warmup_epochs=warmup_epochs,
                           contrastive=contrastive, amp=amp, signal_weight=signal_weight,
                           signal_amplitude_weight=signal_amplitude_weight,
                           warm_start_epochs=warm_start_epochs, random_crop=random_crop),
        training_record={"high_amplitude_share": high, "window_cut": windows.describe()})
    run.write_artifact(api.state_tensors(model), KIND_TOKENIZER, version=str(VERSION),
                       metadata={**metadata, "eeg.preprocessing": prep.to_dict()})


@verb(group, "encode", output="artifact", torch_options=True, advanced=ADVANCED_RECORDING + ("precision",))
@click.argument("tokenizer", metavar="TOKENIZER")
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option("--channels", default=None, metavar="A,B,..",
              help="Check the tokenizer's montage is this one (an error if not).")
@recording_options
@precision_option
def encode_cmd(run, tokenizer, recordings, channels, precision, **reading):
    """Tokenize recordings -> eeg-tokens artifact (token_t, token_f per channel and patch)."""
    import time

    started = time.perf_counter()
    model, prep = _load_tokenizer(run, tokenizer)
    _check_montage(channels, prep)
    from cortexkit.tools.eeg.windows import WindowCut

    windows = WindowCut(run, prep, model.config.max_patches, **reading)
    items, enc = _encode(run, model, windows, recordings, precision)
    tensors, metadata = _tokens_payload(prep, items, enc, windows)
    run.info(f"{len(enc.token_f)} windows; {100 * metadata['eeg.high_amplitude_share']:.1f}% "
             "with |x| >= 100 uV")
    run.write_artifact(tensors, KIND_TOKENS, version=str(VERSION), metadata=metadata)
    _speed(run, "encode", len(enc.token_f), started, enc.seconds)


def _check_montage(channels, prep):
    from cortexkit.formats.eeg import parse_channels
    from cortexkit.formats.errors import CortexError

    if channels is not None and parse_channels(channels) != prep.channels:
        raise CortexError(f"the tokenizer was trained on the montage {','.join(prep.channels)}, "
                          f"not {','.join(parse_channels(channels))}; train one for this montage")


def _tokens_payload(prep, items, enc, windows):
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
                "eeg.h_freq": [r.h_freq for r in items], "eeg.stride": windows.stride,
                "eeg.windows": windows.describe(), "eeg.units": {"window_start": "s"},
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
    """Tokens -> eeg-signal artifact (signal in uV, standardised FFT amplitude and phase, and the
    amplitude head's |rfft| in uV where the tokenizer has one)."""
    import time

    started = time.perf_counter()
    from cortexkit.tools.eeg.api import decode_tokens

    model, prep = _load_tokenizer(run, tokenizer)
    artifact, token_t, token_f = _read_tokens(run, tokens, model, prep)
    timing: dict = {}
    out = decode_tokens(model, token_t, token_f, timing=timing)
    for key in ("signal", "signal_amplitude"):  # the model's unit is 100 uV (x / 100 at its input)
        if key in out:  # the file's is uV
            out[key] = out[key] * prep.scale_uv
    out["window_start"] = artifact.tensors["window_start"]
    run.write_artifact(out, KIND_SIGNAL, version=str(VERSION),
                       metadata={"eeg.channels": prep.channels, "eeg.sfreq": prep.sfreq,
                                 "eeg.sources": artifact.meta_json("eeg.sources"),
                                 "eeg.units": {"signal": "uV", "amplitude": "standardised",
                                               "phase": "standardised", "window_start": "s",
                                               **({"signal_amplitude": "uV"} if "signal_amplitude" in out
                                                  else {})}})
    _speed(run, "decode", len(token_f), started, timing.get("seconds", 0.0))


@verb(group, "evaluate", output="report", torch_options=True, advanced=ADVANCED_RECORDING)
@click.argument("tokenizer", metavar="TOKENIZER")
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@recording_options
def evaluate_cmd(run, tokenizer, recordings, **reading):
    """Reconstruction (NMSE) and codebook health on recordings -> YAML report."""
    import time

    started = time.perf_counter()
    from cortexkit.formats import eeg
    from cortexkit.tools.eeg.api import evaluate

    model, prep = _load_tokenizer(run, tokenizer)
    from cortexkit.tools.eeg.windows import WindowCut

    windows = WindowCut(run, prep, model.config.max_patches, **reading)
    tracker, stream = windows.stream(recordings)
    high = []
    batches = (b for b in stream if high.append(eeg.high_amplitude(b.x, prep)) or True)
    timing: dict = {}
    try:
        report = evaluate(model, batches, device=run.device, progress=run.progress, timing=timing)
    except ValueError:
        windows.check_found(tracker.items)
        raise
    windows.check_found(tracker.items)
    share = float(sum(h.sum() for h in high) / max(sum(len(h) for h in high), 1))
    run.write_report({"windows": report["windows"], "high_amplitude_share": share,
                      "window_cut": windows.describe(),
                      **{k: v for k, v in report.items() if k != "windows"}})
    _speed(run, "evaluate", report["windows"], started, timing.get("seconds", 0.0))


@verb(group, "features", output="table", torch_options=True,
      advanced=ADVANCED_RECORDING + ("parts", "precision"))
@click.argument("tokenizer", metavar="TOKENIZER")
@click.argument("inputs", nargs=-1, required=True, metavar="RECORDING...|TOKENS|-")
@click.option("--parts", default="hist,mean", show_default=True, metavar="PART,...",
              help="Feature groups: hist, mean, chmean, champ, chpow (man page FILES).")
@recording_options
@precision_option
def features_cmd(run, tokenizer, inputs, parts, precision, **reading):
    """Per-window features (token histograms, mean codes, label) -> table artifact."""
    import time

    started = time.perf_counter()
    from cortexkit.formats.table import write_table
    from cortexkit.tools.eeg.api import features

    parts = _parts(parts)  # a wrong --parts is named before any recording is read and encoded
    model, prep = _load_tokenizer(run, tokenizer)
    sources, starts, labels, token_t, token_f, seconds = _feature_inputs(
        run, inputs, model, prep, precision, reading)
    columns = features(model, token_t, token_f, parts=parts)
    write_table(run.output, _feature_table(sources, starts, labels, columns),
                producer=run.producer, config=run.config)
    _speed(run, "features", len(token_f), started, seconds)


def _parts(text):
    from cortexkit.formats.errors import CortexError
    from cortexkit.tools.eeg.analysis import FEATURE_PARTS

    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    if not parts or set(parts) - set(FEATURE_PARTS):
        raise CortexError(f"--parts {text!r}: choose from {','.join(FEATURE_PARTS)}")
    return parts


def _feature_inputs(run, inputs, model, prep, precision, reading):
    """-> sources, starts, labels, token_t, token_f, model seconds (0 when read from tokens)."""
    import numpy as np

    from cortexkit.formats.eeg import is_artifact_of_kind
    from cortexkit.formats.errors import CortexError

    if any(p == "-" or is_artifact_of_kind(p, KIND_TOKENS) for p in inputs):
        if len(inputs) != 1:
            raise CortexError("features takes one eeg-tokens artifact, or recordings, not both")
        from cortexkit.tools.eeg.windows import WindowCut

        windows = WindowCut(run, prep, model.config.max_patches, **reading)
        if windows.spec is not None or reading.get("stride") is not None:
            raise CortexError("--windows/--stride cut recordings; tokens were cut by encode "
                              "(give recordings, or cut with encode)")
        artifact, token_t, token_f = _read_tokens(run, inputs[0], model, prep)
        names = artifact.meta_json("eeg.sources")
        levels = artifact.meta_json("eeg.labels")
        return ([names[i] for i in artifact.tensors["window_source"]],
                artifact.tensors["window_start"], [levels[i] for i in artifact.tensors["window_label"]],
                token_t, token_f, 0.0)
    from cortexkit.tools.eeg.windows import WindowCut

    windows = WindowCut(run, prep, model.config.max_patches, **reading)
    items, enc = _encode(run, model, windows, inputs, precision)
    return ([items[i].source for i in enc.source], np.asarray(enc.starts),
            [lab or "none" for lab in enc.labels], enc.token_t, enc.token_f, enc.seconds)


def _feature_table(sources, starts, labels, columns):
    import numpy as np

    from cortexkit.formats.table import Table, categorical

    source_codes, source_levels = categorical(list(sources))
    label_codes, label_levels = categorical(list(labels))
    cols = {"source": source_codes, "window_start": np.asarray(starts, dtype=np.float64),
            "label": label_codes, **columns}
    return Table(cols, {"source": source_levels, "label": label_levels}, "features")

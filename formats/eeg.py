"""EEG recordings at the edge: read every format MNE reads (and plain arrays), put them into
CodeBrain's input convention, and cut them into windows of patches.

The convention (stored in a tokenizer and applied identically when it encodes):

* channels picked by name in a fixed order (default: the 19 channels of the 10-20 system,
  ``FP1 FP2 F3 F4 C3 C4 P3 P4 O1 O2 F7 F8 T3 T4 T5 T6 FZ CZ PZ``); names are compared after
  :func:`normalise_name` (case, trailing dots, ``EEG `` prefixes and ``-REF``/``-LE`` suffixes
  ignored) and the 10-10 aliases T7=T3, T8=T4, P7=T5, P8=T6;
* MNE band-pass 0.3-75 Hz, the upper edge clamped to 0.45 x the file's sampling rate; a notch at
  the mains frequency (50 or 60 Hz) when it lies inside the pass band; MNE resampling (with its
  anti-aliasing) to 200 Hz; all at the file's own rate before resampling, as MNE does it;
* volts (MNE's unit, from the file's own physical dimensions) to microvolts, divided by 100;
* windows of ``patches`` patches of 200 samples (30 s by default), ``stride`` seconds apart.

MNE is imported lazily (``pip install 'cortexkit[eeg]'``); safetensors/NPY arrays
``(channels, samples)`` need ``sfreq`` and ``channel_names``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from cortexkit.formats.errors import CortexError

STANDARD_1020 = ("FP1", "FP2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2",
                 "F7", "F8", "T3", "T4", "T5", "T6", "FZ", "CZ", "PZ")
ALIASES = {"T7": "T3", "T8": "T4", "P7": "T5", "P8": "T6"}
ARRAY_SUFFIXES = (".safetensors", ".npy")
UNIT_SCALE = {"V": 1.0, "mV": 1e-3, "uV": 1e-6, "µV": 1e-6, "μV": 1e-6, "nV": 1e-9}
_KNOWN_MNE_UNITS = {"\u03bcV": 1e-6, "\u00b5V": 1e-6, "uV": 1e-6, "mV": 1e-3, "V": 1.0}
HIGH_AMPLITUDE_UV = 100.0
FLAT_STD_UV = 1e-3  # a channel whose std is below this (microvolts) carries no signal
# Past this no recording is EEG in uV (1 V): a unit mistake, and the tokenizer's float32 training
# would overflow to NaN weights.
MAX_ABS_UV = 1e6


def normalise_name(name: str) -> str:
    """The comparable form of a channel name: ``'Fc5.'`` -> ``'FC5'``, ``'EEG T7-REF'`` -> ``'T3'``."""
    text = str(name).strip().upper().rstrip(".").strip()
    if text.startswith("EEG "):
        text = text[4:].strip()
    for suffix in ("-REF", "-LE", "-AVG", "-AR"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    return ALIASES.get(text, text)


def parse_channels(text: str | Sequence[str] | None) -> list[str]:
    """``--channels``: ``standard-1020`` (or empty) for the 19 10-20 channels, else a comma list."""
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "standard-1020")):
        return list(STANDARD_1020)
    names = [t for t in (text.split(",") if isinstance(text, str) else text)]
    names = [normalise_name(t) for t in names if str(t).strip()]
    if len(set(names)) != len(names):
        raise CortexError(f"--channels names a channel twice: {','.join(names)}")
    if not names:
        raise CortexError("--channels is empty")
    return names


@dataclass
class Preprocessing:
    """The input convention of a tokenizer (stored in it, applied identically at encode time)."""

    channels: list[str] = field(default_factory=lambda: list(STANDARD_1020))
    l_freq: float = 0.3
    h_freq: float = 75.0
    mains: float | None = 60.0
    sfreq: float = 200.0
    patch_size: int = 200
    patches: int = 30
    scale_uv: float = 100.0

    @property
    def window_samples(self) -> int:
        return self.patch_size * self.patches

    @property
    def window_seconds(self) -> float:
        return self.window_samples / self.sfreq

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Preprocessing":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass
class Recording:
    """One recording in the convention: ``data`` (channels, samples) float32 in units of 100 uV
    at ``preprocessing.sfreq``, plus what is needed to describe its windows."""

    source: str
    data: np.ndarray
    sfreq_in: float
    file_channels: list[str]
    h_freq: float
    annotations: list[tuple[float, float, str]]  # (onset s, duration s, description)


# ---------------------------------------------------------------------------------------------
# reading

def _mne():
    try:
        import mne
    except ImportError:
        raise CortexError("reading EEG files needs MNE-Python: pip install 'cortexkit[eeg]'") from None
    mne.set_log_level("ERROR")
    return mne


def _read_array(path: Path) -> np.ndarray:
    if path.suffix.lower() == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise CortexError(f"{path}: not a readable NPY array ({exc})") from None
    else:
        from cortexkit.formats.artifact import decode

        artifact = decode(path.read_bytes(), str(path), framework="np")
        if artifact.kind not in (None, "eeg-signal", "table"):
            raise CortexError(f"{path}: a '{artifact.kind}' artifact is not a recording "
                              "(expected a (channels, samples) array)")
        names = [n for n in ("data", "x", "eeg", "signal") if n in artifact.tensors]
        if not names and len(artifact.tensors) != 1:
            raise CortexError(f"{path}: holds {len(artifact.tensors)} tensors; name the recording "
                              "'data' (channels, samples)")
        array = artifact.tensors[names[0] if names else next(iter(artifact.tensors))]
    if array.ndim != 2:
        raise CortexError(f"{path}: a recording array is (channels, samples), got shape "
                          f"{list(array.shape)}")
    if not np.issubdtype(array.dtype, np.number):
        raise CortexError(f"{path}: recording array has non-numeric dtype {array.dtype}")
    return array.astype(np.float64)


def read_raw(source: str | os.PathLike, *, sfreq: float | None = None,
             channel_names: Sequence[str] | None = None, units: str | None = None):
    """An ``mne.io.Raw`` (preloaded, data in volts) for any file MNE reads, or for a
    safetensors/NPY array ``(channels, samples)`` in ``units`` (default uV) with ``sfreq`` and
    ``channel_names``. ``units`` also overrides a file whose physical dimension is unknown."""
    mne = _mne()
    path = Path(source)
    if not path.exists():
        raise CortexError(f"{path}: no such file")
    if path.is_dir():
        raise CortexError(f"{path}: is a directory, expected a recording")
    if units is not None and units not in UNIT_SCALE:
        raise CortexError(f"--units {units!r}: use one of {', '.join(UNIT_SCALE)}")
    suffix = path.suffix.lower()
    if suffix in ARRAY_SUFFIXES or artifact_kind(path) is not None:
        array = _read_array(path)
        if sfreq is None or not channel_names:
            raise CortexError(f"{path}: an array recording needs --sfreq and --channel-names")
        if len(channel_names) != array.shape[0]:
            raise CortexError(f"{path}: {len(channel_names)} --channel-names for "
                              f"{array.shape[0]} channels (array shape {list(array.shape)})")
        info = mne.create_info([str(c) for c in channel_names], float(sfreq), ch_types="eeg")
        return mne.io.RawArray(array * UNIT_SCALE[units or "uV"], info, verbose="error")
    try:
        if suffix in (".edf", ".bdf", ".gdf"):
            reader = {".edf": mne.io.read_raw_edf, ".bdf": mne.io.read_raw_bdf,
                      ".gdf": mne.io.read_raw_gdf}[suffix]
            kwargs = {"encoding": "latin1"} if suffix != ".gdf" else {}
            raw = reader(path, preload=True, verbose="error", **kwargs)
        else:
            raw = mne.io.read_raw(path, preload=True, verbose="error")
    except CortexError:
        raise
    except Exception as exc:  # noqa: BLE001 - MNE raises many kinds; one line for the user
        detail = " ".join(str(exc).split())[:200]
        raise CortexError(f"{path}: MNE cannot read it as a recording ({type(exc).__name__}: "
                          f"{detail})") from None
    if sfreq is not None and abs(float(sfreq) - raw.info["sfreq"]) > 1e-6:
        raise CortexError(f"{path}: --sfreq {sfreq:g} contradicts the file's {raw.info['sfreq']:g} Hz"
                          " (--sfreq is for array recordings)")
    raw._cortexkit_units_override = units  # checked per picked channel in prepare()
    return raw


def _channel_map(raw_names: Sequence[str], wanted: Sequence[str], source: str) -> list[str]:
    """The file's channel name for each wanted (normalised) name, or a one-line error."""
    by_norm: dict[str, str] = {}
    for name in raw_names:
        by_norm.setdefault(normalise_name(name), name)
    missing = [w for w in wanted if w not in by_norm]
    if missing:
        have = ", ".join(sorted(by_norm)[:40])
        raise CortexError(f"{source}: missing channel(s) {', '.join(missing)} of the montage "
                          f"(the file has: {have}); map them with --channels or rename them")
    return [by_norm[w] for w in wanted]


def _check_units(raw, picked: Sequence[str], source: str) -> float:
    """A factor fixing channels whose unit MNE did not know (it then takes them as volts)."""
    override = getattr(raw, "_cortexkit_units_override", None)
    orig = getattr(raw, "_orig_units", None) or {}
    unknown = sorted({str(orig[c]) for c in picked if c in orig
                      and str(orig[c]).strip() not in _KNOWN_MNE_UNITS})
    if not unknown:
        return 1.0
    if override is None:
        raise CortexError(f"{source}: unknown physical unit(s) {unknown} on EEG channels; give "
                          "--units uV|mV|V for what the file stores")
    return UNIT_SCALE[override]


def prepare(raw, preprocessing: Preprocessing, source: str, *,
            warn: Callable[[str], None] | None = None) -> Recording:
    """Pick, check, filter, notch, resample and scale one recording (MNE does the DSP)."""
    sfreq_in = float(raw.info["sfreq"])
    h_freq = min(preprocessing.h_freq, 0.45 * sfreq_in)
    if h_freq < 30.0:
        raise CortexError(f"{source}: sampling rate {sfreq_in:g} Hz is too low: the band-pass upper "
                          f"edge would be {h_freq:g} Hz (< 30 Hz; need at least 67 Hz sampling)")
    picked = _channel_map(raw.ch_names, preprocessing.channels, source)
    factor = _check_units(raw, picked, source)
    raw = raw.copy().pick(picked)
    data = raw.get_data()
    if not np.isfinite(data).all():
        bad = [preprocessing.channels[i] for i in np.flatnonzero(~np.isfinite(data).all(axis=1))]
        raise CortexError(f"{source}: NaN or infinite samples in channel(s) {', '.join(bad)}")
    if data.shape[-1] == 0:
        raise CortexError(f"{source}: the recording holds no samples")
    peak_uv = np.abs(data).max(axis=1) * 1e6 * factor
    if (peak_uv > MAX_ABS_UV).any():
        bad = [preprocessing.channels[i] for i in np.flatnonzero(peak_uv > MAX_ABS_UV)]
        raise CortexError(f"{source}: samples up to {peak_uv.max():.3g} uV in channel(s) "
                          f"{', '.join(bad)}: not scalp EEG (check --units or the file's units)")
    std_uv = data.std(axis=1) * 1e6 * factor
    flat = [preprocessing.channels[i] for i in np.flatnonzero(std_uv < FLAT_STD_UV)]
    if flat and warn is not None:
        warn(f"flat-channel: {source}: channel(s) {', '.join(flat)} carry no signal "
             "(std < 0.001 uV); their patches are zeros")
    if len(flat) == len(picked):
        raise CortexError(f"{source}: every channel is flat (no signal)")
    if raw.n_times / sfreq_in < preprocessing.window_seconds:
        raise CortexError(f"{source}: {raw.n_times / sfreq_in:.3g} s is shorter than one window "
                          f"({preprocessing.window_seconds:g} s = {preprocessing.patches} patches)")
    raw.set_channel_types({c: "eeg" for c in raw.ch_names})
    raw.filter(preprocessing.l_freq, h_freq, picks="all", verbose="error")
    if preprocessing.mains and preprocessing.mains < h_freq:
        raw.notch_filter(preprocessing.mains, picks="all", verbose="error")
    if abs(sfreq_in - preprocessing.sfreq) > 1e-9:
        raw.resample(preprocessing.sfreq, verbose="error")
    scaled = raw.get_data() * (1e6 * factor / preprocessing.scale_uv)
    annotations = [(float(a["onset"]) - raw.first_time, float(a["duration"]), str(a["description"]))
                   for a in raw.annotations]
    return Recording(source, scaled.astype(np.float32), sfreq_in, picked, h_freq, annotations)


def load(source: str, preprocessing: Preprocessing, *, sfreq=None, channel_names=None, units=None,
         warn=None) -> Recording:
    """:func:`read_raw` then :func:`prepare`."""
    raw = read_raw(source, sfreq=sfreq, channel_names=channel_names, units=units)
    return prepare(raw, preprocessing, str(source), warn=warn)


def load_each(sources: Sequence[str], preprocessing: Preprocessing, *, sfreq=None, channel_names=None,
              units=None, warn=None) -> Iterator[Recording]:
    """:func:`load` of every source, lazily, after checking that each exists (a one-line error
    naming the first that does not, before any is read). ``channel_names``: ``A,B,C`` text."""
    for source in sources:
        if not Path(source).is_file():
            raise CortexError(f"{source}: no such file")
    names = [t.strip() for t in channel_names.split(",") if t.strip()] if channel_names else None
    return (load(s, preprocessing, sfreq=sfreq, channel_names=names or None, units=units, warn=warn)
            for s in sources)


# ---------------------------------------------------------------------------------------------
# windows

def window_starts(recording: Recording, preprocessing: Preprocessing, stride: float | None) -> np.ndarray:
    """Start samples of the windows (``stride`` seconds apart; None = one window length)."""
    size = preprocessing.window_samples
    step = size if stride is None else int(round(stride * preprocessing.sfreq))
    if step <= 0:
        raise CortexError(f"--stride must be positive, got {stride}")
    n = recording.data.shape[1]
    return np.arange(0, n - size + 1, step, dtype=np.int64)


def window_label(recording: Recording, start_s: float, length_s: float) -> str:
    """The annotation covering most of [start, start + length); '' when none covers any of it."""
    best, best_cover = "", 0.0
    cover: dict[str, float] = {}
    for onset, duration, text in recording.annotations:
        overlap = min(onset + duration, start_s + length_s) - max(onset, start_s)
        if overlap > 0:
            cover[text] = cover.get(text, 0.0) + overlap
    for text, amount in sorted(cover.items()):
        if amount > best_cover:
            best, best_cover = text, amount
    return best


@dataclass
class WindowBatch:
    """A batch of windows: ``x`` (batch, channels, patches, patch_size) float32 in 100 uV."""

    x: np.ndarray
    starts: np.ndarray  # seconds, (batch,)
    labels: list[str]
    source_index: int


def iter_windows(recordings: Iterator[Recording] | Sequence[Recording], preprocessing: Preprocessing,
                 stride: float | None, batch_size: int) -> Iterator[WindowBatch]:
    """Batches of windows, one recording at a time (recordings may be a lazy iterator, so only one
    recording and one batch of windows are in memory)."""
    channels, patches, size = len(preprocessing.channels), preprocessing.patches, preprocessing.patch_size
    for index, rec in enumerate(recordings):
        starts = window_starts(rec, preprocessing, stride)
        for i in range(0, len(starts), batch_size):
            chunk = starts[i:i + batch_size]
            x = np.stack([rec.data[:, s:s + patches * size] for s in chunk])
            x = x.reshape(len(chunk), channels, patches, size)
            seconds = chunk / preprocessing.sfreq
            labels = [window_label(rec, float(s), preprocessing.window_seconds) for s in seconds]
            yield WindowBatch(x, seconds, labels, index)


def high_amplitude(x: np.ndarray, preprocessing: Preprocessing) -> np.ndarray:
    """Per window (batch,) True where some |x| >= 100 uV (outside CodeBrain's pretraining data)."""
    limit = HIGH_AMPLITUDE_UV / preprocessing.scale_uv
    return np.abs(x).reshape(len(x), -1).max(axis=1) >= limit


def artifact_kind(path: str | os.PathLike) -> str | None:
    """The ``cortexkit.kind`` of a safetensors file ('' when it has none), or None when ``path``
    is not a safetensors file; read from the header alone (the tensors are not loaded). The bytes
    decide, not the suffix: artifacts are often named ``.st`` or nothing at all."""
    import json
    import struct

    path = Path(path)
    if not path.is_file():
        return None
    with open(path, "rb") as handle:
        raw = handle.read(8)
        size = struct.unpack("<Q", raw)[0] if len(raw) == 8 else 0
        if not 2 <= size <= min(100 << 20, path.stat().st_size - 8):
            return None  # EDF/BDF/FIF/... headers read as a length are far off
        try:
            header = json.loads(handle.read(size))
        except ValueError:  # UnicodeDecodeError too
            return None
    if not isinstance(header, dict):
        return None
    return str((header.get("__metadata__") or {}).get("cortexkit.kind") or "")


def is_artifact_of_kind(path: str, kind: str) -> bool:
    """Whether ``path`` is a safetensors artifact of ``kind`` (lets one argument take either
    recordings or an artifact)."""
    return artifact_kind(path) == kind


def collect_windows(recordings, prep: "Preprocessing", stride: float | None = None,
                    max_windows: int = 0) -> np.ndarray:
    """Every window of ``recordings`` in memory, (N, C, P, L) float32 in 100 uV; at most
    ``max_windows`` evenly spaced ones (0 = all). At least 2 windows (training needs a pair)."""
    return training_set([b.x for b in iter_windows(recordings, prep, stride, 64)], prep, max_windows)


def training_set(parts: list, prep: "Preprocessing", max_windows: int = 0) -> np.ndarray:
    """Window batches ``parts`` as one array (N, C, P, L); at most ``max_windows`` evenly spaced
    ones (0 = all); at least 2 windows (training needs a pair), else a one-line error."""
    x = np.concatenate(parts) if parts else np.zeros((0,))
    if len(x) < 2:
        raise CortexError(f"training needs at least 2 windows of {prep.window_seconds:g} s, "
                          f"the recordings give {len(x)}")
    if max_windows and len(x) > max_windows:
        x = x[np.linspace(0, len(x) - 1, max_windows).round().astype(int)]
    return x

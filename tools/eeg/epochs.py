"""Event-locked windows, epoched as MNE epochs them: one window per kept annotation, from
``onset + tmin`` to ``onset + tmax``, optionally baseline-corrected, labelled by the annotation.

The paper cuts fixed windows (30 s of 1-s patches); events of a few seconds (motor imagery, ERPs)
need windows that follow them. Differences from ``mne.Epochs``, on purpose:

* the interval is half-open, ``[tmin, tmax)``: ``round((tmax - tmin) * 200)`` samples, so a 4-s
  event window is exactly 4 patches (MNE includes the sample at ``tmax``: 801 samples);
* a window shorter than a whole number of 1-s patches is zero-padded at its end after baseline
  correction (the encoder has no attention mask; ``padded_samples`` says how many are padding);
* a window that runs past either end of the recording is dropped (MNE drops it too, as NO_DATA).

Baseline ``(a, b)`` seconds relative to the event, ``None`` for the window's start or end (MNE's
``baseline``): each channel's mean over the samples of the window in ``[a, b]`` is subtracted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator, Sequence

import numpy as np

from cortexkit.formats.eeg import Recording, WindowBatch


@dataclass
class EventWindows:
    """What ``--windows events`` cuts: annotation names to keep (None = every annotation), the
    interval in seconds around each onset and the baseline interval (None = no correction)."""

    events: list[str] | None = None
    tmin: float = 0.0
    tmax: float = 4.0
    baseline: tuple[float | None, float | None] | None = None

    def __post_init__(self):
        if not self.tmax > self.tmin:
            raise ValueError(f"--tmax ({self.tmax:g}) must be after --tmin ({self.tmin:g})")
        if self.baseline is not None:
            low = self.tmin if self.baseline[0] is None else self.baseline[0]
            high = self.tmax if self.baseline[1] is None else self.baseline[1]
            if not (self.tmin <= low <= high <= self.tmax):
                raise ValueError(f"--baseline {low:g},{high:g} must lie inside --tmin/--tmax "
                                 f"({self.tmin:g}, {self.tmax:g}) with start <= end")

    def samples(self, sfreq: float) -> int:
        """Samples of one window, ``round((tmax - tmin) * sfreq)``."""
        return int(round((self.tmax - self.tmin) * sfreq))

    def patches(self, sfreq: float, patch_size: int) -> int:
        """Whole patches covering a window (the last one zero-padded where needed)."""
        return math.ceil(self.samples(sfreq) / patch_size)

    def to_dict(self, sfreq: float, patch_size: int) -> dict:
        out = asdict(self)
        out["baseline"] = None if self.baseline is None else list(self.baseline)
        samples = self.samples(sfreq)
        out.update(mode="events", samples=samples, patches=self.patches(sfreq, patch_size),
                   padded_samples=self.patches(sfreq, patch_size) * patch_size - samples)
        return out


def event_onsets(recording: Recording, spec: EventWindows) -> list[tuple[float, str]]:
    """(onset s, name) of the kept annotations, in time order."""
    keep = None if spec.events is None else set(spec.events)
    return sorted((onset, text) for onset, _, text in recording.annotations
                  if keep is None or text in keep)


def cut(recording: Recording, spec: EventWindows, sfreq: float, patch_size: int):
    """Event windows of one recording -> (x (n, C, P, patch_size) float32, starts (n,) s,
    labels, dropped count). ``recording.data`` is (C, samples) at ``sfreq``."""
    channels, total = recording.data.shape
    samples, patches = spec.samples(sfreq), spec.patches(sfreq, patch_size)
    xs, starts, labels, dropped = [], [], [], 0
    for onset, text in event_onsets(recording, spec):
        first = int(round((onset + spec.tmin) * sfreq))
        if first < 0 or first + samples > total:
            dropped += 1
            continue
        window = recording.data[:, first:first + samples].astype(np.float32, copy=True)
        if spec.baseline is not None:
            times = spec.tmin + np.arange(samples) / sfreq
            low = -np.inf if spec.baseline[0] is None else spec.baseline[0] - 0.5 / sfreq
            high = np.inf if spec.baseline[1] is None else spec.baseline[1] + 0.5 / sfreq
            inside = (times >= low) & (times <= high)
            if inside.any():
                window -= window[:, inside].mean(axis=1, keepdims=True)
        padded = np.zeros((channels, patches * patch_size), dtype=np.float32)
        padded[:, :samples] = window
        xs.append(padded.reshape(channels, patches, patch_size))
        starts.append(first / sfreq)
        labels.append(text)
    x = np.stack(xs) if xs else np.zeros((0, channels, patches, patch_size), np.float32)
    return x, np.asarray(starts, dtype=np.float64), labels, dropped


def iter_event_windows(recordings: Iterable[Recording], spec: EventWindows, sfreq: float,
                       patch_size: int, batch_size: int, counts: dict | None = None
                       ) -> Iterator[WindowBatch]:
    """Batches of event windows, one recording at a time (like ``formats.eeg.iter_windows``).
    ``counts`` (when given) gets ``kept`` and ``dropped`` totals and the ``kept`` per label."""
    for index, rec in enumerate(recordings):
        x, starts, labels, dropped = cut(rec, spec, sfreq, patch_size)
        if counts is not None:
            counts["dropped"] = counts.get("dropped", 0) + dropped
            counts["kept"] = counts.get("kept", 0) + len(x)
            for label in labels:
                counts.setdefault("labels", {})[label] = counts.get("labels", {}).get(label, 0) + 1
        for i in range(0, len(x), batch_size):
            yield WindowBatch(x[i:i + batch_size], starts[i:i + batch_size],
                              labels[i:i + batch_size], index)


def parse_baseline(text: str | None) -> tuple[float | None, float | None] | None:
    """``none`` -> None; ``A,B`` -> (A, B) seconds, an empty side meaning None (``,0`` is MNE's
    ``(None, 0)``)."""
    if text is None or text.strip().lower() in ("", "none"):
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise ValueError(f"--baseline {text!r}: give 'none' or 'START,END' seconds (either may be "
                         "empty: ',0' is from the window's start to the event)")
    try:
        return tuple(None if p == "" else float(p) for p in parts)  # type: ignore[return-value]
    except ValueError:
        raise ValueError(f"--baseline {text!r}: START and END must be numbers (seconds)") from None


def names(text: str | Sequence[str] | None) -> list[str] | None:
    """``--events T1,T2`` -> ['T1', 'T2']; empty or ``all`` -> None (every annotation)."""
    if text is None:
        return None
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if str(t).strip()]
    return None if not items or items == ["all"] else items

"""How the recording options of tokenize-eeg cut windows out of recordings: the paper's fixed
windows every ``--stride`` seconds, or (``--windows events``) one window per kept annotation
(:mod:`cortexkit.tools.eeg.epochs`). ``log`` is anything with ``info``/``warn`` (the command's Run)."""

from __future__ import annotations

import dataclasses

from cortexkit.formats import eeg
from cortexkit.formats.errors import CortexError
from cortexkit.tools.eeg import epochs


class Tracker:
    """Collects per-recording facts (name, rates, band, annotations) while the windows stream."""

    def __init__(self, stream):
        self.stream, self.items = stream, []

    def __iter__(self):
        for rec in self.stream:
            self.items.append(rec)
            yield rec
            rec.data = None  # only the facts stay, not the signal


class WindowCut:
    """How the recording options cut windows: the paper's fixed windows every --stride seconds,
    or (--windows events) one window per kept annotation, as MNE epochs them."""

    def __init__(self, log, prep, max_patches, *, stride, batch_size, sfreq, channel_names, units,
                 window_mode, events, tmin, tmax, baseline):
        self.log, self.prep, self.stride, self.batch_size = log, prep, stride, batch_size
        self.reading = dict(sfreq=sfreq, channel_names=channel_names, units=units)
        self.counts: dict = {}
        self.spec = None
        if window_mode == "fixed":
            given = [n for n, v in (("--events", events), ("--tmax", tmax)) if v is not None]
            given += ["--tmin"] if tmin else []
            given += ["--baseline"] if baseline and baseline.strip().lower() != "none" else []
            if given:
                raise CortexError(f"{', '.join(given)} cut event windows: add --windows events")
            return
        if stride is not None:
            raise CortexError("--stride is for fixed windows; --windows events cuts one window per "
                              "annotation (choose them with --events)")
        try:
            self.spec = epochs.EventWindows(
                events=epochs.names(events), tmin=tmin,
                tmax=tmin + prep.window_seconds if tmax is None else tmax,
                baseline=epochs.parse_baseline(baseline))
        except ValueError as exc:
            raise CortexError(str(exc)) from None
        patches = self.spec.patches(prep.sfreq, prep.patch_size)
        if patches > max_patches:
            raise CortexError(f"an event window of {self.spec.tmax - self.spec.tmin:g} s needs "
                              f"{patches} patches of 1 s; the tokenizer has {max_patches} time slots: "
                              f"shorten --tmin/--tmax or train with --patches {patches}")

    @property
    def patches(self) -> int:
        return self.prep.patches if self.spec is None else self.spec.patches(self.prep.sfreq,
                                                                             self.prep.patch_size)

    def batches(self, stream, context: bool = False):
        """Window batches of ``stream``; ``context`` (fixed windows): one more patch at the same starts."""
        if self.spec is None:
            if context:
                prep = dataclasses.replace(self.prep, patches=self.prep.patches + 1)
                return eeg.iter_windows(stream, prep, self.stride or self.prep.window_seconds, self.batch_size)
            return eeg.iter_windows(stream, self.prep, self.stride, self.batch_size)
        return epochs.iter_event_windows(stream, self.spec, self.prep.sfreq, self.prep.patch_size,
                                         self.batch_size, self.counts)

    def stream(self, paths, context: bool = False):
        """(tracker, batches) over recordings ``paths``."""
        tracker = Tracker(eeg.load_each(paths, self.prep, warn=self.log.warn, **self.reading))
        return tracker, self.batches(tracker, context)

    def check_found(self, items) -> None:
        """Event windows: at least one, else a one-line error naming the annotations there are."""

        if self.spec is None:
            return
        if not self.counts.get("kept"):
            have = sorted({text for rec in items for _, _, text in rec.annotations})
            wanted = ",".join(self.spec.events) if self.spec.events else "any annotation"
            raise CortexError(f"no event window: the recordings have no {wanted} with "
                              f"[{self.spec.tmin:g}, {self.spec.tmax:g}) s inside them "
                              f"({self.counts.get('dropped', 0)} ran past an end; annotations there: "
                              f"{', '.join(have[:20]) or 'none'})")
        labels = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.get("labels", {}).items()))
        self.log.info(f"{self.counts['kept']} event windows of {self.spec.tmax - self.spec.tmin:g} s "
                      f"({labels}); {self.counts.get('dropped', 0)} dropped past a recording's end")

    def training_windows(self, paths, max_windows: int = 0, context: bool = False):
        """(x, high): every window of ``paths`` as one array (N, C, P, L) in 100 uV, at most
        ``max_windows`` of them evenly spread, and the share with |x| >= 100 uV. ``context``
        (fixed windows, for train's random crop): each window carries the next patch of its
        recording, (N, C, P+1, L), at the same starts (a recording's last window goes when the
        recording ends before its context patch does)."""
        context = context and self.spec is None
        tracker, batches = self.stream(paths, context)
        parts = [b.x for b in batches]
        self.check_found(tracker.items)
        x = eeg.training_set(parts, self.prep, max_windows)
        high = float(eeg.high_amplitude(x[:, :, :self.prep.patches], self.prep).mean())
        seconds = self.prep.window_seconds if context else x.shape[2] * self.prep.patch_size / self.prep.sfreq
        extra = " (+1 s of context each, for random crops)" if context else ""
        self.log.info(f"{len(x)} training windows of {seconds:g} s{extra}; {100 * high:.1f}% with "
                      f"|x| >= 100 uV")
        return x, high

    def describe(self) -> dict:
        if self.spec is None:
            return {"mode": "fixed", "stride": self.stride, "patches": self.prep.patches,
                    "label": "the annotation covering most of the window"}
        return {**self.spec.to_dict(self.prep.sfreq, self.prep.patch_size),
                "label": "the event's annotation"}

"""Event-locked windows against MNE's own epoching, and the k-means floor on closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cortexkit.formats.eeg import Recording
from cortexkit.tools.eeg import api, epochs
from cortexkit.tools.eeg.floor import kmeans, kmeans_floor


def _recording(seconds=20.0, sfreq=200.0, channels=3, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.normal(0, 0.3, (channels, int(seconds * sfreq))).astype(np.float32)
    data += np.arange(channels, dtype=np.float32)[:, None]  # a DC offset per channel for the baseline
    annotations = [(0.2, 4.0, "T0"), (3.0, 4.0, "T1"), (7.5, 4.0, "T2"), (12.0, 4.0, "T1"),
                   (19.0, 1.0, "T2")]  # the last runs past the end for a 2-s window
    return Recording("r.edf", data, sfreq, ["C3", "CZ", "C4"][:channels], 75.0, annotations)


@pytest.mark.parametrize("tmin,tmax,baseline", [(0.0, 2.0, None), (-0.5, 1.5, (None, 0.0)),
                                                (0.0, 2.0, (0.5, 1.0))])
def test_event_windows_match_mne_epochs(tmin, tmax, baseline):
    mne = pytest.importorskip("mne")
    rec = _recording()
    spec = epochs.EventWindows(events=["T1", "T2"], tmin=tmin, tmax=tmax, baseline=baseline)
    x, starts, labels, dropped = epochs.cut(rec, spec, 200.0, 200)
    assert labels == ["T1", "T2", "T1"] and dropped == 1  # T0 not asked for, 19 s + 1.5 s > 20 s
    np.testing.assert_allclose(starts, np.array([3.0, 7.5, 12.0]) + tmin)
    raw = mne.io.RawArray(rec.data.astype(np.float64), mne.create_info(3, 200.0, "eeg"), verbose="error")
    raw.set_annotations(mne.Annotations([a[0] for a in rec.annotations], [a[1] for a in rec.annotations],
                                        [a[2] for a in rec.annotations]))
    events, ids = mne.events_from_annotations(raw, event_id={"T1": 1, "T2": 2}, verbose="error")
    # MNE includes the sample at tmax; our interval is half-open
    ref = mne.Epochs(raw, events, ids, tmin=tmin, tmax=tmax - 1 / 200, baseline=baseline,
                     preload=True, verbose="error").get_data()
    assert ref.shape[0] == 3
    np.testing.assert_allclose(x.reshape(3, 3, -1), ref, atol=1e-5)


def test_event_windows_pad_to_whole_patches_and_check_their_interval():
    rec = _recording()
    spec = epochs.EventWindows(events=None, tmin=0.0, tmax=1.5)
    x, starts, labels, dropped = epochs.cut(rec, spec, 200.0, 200)
    assert x.shape == (4, 3, 2, 200) and labels[0] == "T0" and dropped == 1
    assert np.all(x[:, :, 1, 100:] == 0) and np.all(x[:, :, 1, :100] != 0)
    assert spec.to_dict(200.0, 200)["padded_samples"] == 100
    with pytest.raises(ValueError, match="must be after"):
        epochs.EventWindows(tmin=1.0, tmax=1.0)
    with pytest.raises(ValueError, match="inside"):
        epochs.EventWindows(tmin=0.0, tmax=1.0, baseline=(-1.0, 0.0))
    assert epochs.parse_baseline(",0") == (None, 0.0) and epochs.parse_baseline("none") is None
    with pytest.raises(ValueError, match="START,END"):
        epochs.parse_baseline("0")
    counts: dict = {}
    batches = list(epochs.iter_event_windows([rec, rec], spec, 200.0, 200, 2, counts))
    assert [len(b.x) for b in batches] == [2, 2, 2, 2] and batches[-1].source_index == 1
    assert counts == {"kept": 8, "dropped": 2, "labels": {"T0": 2, "T1": 4, "T2": 2}}


def test_kmeans_recovers_separated_clusters_and_the_floor_is_exact_on_them():
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 5, (4, 200)).astype(np.float32)
    labels = rng.integers(0, 4, 400)
    points = centres[labels] + rng.normal(0, 0.01, (400, 200)).astype(np.float32)
    found = kmeans(torch.from_numpy(points), 4, generator=torch.Generator().manual_seed(0)).numpy()
    # every true centre has a found centroid next to it
    assert np.abs(found[:, None] - centres[None]).max(-1).min(0).max() < 0.05
    windows = centres[labels].reshape(100, 2, 2, 200)  # (N, C, P, L): only 4 distinct patches
    floor = kmeans_floor(windows, windows[:10], 4, seed=0)
    assert floor["time_nmse"] == pytest.approx(0.0, abs=1e-9)
    assert floor["amplitude_nmse_signal"] == pytest.approx(0.0, abs=1e-9)
    assert floor["amplitude_nmse"] < 1e-6
    # one code for everything: the floor is the mean patch, NMSE near the patches' spread
    assert kmeans_floor(windows, windows[:10], 1, seed=0)["time_nmse"] > 0.5


def test_validation_split_is_spread_and_disjoint():
    fit, validation = api.validation_split(20, 0.1)
    assert list(validation) == [5, 15] and len(fit) == 18 and not set(fit) & set(validation)
    assert len(api.validation_split(3, 0.1)[1]) == 0 and len(api.validation_split(20, 0)[1]) == 0


def test_auto_signal_weight_makes_the_signal_term_a_time_nmse():
    from cortexkit.tools.eeg import losses
    from cortexkit.tools.eeg.model import TFDualTokenizer, TokenizerConfig

    rng = np.random.default_rng(0)
    x = (rng.normal(0, 0.5, (4, 3, 2, 200)) + 3.0).astype(np.float32)  # offsets do not count
    weight = api.signal_weight(x)
    assert weight == pytest.approx(1 / 0.25, rel=0.05)
    assert api.signal_weight(x * 10) == pytest.approx(weight / 100, rel=1e-6)  # unit-free
    torch.manual_seed(0)
    model = TFDualTokenizer(TokenizerConfig(channels=3, max_patches=2, dim=16, depth=1, heads=2,
                                            decoder_depth=1, codebook_size=8)).eval()
    plain = losses.tokenizer_loss(model, torch.from_numpy(x), contrastive=False)
    weighted = losses.tokenizer_loss(model, torch.from_numpy(x), contrastive=False, signal_weight=weight)
    assert float(weighted["signal"]) == pytest.approx(float(plain["signal"]))  # reported unweighted
    assert float(weighted["total"]) == pytest.approx(float(plain["total"]) + (weight - 1)
                                                     * float(plain["signal"]), rel=1e-5)


def test_auto_sizes_follow_the_data_and_the_device():
    from cortexkit.tools.eeg.model import auto_codebook_size, auto_preset

    assert auto_codebook_size(100) == 256 and auto_codebook_size(278 * 19 * 4) == 1024
    assert auto_codebook_size(10 ** 7) == 4096 and auto_codebook_size(16 * 2048) == 2048
    assert auto_preset(10 ** 7, "cpu") == "tiny" and auto_preset(10 ** 4, "cuda") == "small"
    assert auto_preset(10 ** 6, "cuda") == "base"

"""formats/eeg: reading every MNE format and arrays, the input convention, windows, bad input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mne")

from cortexkit.formats import eeg  # noqa: E402
from cortexkit.formats.errors import CortexError  # noqa: E402

MNE_DATA = "eeg/mne_testdata"


def sine_recording(tmp_path, sfreq=250.0, seconds=12.0, channels=("C3", "CZ", "C4"), parts=()):
    """An NPY array in microvolts: a 10 Hz sine of 50 uV on every channel plus ``parts``."""
    t = np.arange(int(sfreq * seconds)) / sfreq
    data = np.stack([50 * np.sin(2 * np.pi * 10 * t + i) for i in range(len(channels))])
    for freq, amp in parts:
        data = data + amp * np.sin(2 * np.pi * freq * t)
    path = tmp_path / "rec.npy"
    np.save(path, data)
    return path


def test_names_are_normalised_with_aliases():
    assert eeg.normalise_name("Fc5.") == "FC5"
    assert eeg.normalise_name("T7..") == "T3"
    assert eeg.normalise_name("EEG P8-REF") == "T6"
    assert eeg.normalise_name(" fp1 ") == "FP1"
    assert eeg.parse_channels("standard-1020") == list(eeg.STANDARD_1020)
    assert eeg.parse_channels("c3, Cz.,t8") == ["C3", "CZ", "T4"]
    with pytest.raises(CortexError, match="twice"):
        eeg.parse_channels("T4,T8")


def test_array_units_resampling_band_and_notch(tmp_path):
    path = sine_recording(tmp_path, parts=[(60.0, 20.0)])
    prep = eeg.Preprocessing(channels=["C3", "CZ", "C4"], patches=4, mains=60.0)
    rec = eeg.load(str(path), prep, sfreq=250, channel_names=["C3", "Cz", "C4"])
    assert rec.data.shape == (3, 12 * 200) and rec.data.dtype == np.float32
    middle = rec.data[:, 400:-400]
    t = np.arange(middle.shape[1]) / 200.0
    spectrum = np.abs(np.fft.rfft(middle[0])) * 2 / middle.shape[1]
    freqs = np.fft.rfftfreq(middle.shape[1], 1 / 200.0)
    # 50 uV -> 0.5 in units of 100 uV; the 60 Hz mains line is notched out
    assert spectrum[np.argmin(abs(freqs - 10))] == pytest.approx(0.5, rel=0.03)
    assert spectrum[np.argmin(abs(freqs - 60))] < 0.02 * 0.2
    assert len(t) > 0 and rec.h_freq == 75.0
    rec_mv = eeg.load(str(path), prep, sfreq=250, channel_names=["C3", "Cz", "C4"], units="mV")
    np.testing.assert_allclose(rec_mv.data, rec.data * 1000, rtol=1e-4, atol=1e-4)


def test_load_each_checks_every_path_first_and_reads_lazily(tmp_path, monkeypatch):
    path = sine_recording(tmp_path, parts=[(10.0, 20.0)])
    prep = eeg.Preprocessing(channels=["C3", "CZ", "C4"], patches=4, mains=None)
    read = []
    monkeypatch.setattr(eeg, "read_raw", lambda source, **kw: read.append(source) or (_ for _ in ()).throw(
        AssertionError("read before every path was checked")))
    with pytest.raises(CortexError, match=r"absent\.edf: no such file"):
        eeg.load_each([str(path), str(tmp_path / "absent.edf")], prep)
    assert read == []  # the missing second path stops the command before the first is read
    monkeypatch.undo()
    stream = eeg.load_each([str(path), str(path)], prep, sfreq=250, channel_names="C3, Cz,C4")
    first = next(stream)  # lazy: one recording at a time
    direct = eeg.load(str(path), prep, sfreq=250, channel_names=["C3", "Cz", "C4"])
    np.testing.assert_array_equal(first.data, direct.data)
    assert len(list(stream)) == 1


def test_upper_edge_clamped_and_low_rates_refused(tmp_path):
    path = sine_recording(tmp_path, sfreq=128.0)
    prep = eeg.Preprocessing(channels=["C3", "CZ", "C4"], patches=4)
    rec = eeg.load(str(path), prep, sfreq=128, channel_names=["C3", "CZ", "C4"])
    assert rec.h_freq == pytest.approx(0.45 * 128)
    low = sine_recording(tmp_path, sfreq=50.0)
    with pytest.raises(CortexError, match="too low"):
        eeg.load(str(low), prep, sfreq=50, channel_names=["C3", "CZ", "C4"])


def test_bad_arrays(tmp_path):
    prep = eeg.Preprocessing(channels=["C3", "CZ", "C4"], patches=4)
    names = ["C3", "CZ", "C4"]
    with pytest.raises(CortexError, match="missing channel.*C4"):
        eeg.load(str(sine_recording(tmp_path, channels=("C3", "CZ", "PZ"))), prep, sfreq=250,
                 channel_names=["C3", "CZ", "PZ"])
    with pytest.raises(CortexError, match="shorter than one window"):
        eeg.load(str(sine_recording(tmp_path, seconds=3.0)), prep, sfreq=250, channel_names=names)
    with pytest.raises(CortexError, match="--sfreq and --channel-names"):
        eeg.load(str(sine_recording(tmp_path)), prep)
    path = sine_recording(tmp_path)
    data = np.load(path)
    data[1, 100] = np.nan
    np.save(path, data)
    with pytest.raises(CortexError, match="NaN.*CZ"):
        eeg.load(str(path), prep, sfreq=250, channel_names=names)
    data[1] = 0.0
    np.save(path, data)
    warnings = []
    rec = eeg.load(str(path), prep, sfreq=250, channel_names=names, warn=warnings.append)
    assert len(warnings) == 1 and warnings[0].startswith("flat-channel") and "CZ" in warnings[0]
    assert np.abs(rec.data[1]).max() < 1e-6
    np.save(path, np.zeros((3, 3000)))
    with pytest.raises(CortexError, match="every channel is flat"):
        eeg.load(str(path), prep, sfreq=250, channel_names=names)


def test_safetensors_array_reads_like_npy(tmp_path):
    from cortexkit.formats.artifact import write_artifact

    path = sine_recording(tmp_path)
    write_artifact(tmp_path / "rec.safetensors", {"data": np.load(path)}, "eeg-signal")
    prep = eeg.Preprocessing(channels=["C3", "CZ", "C4"], patches=4)
    a = eeg.load(str(path), prep, sfreq=250, channel_names=["C3", "CZ", "C4"])
    b = eeg.load(str(tmp_path / "rec.safetensors"), prep, sfreq=250, channel_names=["C3", "CZ", "C4"])
    np.testing.assert_array_equal(a.data, b.data)


@pytest.mark.parametrize("name, channels, patches", [
    ("test_edf_stim_channel.edf", None, 4),          # EDF, 128 Hz, 'EEG Fp1' names
    ("test.bdf", None, 1),                           # BDF 24-bit, 2048 Hz
    ("test.vhdr", "FP1,FP2,C3,C4,O1,O2", 4),         # BrainVision, 1000 Hz
])
def test_mne_formats_read_in_microvolts(shared_data, name, channels, patches):
    import mne

    path = shared_data / MNE_DATA / name
    prep = eeg.Preprocessing(channels=eeg.parse_channels(channels), patches=patches)
    rec = eeg.load(str(path), prep)
    raw = mne.io.read_raw(path, preload=True, verbose="error")
    assert rec.data.shape[0] == len(prep.channels)
    assert rec.data.shape[1] == pytest.approx(raw.n_times / raw.info["sfreq"] * 200, abs=1)
    # the units: the band-passed signal in 100 uV against MNE's volts picked by name
    picked = raw.copy().pick(rec.file_channels).filter(0.3, rec.h_freq, verbose="error")
    ratio = np.std(rec.data) / (np.std(picked.get_data()) * 1e4)
    assert ratio == pytest.approx(1.0, rel=0.1)


def test_fif_with_its_own_montage_and_missing_channels(shared_data):
    fif = shared_data / "eeg/yasa/data_resting_EO_200Hz_raw.fif"
    prep = eeg.Preprocessing(channels=eeg.parse_channels("F4-A1,CZ-A2"), patches=30)
    rec = eeg.load(str(fif), prep)
    assert rec.data.shape == (2, 72000) and rec.sfreq_in == 200.0
    with pytest.raises(CortexError, match="missing channel.*FP1"):
        eeg.load(str(fif), eeg.Preprocessing())
    vhdr = shared_data / MNE_DATA / "test.vhdr"
    with pytest.raises(CortexError, match=r"missing channel\(s\) T3, T4 "):
        eeg.load(str(vhdr), eeg.Preprocessing(patches=4))


def test_unknown_edf_units_need_units(shared_data, tmp_path):
    data = bytearray((shared_data / MNE_DATA / "test_edf_stim_channel.edf").read_bytes())
    n = int(data[252:256].decode())
    start = 256 + 96 * n  # physical dimension fields, 8 bytes per signal
    for i in range(n):
        data[start + 8 * i:start + 8 * i + 8] = b"xyz     "
    bad = tmp_path / "units.edf"
    bad.write_bytes(bytes(data))
    prep = eeg.Preprocessing(patches=4)
    with pytest.raises(CortexError, match=r"unknown physical unit.*n/a.*--units"):
        eeg.load(str(bad), prep)
    good = eeg.load(str(shared_data / MNE_DATA / "test_edf_stim_channel.edf"), prep)
    fixed = eeg.load(str(bad), prep, units="uV")
    np.testing.assert_allclose(fixed.data, good.data, rtol=1e-5, atol=1e-6)


def test_windows_strides_and_majority_labels(shared_data):
    prep = eeg.Preprocessing(patches=4)
    rec = eeg.load(str(shared_data / "eeg/eegmmidb_S001/S001R03.edf"), prep)
    assert len(rec.annotations) == 30
    starts = eeg.window_starts(rec, prep, 2.0)
    assert starts[1] - starts[0] == 400 and starts[-1] + 800 <= rec.data.shape[1]
    batches = list(eeg.iter_windows([rec], prep, 2.0, 7))
    assert sum(len(b.x) for b in batches) == len(starts)
    assert batches[0].x.shape == (7, 19, 4, 200)
    np.testing.assert_array_equal(batches[0].x[1].reshape(19, -1), rec.data[:, 400:1200])
    onset, duration, text = rec.annotations[1]
    assert eeg.window_label(rec, onset, duration) == text
    assert eeg.window_label(rec, 10_000.0, 4.0) == ""
    # the label covering most of the window wins
    first = rec.annotations[0]
    assert eeg.window_label(rec, first[0] + first[1] - 1.0, 4.0) == rec.annotations[1][2]


def _eeglab_set(path, data_uv, sfreq, names, event):
    """A minimal single-trial EEGLAB .set (MATLAB v5, data inline, microvolts) with one event
    ``(type, latency in 1-based samples, duration in samples)``."""
    from scipy.io import savemat

    chanlocs = np.zeros((len(names),), dtype=[("labels", object)])
    for i, name in enumerate(names):
        chanlocs[i]["labels"] = name
    events = np.zeros((1,), dtype=[("type", object), ("latency", object), ("duration", object)])
    events[0] = event
    n = data_uv.shape[1]
    savemat(path, {"EEG": dict(nbchan=float(len(names)), pnts=float(n), trials=1.0, srate=sfreq,
                               xmin=0.0, xmax=(n - 1) / sfreq, data=data_uv.astype(np.float32),
                               chanlocs=chanlocs, event=events, epoch=np.array([]),
                               icawinv=np.array([]), icasphere=np.array([]),
                               icaweights=np.array([]), ref="common")},
            appendmat=False, oned_as="row")


def test_eeglab_set_reads_in_microvolts_with_its_events(tmp_path):
    """EEGLAB stores microvolts; through MNE and the convention a 50 uV sine is 0.5 (100 uV units)
    and its event is a window label (no EEGLAB file in the shared data, so one is written here)."""
    names = ["Fp1", "Fp2", "C3", "C4", "O1", "O2"]
    t = np.arange(250 * 10) / 250.0
    data = np.stack([50 * np.sin(2 * np.pi * 10 * t + i) for i in range(len(names))])
    path = tmp_path / "rec.set"
    _eeglab_set(path, data, 250.0, names, ("eyes", 251.0, 500.0))
    prep = eeg.Preprocessing(channels=eeg.parse_channels("FP1,FP2,C3,C4,O1,O2"), patches=4)
    rec = eeg.load(str(path), prep)
    assert rec.data.shape == (6, 2000) and rec.sfreq_in == 250.0
    middle = rec.data[0, 400:-400]
    spectrum = np.abs(np.fft.rfft(middle)) * 2 / len(middle)
    freqs = np.fft.rfftfreq(len(middle), 1 / 200.0)
    assert spectrum[np.argmin(abs(freqs - 10))] == pytest.approx(0.5, rel=0.03)
    assert rec.annotations == [(pytest.approx(1.0), pytest.approx(2.0), "eyes")]
    assert eeg.window_label(rec, 0.0, 4.0) == "eyes"
    with pytest.raises(CortexError, match=r"missing channel\(s\) F3"):
        eeg.load(str(path), eeg.Preprocessing(patches=4))


def test_artifact_kind_is_read_from_the_bytes_not_the_suffix(shared_data, tmp_path):
    """features takes tokens or recordings in one argument: a tokens artifact named .st (or with
    no suffix) is still an artifact, and EDF/NPY/BrainVision files never are."""
    from cortexkit.formats.artifact import write_artifact

    for name in ("tokens.safetensors", "tokens.st", "tokens"):
        write_artifact(tmp_path / name, {"token_f": np.zeros((1, 2, 3), np.int16)}, "eeg-tokens")
        assert eeg.is_artifact_of_kind(str(tmp_path / name), "eeg-tokens")
        assert not eeg.is_artifact_of_kind(str(tmp_path / name), "eeg-tokenizer")
    np.save(tmp_path / "a.npy", np.zeros((2, 3)))
    for path in (shared_data / MNE_DATA / "test.edf", shared_data / MNE_DATA / "test.vhdr",
                 tmp_path / "a.npy", tmp_path / "absent.st"):
        assert not eeg.is_artifact_of_kind(str(path), "eeg-tokens")
        assert eeg.artifact_kind(path) is None
    # as a recording, any artifact name gives the artifact's own error, not MNE's "file type"
    prep = eeg.Preprocessing(channels=["C3", "CZ", "C4"], patches=4)
    with pytest.raises(CortexError, match="'eeg-tokens' artifact is not a recording"):
        eeg.load(str(tmp_path / "tokens.st"), prep, sfreq=250, channel_names=["C3", "CZ", "C4"])
    write_artifact(tmp_path / "rec.st", {"data": np.load(sine_recording(tmp_path))}, "eeg-signal")
    rec = eeg.load(str(tmp_path / "rec.st"), prep, sfreq=250, channel_names=["C3", "CZ", "C4"])
    assert rec.data.shape == (3, 12 * 200)


def test_windows_stream_one_recording_and_one_batch_at_a_time():
    """Long recordings stream: the first batch comes out before the second recording is read,
    and a batch holds at most batch_size windows (never the whole recording's)."""
    prep = eeg.Preprocessing(channels=["C3"], patches=2)
    read = []

    def recordings():
        for i in range(2):
            read.append(i)
            data = np.arange(200 * 40, dtype=np.float32)[None] + i  # 20 windows of 2 s
            yield eeg.Recording(f"r{i}", data, 200.0, ["C3"], 75.0, [])

    batches = eeg.iter_windows(recordings(), prep, None, 3)
    first = next(batches)
    assert read == [0] and first.x.shape == (3, 1, 2, 200)
    rest = list(batches)
    assert read == [0, 1] and max(len(b.x) for b in rest) == 3
    assert sum(len(b.x) for b in [first, *rest]) == 40
    assert [b.source_index for b in rest][-1] == 1 and rest[-1].x[-1, 0, -1, -1] == 200 * 40 - 1 + 1

"""train-pcn reports figures a user can compare (issue 31, items 2 and 3), through the installed
command: train top-1 and loss of the forward pass, evaluate's loss and energy, an undefined
imbalance said as such, BP's logged energies = evaluate's, --limit, warnings, -q."""

import numpy as np
import pytest
import yaml
from toydata import make_images, write_set

TOOL = "train-pcn"


def train_frozen(cli, tmp_path, train, *args):
    """One epoch in one batch at a learning rate too small to move a weight: the logged train
    figures must then be the forward pass of the saved model on the training images (all of
    them: no validation share held out for a baseline)."""
    model, log = tmp_path / "m.st", tmp_path / "log.yaml"
    p = cli(TOOL, "train", train, "--depth", "4", "--width", "12", "--epochs", "1",
            "--batch-size", "1000", "--lr", "1e-12", "--seed", "3", "--baseline", "none", *args, "--log", log,
            "-o", model)
    assert p.returncode == 0, p.stderr
    record = yaml.safe_load(log.read_text())[0]
    rep = cli(TOOL, "evaluate", model, train)
    assert rep.returncode == 0, rep.stderr
    return record, yaml.safe_load(rep.stdout)


@pytest.mark.parametrize("method", ["pc", "ipc", "meta-pcn", "bp"])
def test_train_figures_are_the_forward_pass(cli, tmp_path, method):
    train = write_set(tmp_path / "t.st", *make_images(60))
    # PC's inference with a large rate pulls the top latent onto the clamped label: scored after
    # inference, train top-1 would be the label's, near 100 %
    extra = ["--steps", "30", "--state-lr", "0.5"] if method in ("pc", "ipc") else []
    record, report = train_frozen(cli, tmp_path, train, "--method", method, *extra)
    assert record["train_top1"] == pytest.approx(report["top1"], abs=1e-9)
    assert record["train_loss"] == pytest.approx(report["loss"], rel=1e-5)
    assert report["top1"] < 0.9   # an untrained net: the old post-inference figure was ~1
    assert report["energy"] >= 0 and len(record["layer_energy"]) == 4
    if method == "bp":  # backprop's logged energies are the errors evaluate reports
        assert min(record["layer_energy"]) > 0
        np.testing.assert_allclose(record["layer_energy"], report["layer_energy"], rtol=1e-4)
        assert report["energy"] == pytest.approx(report["loss"], rel=1e-9)  # F at the forward point
    if method == "pc":  # inference lowered F below its forward value, the output loss
        assert report["energy"] < report["loss"]


def test_undefined_imbalance_is_null_with_the_reason(cli, tmp_path):
    train = write_set(tmp_path / "t.st", *make_images(30))
    model, log = tmp_path / "m.st", tmp_path / "log.yaml"
    p = cli(TOOL, "train", train, "--depth", "5", "--width", "8", "--epochs", "1", "--steps", "1",
            "--log", log, "-o", model)
    assert p.returncode == 0, p.stderr
    text = log.read_text()
    assert ".inf" not in text and ".nan" not in text
    record = yaml.safe_load(text)[0]
    assert record["imbalance"] is None and "layers 1, 2, 3 is exactly 0" in record["imbalance_note"]
    none = yaml.safe_load(cli(TOOL, "evaluate", model, train, "--steps", "0").stdout)
    assert none["imbalance_log10"] is None and "every hidden layer" in none["imbalance_note"]
    full = yaml.safe_load(cli(TOOL, "evaluate", model, train, "--steps", "4").stdout)
    assert full["imbalance_log10"] > 0 and "imbalance_note" not in full
    # the meta-PE energy falls to 0 once T >= L - 1 unit steps have settled every layer
    assert full["energy"] == pytest.approx(0, abs=1e-10) and none["energy"] > 0
    assert full["loss"] == pytest.approx(none["loss"])   # loss is the forward pass's either way


def test_limit_is_class_balanced_and_seeded(cli, tmp_path):
    # labels sorted by class: a plain head cut would take class 0 only
    data = write_set(tmp_path / "t.st", *make_images(90, sort=True))
    model = tmp_path / "m.st"
    p = cli(TOOL, "train", data, "--depth", "2", "--epochs", "1", "--limit", "31", "-v",
            "-o", model)
    assert p.returncode == 0, p.stderr
    # 31 images load; train holds 10 % per class (3) out for its baseline check, fits on 28
    assert "train: stopped after 1 of 1 epochs (completed, examples 28" in p.stderr
    assert "validation (3 held-out training images)" in p.stderr
    reports = [yaml.safe_load(cli(TOOL, "evaluate", model, data, "--limit", "30", "--seed",
                                  str(s)).stdout) for s in (0, 0, 1)]
    assert all(r["examples"] == 30 and r["class_examples"] == [10, 10, 10] for r in reports)
    from cortexkit.tools.pcn.api import limit_indices

    labels = make_images(90, sort=True)[1]
    a, b, c = (limit_indices(90, 30, labels, s) for s in (0, 0, 1))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    counts = np.bincount(labels[limit_indices(90, 31, labels, 4)])
    assert sorted(counts) == [10, 10, 11]
    out = tmp_path / "p.csv"
    assert cli(TOOL, "predict", model, data, "--limit", "7", "-o", out).returncode == 0
    assert len(out.read_text().splitlines()) == 8
    bad = cli(TOOL, "evaluate", model, data, "--limit", "0")
    assert bad.returncode == 2 and "--limit" in bad.stderr


def test_warnings_name_options_of_the_method_and_q_silences_them(cli, tmp_path):
    train = write_set(tmp_path / "t.st", *make_images(24))
    common = ["--depth", "6", "--width", "8", "--epochs", "1"]
    pc = cli(TOOL, "train", train, *common, "--method", "pc", "-o", tmp_path / "pc.st")
    assert pc.returncode == 0, pc.stderr
    err = pc.stderr
    assert "is small for 6 layers" in err and "--steps" in err and "--schedule" not in err
    meta = cli(TOOL, "train", train, *common, "--steps", "2", "-o", tmp_path / "m.st")
    assert "--schedule sweep" in meta.stderr
    quiet = cli(TOOL, "train", train, *common, "--method", "pc", "-q", "-o", tmp_path / "q.st")
    assert quiet.returncode == 0 and quiet.stderr == ""

"""train-pcn --keep (pcn15): `best` returns the weights of the epoch with the highest top-1 on the
held-out validation share and stores that epoch; `last` (the default) is the run as before, bit
for bit. Through the installed command."""

import numpy as np
import pytest
import yaml
from toydata import make_images, write_set

TOOL = "train-pcn"


@pytest.mark.slow
def test_keep_best_returns_the_argmax_epoch_of_the_logged_validation_top1(cli, tmp_path):
    from safetensors.numpy import load_file

    from cortexkit.formats.artifact import read_artifact
    from cortexkit.tools.pcn.api import validation_split

    images, labels = make_images(150, seed=7)
    rng = np.random.default_rng(1)   # 40 % of the labels redrawn: the validation score moves
    labels = np.where(rng.random(150) < 0.4, rng.integers(0, 3, 150), labels)
    train = write_set(tmp_path / "train.st", images, labels)
    common = ["--depth", "5", "--width", "8", "--epochs", "6", "--batch-size", "16", "--lr",
              "0.03", "--seed", "3", "--baseline", "none"]
    best = cli(TOOL, "train", train, *common, "--keep", "best", "--log", tmp_path / "best.yaml",
               "--checkpoint", tmp_path / "last_epoch.st", "-o", tmp_path / "best.st")
    assert best.returncode == 0, best.stderr
    log = yaml.safe_load((tmp_path / "best.yaml").read_text())
    scores = [r["val_top1"] for r in log]
    kept = read_artifact(str(tmp_path / "best.st")).meta_json("pcn.keep")
    chosen = int(np.argmax(scores)) + 1           # the first epoch with the highest score
    assert kept["keep"] == "best" and kept["epoch"] == chosen, (kept, scores)
    assert chosen < len(scores), scores        # these settings pick an earlier epoch (2 of 6)
    assert log[-1]["keep"] == kept and kept["val_top1"] == pytest.approx(scores[chosen - 1],
                                                                         abs=1e-4)
    assert f"the weights of epoch {chosen}" in best.stderr

    # the returned weights score that figure on the held-out share (predict, through the command)
    fit, held = validation_split(labels, 0.1, 3)
    assert kept["validation_images"] == len(held) == 15
    write_set(tmp_path / "held.st", images[held], labels[held])
    pred = cli(TOOL, "predict", tmp_path / "best.st", tmp_path / "held.st", "-o",
               tmp_path / "pred.csv")
    assert pred.returncode == 0, pred.stderr
    predicted = np.loadtxt(tmp_path / "pred.csv", delimiter=",", skiprows=1, usecols=0, ndmin=1)
    assert float((predicted == labels[held]).mean()) == pytest.approx(scores[chosen - 1], abs=1e-4)
    # ... and are not the last epoch's (--checkpoint keeps those; they score the last figure)
    bw, lw = load_file(tmp_path / "best.st"), load_file(tmp_path / "last_epoch.st")
    assert any(not np.array_equal(bw[k], lw[k]) for k in bw)
    pred = cli(TOOL, "predict", tmp_path / "last_epoch.st", tmp_path / "held.st", "-o",
               tmp_path / "last.csv")
    predicted = np.loadtxt(tmp_path / "last.csv", delimiter=",", skiprows=1, usecols=0, ndmin=1)
    assert float((predicted == labels[held]).mean()) == pytest.approx(scores[-1], abs=1e-4)

    # --keep last is the run without --keep, bit for bit, and stores no pcn.keep
    last = cli(TOOL, "train", train, *common, "--keep", "last", "-o", tmp_path / "last.st")
    plain = cli(TOOL, "train", train, *common, "-o", tmp_path / "plain.st")
    assert last.returncode == 0 and plain.returncode == 0, last.stderr + plain.stderr
    a, b = load_file(tmp_path / "last.st"), load_file(tmp_path / "plain.st")
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert "pcn.keep" not in read_artifact(str(tmp_path / "last.st")).metadata


def test_keep_best_needs_validation_images_and_reaches_the_config(cli, tmp_path):
    p = cli(TOOL, "train", "--print-config", "--depth", "5", "--keep", "best")
    assert p.returncode == 0 and yaml.safe_load(p.stdout)["keep"] == "best", p.stderr
    assert yaml.safe_load(cli(TOOL, "train", "--print-config").stdout)["keep"] == "last"
    train = write_set(tmp_path / "t.st", *make_images(24))
    bad = cli(TOOL, "train", train, "--depth", "3", "--width", "8", "--epochs", "1", "--keep",
              "best", "--validation-share", "0", "-o", tmp_path / "m.st")
    assert bad.returncode == 1, bad.stderr
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "--keep best needs validation images" in lines[0], bad.stderr

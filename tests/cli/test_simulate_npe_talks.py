"""simulate-npe through the installed command (issue 36): a training run that talks, posterior
samples as a table for any table tool, and SBC that states calibration."""
import os
import subprocess
import threading

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file

TOOL = "simulate-npe"
TINY = ["--transforms", "1", "--bins", "4", "--hidden", "16", "--depth", "1", "--threads", "1"]
NORMAL2 = "- {name: a, dist: normal, loc: 0, scale: 1}\n- {name: b, dist: normal, loc: 0, scale: 1}\n"


def _pairs(path, n, noise, generator):
    """theta ~ N(0, I_2), x = theta + noise * N(0, I_2): the posterior is N(x / (1 + noise^2), ...)."""
    theta = torch.randn(n, 2, generator=generator)
    save_file({"theta": theta, "x": theta + noise * torch.randn(n, 2, generator=generator)}, str(path))


@pytest.fixture
def gauss(tmp_path):
    g = torch.Generator().manual_seed(0)
    (tmp_path / "prior.yaml").write_text(NORMAL2)
    _pairs(tmp_path / "train.st", 800, 0.1, g)
    return tmp_path


def _stopped(path):
    from cortexkit.formats.artifact import read_artifact

    return read_artifact(str(path)).meta_json("cortexkit.stopped")


def test_train_says_each_epoch_under_v_why_each_stage_stopped_and_logs_the_curve(cli, tmp_path):
    for fid, n, seed in (("lf", 300, 1), ("hf", 60, 2)):
        assert cli(TOOL, "simulate", "--task", "ou", "--fidelity", fid, "-n", n, "--seed", seed,
                   "-o", tmp_path / f"{fid}.st").returncode == 0
    p = cli(TOOL, "train", "--method", "mf-npe", "--lf", tmp_path / "lf.st", "--hf", tmp_path / "hf.st", *TINY,
            "--lr-pretrain", "5e-3", "--patience", "3", "--patience-pretrain", "3", "--max-epochs", "400", "--seed", "1", "-v",
            "--log", tmp_path / "log.yaml", "-o", tmp_path / "post.st")
    assert p.returncode == 0, p.stderr
    log = yaml.safe_load((tmp_path / "log.yaml").read_text())
    stops = _stopped(tmp_path / "post.st")
    assert [s["stage"] for s in log["stages"]] == ["pretraining", "fine-tuning", "baseline"] == [s["stage"] for s in stops]
    for stage, stop in zip(log["stages"], stops):
        ran = stage["ran"]
        assert stop["ran"] == ran and stop["planned"] == 400 and stop["unit"] == "epochs"
        assert len(stage["val_loss"]) == len(stage["train_loss"]) == ran
        # the best epoch is the curve's minimum, and patience ended the stage 3 epochs after it
        best = int(np.argmin(stage["val_loss"])) + 1
        assert stop["best_epoch"] == best and stop["best_validation_loss"] == pytest.approx(min(stage["val_loss"]))
        if stop["reason"] == "patience":
            assert ran == best + 3
        else:
            assert stop["reason"] == "step-cap" and ran == 400
        # an epoch line per epoch under -v, and one line saying why the stage stopped
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith(f"{stage['stage']}: epoch ")]
        assert len(lines) == ran and f"validation {stage['val_loss'][-1]:.4f}" in lines[-1]
        assert f"{stage['stage']}: stopped after {ran} of 400 epochs ({stop['reason']}" in p.stderr
    # --max-epochs binds: step-cap, said at normal verbosity
    p = cli(TOOL, "train", "--method", "npe", "--hf", tmp_path / "hf.st", *TINY, "--max-epochs", "3",
            "-o", tmp_path / "capped.st")
    assert p.returncode == 0 and "training: stopped after 3 of 3 epochs (step-cap" in p.stderr
    assert "epoch 1:" not in p.stderr  # epoch lines only under -v
    assert _stopped(tmp_path / "capped.st")[0]["reason"] == "step-cap"


def test_train_shows_a_progress_bar_with_best_loss_and_patience_on_a_terminal(cortexkit_exe, gauss):
    """stderr on a pseudo-terminal: the bar names the stage, counts epochs, shows the best
    validation loss and the patience left (a terminal of 24 x 80; a pty that reports 0 rows gets no
    bar from tqdm at all)."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    chunks = []
    reader = threading.Thread(target=lambda: _drain(master, chunks), daemon=True)
    reader.start()
    proc = subprocess.run([cortexkit_exe, TOOL, "train", "--method", "npe", "--hf", str(gauss / "train.st"),
                           "--prior", str(gauss / "prior.yaml"), *TINY, "--max-epochs", "5",
                           "-o", str(gauss / "p.st")], stderr=slave, stdout=subprocess.DEVNULL, timeout=300)
    os.close(slave)
    reader.join(timeout=30)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, text
    stop = _stopped(gauss / "p.st")[0]
    bars = [part for part in text.replace("\n", "\r").split("\r") if part.startswith("training: epoch")]
    shown = [b for b in bars if "best val" in b]
    assert sorted({b.split(",")[0] for b in shown}) == [f"training: epoch {k}" for k in range(1, 6)], bars
    assert all(len(b.rstrip()) <= 80 and "patience 60 left" in b for b in shown), bars
    last = {b.split(",")[0]: b for b in shown}["training: epoch 5"]
    assert f"best val {stop['best_validation_loss']:.4f} (epoch {stop['best_epoch']})" in last


def _drain(fd, chunks):
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            return
        if not data:
            return
        chunks.append(data)


def test_sample_format_table_feeds_table_tools(sh, gauss):
    """sample --format table: one row per draw with an observation column, straight into
    estimate-copula fit and convert; the rows are the npe-samples draws, in order."""
    torch.manual_seed(0)
    save_file({"x_o": torch.tensor([[0.5, -0.2], [1.0, 1.0], [-1.0, 0.3]])}, str(gauss / "obs.st"))
    common = f"cortexkit {TOOL} sample p.st --x-o obs.st -n 300 --seed 3"
    p = sh(f"cortexkit {TOOL} train --method npe --hf train.st --prior prior.yaml {' '.join(TINY)} --max-epochs 20 "
           f"--lr 5e-3 --seed 1 -o p.st && {common} -o s.st && {common} --format table -o s.csv && "
           f"{common} --format table | cortexkit estimate-copula fit - --copula gaussian -o cop.st && "
           f"{common} --format table | cortexkit convert - t.csv", cwd=gauss)
    assert p.returncode == 0, p.stderr
    theta = load_file(str(gauss / "s.st"))["theta"]  # (3, 300, 2)
    for name in ("s.csv", "t.csv"):
        lines = (gauss / name).read_text().splitlines()
        assert lines[0].split(",") == ["observation", "a", "b"] and len(lines) == 1 + 900
        table = np.array([[float(c) for c in ln.split(",")] for ln in lines[1:]])
        assert (table[:, 0] == np.repeat([0, 1, 2], 300)).all()
        assert np.allclose(table[:, 1:], theta.reshape(-1, 2).double().numpy(), rtol=1e-6, atol=1e-6)
    assert (gauss / "cop.st").stat().st_size > 0
    # --observation keeps the row number of --x-o
    p = sh(f"{common} --observation 2 --format table -o one.csv", cwd=gauss)
    assert p.returncode == 0, p.stderr
    assert {ln.split(",")[0] for ln in (gauss / "one.csv").read_text().splitlines()[1:]} == {"2"}


def test_sbc_states_calibration_and_which_way_it_fails(cli, gauss):
    """A posterior of x = theta + 0.1 noise, checked on pairs from its own simulator (calibrated),
    from a noisier one (0.4: the true theta falls outside the narrow posterior, U-shaped ranks,
    over-confident) and from a noiseless one (theta = x: ranks gather in the middle, under-confident)."""
    g = torch.Generator().manual_seed(1)
    for name, noise in (("ok", 0.1), ("over", 0.4), ("under", 0.0)):
        _pairs(gauss / f"sbc_{name}.st", 300, noise, g)
    p = cli(TOOL, "train", "--method", "npe", "--hf", gauss / "train.st", "--prior", gauss / "prior.yaml", *TINY,
            "--lr", "5e-3", "--batch-size", "100", "--seed", "1", "-o", gauss / "p.st")
    assert p.returncode == 0, p.stderr
    want = {"ok": ("calibrated", [], []), "over": ("miscalibrated", ["a", "b"], []),
            "under": ("miscalibrated", [], ["a", "b"])}
    for name, (verdict, over, under) in want.items():
        p = cli(TOOL, "evaluate", "--posterior", gauss / "p.st", "--sbc", gauss / f"sbc_{name}.st",
                "--sbc-samples", "50", "--seed", "1")
        assert p.returncode == 0, p.stderr
        rep = yaml.safe_load(p.stdout)["sbc"]
        cal = rep["calibration"]
        assert (cal["verdict"], cal["over_confident"], cal["under_confident"]) == (verdict, over, under), name
        for par in rep["parameters"].values():
            assert par["uniform"] == (verdict == "calibrated") and 0 <= par["ks_pvalue"] <= 1
        warned = "warning: SBC: the posterior is miscalibrated" in p.stderr
        assert warned == (verdict != "calibrated")
        if over:
            assert "over-confident" in p.stderr and rep["parameters"]["a"]["dispersion_z"] > 3
        if under:
            assert "under-confident" in p.stderr and rep["parameters"]["a"]["dispersion_z"] < -3

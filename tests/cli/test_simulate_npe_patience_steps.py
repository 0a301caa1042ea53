"""--patience-steps (issue 36, stop 44): the HF fits' patience also counted in gradient steps,
min(--patience, max(20, ceil(steps / steps per epoch))) epochs; 1800 by default (40 epochs at 10^4
simulations, --patience's 60 below ~6,800), chosen on two moons and SIR (benchmarks/simulate_npe/
RESULTS.md stop 44); 0 counts epochs only."""

import pytest
import torch
from safetensors.torch import save_file

from cortexkit.tools.npe.methods import pretrain_config
from cortexkit.tools.npe.training import TrainConfig, patience_epochs

TOOL = "simulate-npe"
TINY = ["--transforms", "1", "--bins", "4", "--hidden", "8", "--depth", "1", "--threads", "1", "--max-epochs", "2"]


def test_patience_in_steps_shortens_only_fits_with_many_steps_per_epoch():
    cfg = TrainConfig()
    assert (cfg.patience, cfg.patience_steps) == (60, 1800)
    # 10^4 simulations: 9,000 training rows, 45 steps of 200 per epoch -> 40 epochs
    assert [patience_epochs(cfg, s) for s in (1, 4, 30, 31, 45, 90, 450)] == [60, 60, 60, 59, 40, 20, 20]
    assert patience_epochs(TrainConfig(patience_steps=0), 450) == 60  # epochs only
    assert patience_epochs(TrainConfig(patience=20), 45) == 20  # the paper's 20 stays 20
    assert pretrain_config(cfg).patience_steps == 0  # LF pretraining keeps --patience-pretrain epochs


def test_patience_steps_default_through_the_command(cli):
    p = cli(TOOL, "train", "--method", "npe", "--print-config")
    assert p.returncode == 0, p.stderr
    assert "patience-steps: 1800" in p.stdout.decode()


@pytest.mark.slow
def test_patience_steps_sets_the_fits_patience_through_the_command(cli, tmp_path):
    from cortexkit.formats.artifact import read_artifact

    g = torch.Generator().manual_seed(0)
    theta = torch.randn(100, 1, generator=g)
    save_file({"theta": theta, "x": theta + 0.5 * torch.randn(100, 1, generator=g)}, str(tmp_path / "sims.st"))
    (tmp_path / "prior.yaml").write_text("- {name: t, dist: normal, loc: 0, scale: 1}\n")
    # batch 2: 45 steps per epoch as at 10^4 with batch 200 -> 40 epochs; --patience-steps 0 -> 60
    for extra, want in (([], 40), (["--patience-steps", "0"], 60), (["--patience-steps", "900"], 20)):
        out = tmp_path / f"post{want}.st"
        p = cli(TOOL, "train", "--method", "npe", "--hf", tmp_path / "sims.st", "--prior", tmp_path / "prior.yaml",
                "--batch-size", "2", "--seed", "1", *TINY, *extra, "-o", out)
        assert p.returncode == 0, p.stderr
        history = read_artifact(str(out)).meta_json("npe.history")
        assert history["train"]["patience"] == want, history


def test_negative_patience_steps_is_a_usage_error(cli):
    p = cli(TOOL, "train", "--method", "npe", "--patience-steps", "-1", "--print-config")
    assert p.returncode == 2 and "patience-steps" in p.stderr

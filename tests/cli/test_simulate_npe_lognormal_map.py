"""--lognormal-map through the installed command (stop 42): under npe log-normal parameters are
z-scored on theta itself by default (sbi's handling; samples kept above 0 by rejection); the other
methods keep log theta standardised (auto), and --lognormal-map picks either."""
import torch
from safetensors.torch import load_file, save_file

TOOL = "simulate-npe"
TINY = ["--transforms", "1", "--bins", "4", "--hidden", "16", "--depth", "1", "--threads", "1", "--max-epochs", "30"]
LOGN = "- {name: k, dist: lognormal, loc: -1.0, scale: 0.8}\n- {name: w, dist: normal, loc: 0, scale: 1}\n"


def test_lognormal_map_default_and_option_train_sample_above_zero_and_score(cli, tmp_path):
    from cortexkit.formats.artifact import read_artifact

    (tmp_path / "prior.yaml").write_text(LOGN)
    g = torch.Generator().manual_seed(0)
    theta = torch.stack([torch.exp(-1.0 + 0.8 * torch.randn(400, generator=g)), torch.randn(400, generator=g)], 1)
    # x pins k near 0 for the first observation, so an affine map has posterior mass against k = 0
    save_file({"theta": theta, "x": theta + 0.03 * torch.randn(400, 2, generator=g)}, str(tmp_path / "sims.st"))
    save_file({"x_o": torch.tensor([[0.02, 0.0], [0.6, 1.0]])}, str(tmp_path / "obs.st"))
    p = cli(TOOL, "train", "--method", "npe", "--print-config")
    assert "lognormal-map: auto" in p.stdout.decode()
    save_file({"theta": torch.tensor([[0.3, 0.0], [-0.1, 0.0]]), "x": torch.zeros(2, 2)}, str(tmp_path / "mixed.st"))
    for lmap, option in (("zscore", []), ("log", ["--lognormal-map", "log"])):  # npe's default, then the option
        post = tmp_path / f"{lmap}.st"
        p = cli(TOOL, "train", "--method", "npe", "--hf", tmp_path / "sims.st", "--prior", tmp_path / "prior.yaml",
                *option, "--lr", "5e-3", "--batch-size", "40", "--seed", "1", *TINY, "-o", post)
        assert p.returncode == 0, p.stderr
        assert read_artifact(str(post)).meta_json("npe.flow")["lognormal_map"] == lmap
        p = cli(TOOL, "sample", post, "--x-o", tmp_path / "obs.st", "-n", "2000", "--seed", "2",
                "-o", tmp_path / f"s-{lmap}.st")
        assert p.returncode == 0, p.stderr
        s = load_file(str(tmp_path / f"s-{lmap}.st"))["theta"]
        assert s.shape == (2, 2000, 2) and (s[..., 0] > 0).all()
        assert s[0, :, 0].median() < s[1, :, 0].median()  # the first observation's k is the smaller
        p = cli(TOOL, "score", post, tmp_path / "mixed.st", "-o", tmp_path / f"lp-{lmap}.st")
        assert p.returncode == 0, p.stderr
        lp = load_file(str(tmp_path / f"lp-{lmap}.st"))["log_prob"]
        assert torch.isfinite(lp[0]) and torch.isinf(lp[1]) and lp[1] < 0


def test_mf_npe_keeps_the_log_map_by_default_and_takes_the_option(cli, tmp_path):
    from cortexkit.formats.artifact import read_artifact

    (tmp_path / "prior.yaml").write_text(LOGN)
    g = torch.Generator().manual_seed(0)
    theta = torch.stack([torch.exp(-1.0 + 0.8 * torch.randn(100, generator=g)), torch.randn(100, generator=g)], 1)
    save_file({"theta": theta, "x": theta + 0.03 * torch.randn(100, 2, generator=g)}, str(tmp_path / "sims.st"))
    tiny = [*TINY[:-1], "3", "--baseline", "none", "--seed", "1"]
    for want, option in (("log", []), ("zscore", ["--lognormal-map", "zscore"])):
        post = tmp_path / f"mf-{want}.st"
        p = cli(TOOL, "train", "--method", "mf-npe", "--lf", tmp_path / "sims.st", "--hf", tmp_path / "sims.st",
                "--prior", tmp_path / "prior.yaml", *option, *tiny, "-o", post)
        assert p.returncode == 0, p.stderr
        assert read_artifact(str(post)).meta_json("npe.flow")["lognormal_map"] == want

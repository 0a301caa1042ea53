"""--theta-map through the installed command (issue 36, item 1): the z-score map of box parameters
keeps samples inside the prior and scores outside it -inf; --theta-map logit is the paper's map."""
import json

import torch
from safetensors.torch import load_file, save_file

TOOL = "simulate-npe"
TINY = ["--transforms", "1", "--bins", "4", "--hidden", "16", "--depth", "1", "--threads", "1", "--max-epochs", "30"]
BOX = "- {name: a, dist: uniform, low: -1, high: 1}\n- {name: b, dist: uniform, low: 0, high: 2}\n"


def test_both_theta_maps_train_sample_inside_the_box_and_score(cli, tmp_path):
    (tmp_path / "prior.yaml").write_text(BOX)
    g = torch.Generator().manual_seed(0)
    theta = torch.stack([2 * torch.rand(400, generator=g) - 1, 2 * torch.rand(400, generator=g)], 1)
    # posterior mass against the bounds: x pins theta near the box's edges
    save_file({"theta": theta, "x": theta + 0.05 * torch.randn(400, 2, generator=g)}, str(tmp_path / "sims.st"))
    save_file({"x_o": torch.tensor([[0.98, 0.02], [0.0, 1.0]])}, str(tmp_path / "obs.st"))
    p = cli(TOOL, "train", "--method", "npe", "--print-config")
    assert "theta-map: zscore" in p.stdout.decode()
    outside = torch.tensor([[1.2, 0.5], [0.0, -0.1]])
    save_file({"theta": torch.cat([theta[:3], outside]), "x": torch.zeros(5, 2)}, str(tmp_path / "mixed.st"))
    for tmap in ("zscore", "logit"):
        post = tmp_path / f"{tmap}.st"
        p = cli(TOOL, "train", "--method", "npe", "--hf", tmp_path / "sims.st", "--prior", tmp_path / "prior.yaml",
                "--theta-map", tmap, "--lr", "5e-3", "--batch-size", "40", "--seed", "1", *TINY, "-o", post)
        assert p.returncode == 0, p.stderr
        from cortexkit.formats.artifact import read_artifact

        assert read_artifact(str(post)).meta_json("npe.flow")["theta_map"] == tmap
        p = cli(TOOL, "sample", post, "--x-o", tmp_path / "obs.st", "-n", "2000", "--seed", "2",
                "-o", tmp_path / f"s-{tmap}.st")
        assert p.returncode == 0, p.stderr
        s = load_file(str(tmp_path / f"s-{tmap}.st"))["theta"]
        assert s.shape == (2, 2000, 2)
        assert (s[..., 0].abs() <= 1).all() and (s[..., 1] >= 0).all() and (s[..., 1] <= 2).all()
        # the first observation's posterior sits in the corner (1, 0), the second near (0, 1)
        assert s[0, :, 0].mean() > 0.5 and s[0, :, 1].mean() < 0.5 and abs(s[1, :, 0].mean()) < 0.3
        p = cli(TOOL, "score", post, tmp_path / "mixed.st", "-o", tmp_path / f"lp-{tmap}.st")
        assert p.returncode == 0, p.stderr
        lp = load_file(str(tmp_path / f"lp-{tmap}.st"))["log_prob"]
        assert torch.isfinite(lp[:3]).all() and torch.isinf(lp[3:]).all() and (lp[3:] < 0).all()
        assert "2 parameter vectors lie outside the prior" in p.stderr

"""The flow's spline bins (issue 36, stop 41): 10 by default, sbi 0.27's NPE count, chosen by the
bins study in benchmarks/simulate_npe/RESULTS.md; --bins 8 gives the MF-NPE paper's flow."""
import torch
from safetensors.torch import save_file

from cortexkit.tools.npe.estimator import FlowConfig, PosteriorEstimator
from cortexkit.tools.npe.tasks import get_task

TOOL = "simulate-npe"


def test_the_default_flow_has_ten_bins_per_spline():
    assert FlowConfig().bins == 10
    # each spline of a d-parameter flow takes 3 bins - 1 numbers per parameter from the conditioner's
    # last layer (50 units + bias), so 10 bins instead of 8 add 5 transforms x 51 x d x 6 weights
    ou = get_task("ou").prior  # d = 2, x_dim 10
    assert PosteriorEstimator(ou, 10).num_parameters() == 69_040 == 65_980 + 5 * 51 * 2 * 6
    assert PosteriorEstimator(ou, 10, FlowConfig(bins=8)).num_parameters() == 65_980


def test_bins_default_reaches_the_flow_through_the_command(cli, tmp_path):
    from cortexkit.formats.artifact import read_artifact

    p = cli(TOOL, "train", "--method", "npe", "--print-config")
    assert p.returncode == 0, p.stderr
    assert "bins: 10" in p.stdout.decode()
    g = torch.Generator().manual_seed(0)
    theta = torch.rand(60, 2, generator=g)
    save_file({"theta": theta, "x": theta + 0.1 * torch.randn(60, 2, generator=g)}, str(tmp_path / "sims.st"))
    (tmp_path / "prior.yaml").write_text("- {name: a, dist: uniform, low: 0, high: 1}\n"
                                         "- {name: b, dist: uniform, low: 0, high: 1}\n")
    small = ["--transforms", "1", "--hidden", "8", "--depth", "1", "--max-epochs", "2", "--threads", "1"]
    for extra, bins in (([], 10), (["--bins", "8"], 8)):
        out = tmp_path / f"post{bins}.st"
        p = cli(TOOL, "train", "--method", "npe", "--hf", tmp_path / "sims.st", "--prior", tmp_path / "prior.yaml",
                "--seed", "1", *small, *extra, "-o", out)
        assert p.returncode == 0, p.stderr
        assert read_artifact(str(out)).meta_json("npe.flow")["bins"] == bins

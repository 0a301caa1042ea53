"""sample-permutations with feature context (--condition features --context FILE) through the CLI."""

import numpy as np
import pytest
import yaml
from safetensors.numpy import load, save_file

TOOL = "sample-permutations"
TINY = ["--d-model", "16", "--layers", "1", "--heads", "2", "--ff", "32", "--threads", "1"]


@pytest.fixture
def conditional(tmp_path_factory):
    """Orderings of 5 items whose context token i is a noisy one-hot of item x_i: the context
    determines the permutation. A plain safetensors file (no cortexkit metadata) holds it."""
    tmp = tmp_path_factory.mktemp("ctx")
    rng = np.random.default_rng(0)
    n, count = 5, 600
    x = np.stack([rng.permutation(n) for _ in range(count)])
    ctx = (np.eye(n)[x] * 2 + 0.3 * rng.standard_normal((count, n, n))).astype(np.float32)
    np.savetxt(tmp / "train.txt", x[:500], fmt="%d", delimiter=",")
    np.savetxt(tmp / "test.txt", x[500:], fmt="%d", delimiter=",")
    save_file({"context": ctx[:500]}, str(tmp / "ctrain.st"))
    save_file({"context": ctx[500:]}, str(tmp / "ctest.st"))
    return tmp, x[500:]


@pytest.fixture
def pointer_model(cli, conditional):
    """A tiny AR lehmer model with the pointer head fitted to the conditional data (about 4 s)."""
    tmp, _ = conditional
    model = tmp / "m.st"
    proc = cli(TOOL, "fit", tmp / "train.txt", "--base", "0", "--model", "ar", "--representation", "lehmer",
               "--condition", "features", "--context", tmp / "ctrain.st", "--head", "pointer",
               "--epochs", "20", "--lr", "3e-3", "--batch-size", "64", *TINY, "-o", model)
    assert proc.returncode == 0, proc.stderr
    return model


def test_pointer_model_decodes_held_out_contexts(sh, cli, conditional, pointer_model):
    tmp, truth = conditional
    common = f"--context {tmp}/ctest.st --threads 1"
    proc = sh(f"cortexkit {TOOL} sample {pointer_model} --strategy greedy {common} | tee {tmp}/g.st | "
              f"cortexkit {TOOL} score {pointer_model} - {common} --scores {tmp}/s.st")
    assert proc.returncode == 0, proc.stderr
    greedy = load((tmp / "g.st").read_bytes())
    assert greedy["orderings"].shape == truth.shape
    assert (greedy["orderings"] == truth).all(1).mean() > 0.9  # uniform guessing: 1/120
    scored = load((tmp / "s.st").read_bytes())["log_likelihood"]
    assert np.allclose(greedy["log_likelihood"], scored, atol=1e-5)
    # the rows matter: someone else's context gives someone else's permutation
    shuffled = load((tmp / "ctest.st").read_bytes())["context"][::-1].copy()
    save_file({"context": shuffled}, str(tmp / "rev.st"))
    other = load(cli(TOOL, "sample", pointer_model, "--strategy", "greedy", "--context", tmp / "rev.st").stdout)
    assert (other["orderings"] == truth).all(1).mean() < 0.2
    # held-out NLL well below uniform (log 120 = 4.79), and one sample per context row
    report = yaml.safe_load(cli(TOOL, "evaluate", pointer_model, tmp / "test.txt", "--base", "0",
                                "--context", tmp / "ctest.st").stdout)
    assert report["by_nfe"][0]["nll"] < 2.5 and report["by_nfe"][0]["samples"] == 100
    beam = load(cli(TOOL, "sample", pointer_model, "--strategy", "beam", "--beam-width", "4", "-n", "2",
                    "--context", tmp / "ctest.st").stdout)
    assert beam["orderings"].shape == (200, 5)
    drawn = load(cli(TOOL, "sample", pointer_model, "-n", "3", "--context", tmp / "ctest.st").stdout)
    assert drawn["orderings"].shape == (300, 5)


def test_linear_head_with_mlp_encoder_round_trips(cli, conditional):
    tmp, _ = conditional
    model = tmp / "lin.st"
    proc = cli(TOOL, "fit", tmp / "train.txt", "--base", "0", "--model", "mlm", "--condition", "features",
               "--context", tmp / "ctrain.st", "--context-encoder", "mlp", "--context-hidden", "8",
               "--epochs", "1", *TINY, "-o", model)
    assert proc.returncode == 0, proc.stderr
    tensors = load(model.read_bytes())
    assert tensors["net.context_projection.0.weight"].shape == (8, 5)
    a = yaml.safe_load(cli(TOOL, "score", model, tmp / "test.txt", "--base", "0", "--context", tmp / "ctest.st").stdout)
    b = yaml.safe_load(cli(TOOL, "score", model, tmp / "test.txt", "--base", "0", "--context", tmp / "ctest.st").stdout)
    assert a["mean_nll"] == b["mean_nll"] > 0


def test_bad_context_is_rejected_before_work(cli, conditional, pointer_model, one_line_error, tmp_path):
    tmp, _ = conditional
    ctx = load((tmp / "ctest.st").read_bytes())["context"]
    nan = ctx.copy()
    nan[7, 1, 2] = np.nan
    save_file({"context": nan}, str(tmp_path / "nan.st"))
    save_file({"context": ctx[:, :4]}, str(tmp_path / "m4.st"))
    save_file({"context": ctx[:, :, :3]}, str(tmp_path / "d3.st"))
    save_file({"context": ctx[:50]}, str(tmp_path / "short.st"))
    save_file({"other": ctx}, str(tmp_path / "noname.st"))
    out = tmp_path / "out.st"
    test = tmp / "test.txt"
    fit = ["fit", tmp / "train.txt", "--base", "0", "--model", "ar", "--representation", "lehmer",
           "--epochs", "1", *TINY, "-o", out]
    cases = [
        (["score", pointer_model, test, "--base", "0", "--context", tmp_path / "short.st"], "50 context rows"),
        (["score", pointer_model, test, "--base", "0", "--context", tmp_path / "nan.st"], "row 8"),
        (["score", pointer_model, test, "--base", "0", "--context", tmp_path / "m4.st"], "(4, 5)"),
        (["sample", pointer_model, "--context", tmp_path / "d3.st", "-o", out], "(5, 3)"),
        (["sample", pointer_model, "--context", tmp_path / "noname.st", "-o", out], "'context'"),
        (["sample", pointer_model, "-o", out], "--context"),
        (["evaluate", pointer_model, test, "--base", "0"], "--context"),
        ([*fit, "--condition", "features", "--context", tmp_path / "short.st"], "permutations 500"),
        ([*fit, "--condition", "features"], "--context"),
        ([*fit, "--context", tmp / "ctrain.st"], "--condition features"),
        ([*fit, "--condition", "features", "--context", tmp / "ctrain.st", "--head", "pointer",
          "--representation", "insertion"], "--head pointer"),
        ([*fit, "--head", "pointer"], "--head pointer"),
    ]
    for args, fragment in cases:
        one_line_error(cli(TOOL, *args), f"{TOOL} {args[0]}", fragment)
        assert not out.exists(), args
    plain = tmp_path / "plain.st"
    assert cli(TOOL, "fit", test, "--base", "0", "--model", "mallows", "-o", plain).returncode == 0
    one_line_error(cli(TOOL, "sample", plain, "--context", tmp / "ctest.st", "-o", out), f"{TOOL} sample",
                   "takes no feature context")
    assert not out.exists()

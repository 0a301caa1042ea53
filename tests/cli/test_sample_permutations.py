"""cortexkit sample-permutations through the installed command: pipelines, inputs, bad input."""

import math

import numpy as np
import pytest
import yaml
from safetensors.numpy import load

TOOL = "sample-permutations"


def orderings(data: bytes) -> np.ndarray:
    return load(data)["orderings"].astype(np.int64)


def write_text(path, rows):
    path.write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


@pytest.fixture
def mallows_text(tmp_path):
    """600 Mallows-ish orderings of 6 items near the identity (adjacent swaps of the identity)."""
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(600):
        x = list(range(6))
        for _ in range(rng.integers(0, 4)):
            i = int(rng.integers(0, 5))
            x[i], x[i + 1] = x[i + 1], x[i]
        rows.append(x)
    return write_text(tmp_path / "orders.txt", rows)


def test_encode_decode_pipeline_round_trips(sh, tmp_path, mallows_text):
    for rep in ("fisher-yates", "insertion"):
        proc = sh(f"cortexkit {TOOL} encode {mallows_text} --representation {rep} --reference borda "
                  f"| cortexkit {TOOL} decode - -o {tmp_path}/back.st")
        assert proc.returncode == 0, proc.stderr
        back = orderings((tmp_path / "back.st").read_bytes())
        assert np.array_equal(back, np.loadtxt(mallows_text, delimiter=",", dtype=np.int64))


def test_encode_gives_known_lehmer_digits(cli, tmp_path):
    src = write_text(tmp_path / "x.txt", [[2, 0, 1, 3], [3, 2, 1, 0]])
    proc = cli(TOOL, "encode", src, "--representation", "lehmer", "--base", "0")
    assert proc.returncode == 0, proc.stderr
    codes = load(proc.stdout)["codes"].tolist()
    assert codes == [[2, 0, 0, 0], [3, 2, 1, 0]]


def test_rankings_are_inverted(cli, tmp_path):
    src = write_text(tmp_path / "r.txt", [[1, 2, 0]])  # item 0 at position 1, ...
    proc = cli(TOOL, "encode", src, "--as", "rankings", "--representation", "inline", "--base", "0")
    assert load(proc.stdout)["codes"].tolist() == [[2, 0, 1]]


def test_mallows_fit_sample_score_pipeline(sh, tmp_path, mallows_text):
    proc = sh(f"cortexkit {TOOL} fit {mallows_text} --model mallows -o {tmp_path}/m.st -q && "
              f"cortexkit {TOOL} sample {tmp_path}/m.st -n 3000 --seed 1 "
              f"| cortexkit {TOOL} score {tmp_path}/m.st -")
    assert proc.returncode == 0, proc.stderr
    report = yaml.safe_load(proc.stdout)
    assert report["count"] == 3000 and report["nfe"] == 1
    assert report["mean_nll"] < math.log(720)


def test_plackett_luce_and_product_fits(cli, tmp_path, mallows_text):
    for model in ("plackett-luce", "gmallows"):
        out = tmp_path / f"{model}.st"
        proc = cli(TOOL, "fit", mallows_text, "--model", model, "-o", out)
        assert proc.returncode == 0, proc.stderr
        rep = yaml.safe_load(cli(TOOL, "score", out, mallows_text).stdout)
        assert rep["mean_nll"] < math.log(720), model


def test_neural_fit_sample_evaluate(cli, tmp_path, mallows_text):
    model = tmp_path / "mlm.st"
    proc = cli(TOOL, "fit", mallows_text, "--model", "mlm", "--representation", "lehmer", "--epochs", "3",
               "--d-model", "16", "--layers", "1", "--heads", "2", "--ff", "32", "-o", model, "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    s = cli(TOOL, "sample", model, "-n", "500", "--nfe", "2", "--partition", "random", "--seed", "3")
    assert s.returncode == 0, s.stderr
    x = orderings(s.stdout)
    assert x.shape == (500, 6) and (np.sort(x, axis=1) == np.arange(6)).all()
    ev = cli(TOOL, "evaluate", model, mallows_text, "--nfe", "1,2,6", "--samples", "300",
             "--train", mallows_text)
    assert ev.returncode == 0, ev.stderr
    rep = yaml.safe_load(ev.stdout)
    assert [e["nfe"] for e in rep["by_nfe"]] == [1, 2, 6]
    assert all(e["valid"] == 1.0 for e in rep["by_nfe"])
    assert all(0 <= e["novel"] <= 1 for e in rep["by_nfe"])
    # same seed, same bytes
    again = cli(TOOL, "sample", model, "-n", "500", "--nfe", "2", "--partition", "random", "--seed", "3")
    assert again.stdout == s.stdout


def test_conditioning_prefix(cli, tmp_path, mallows_text, one_line_error):
    model = tmp_path / "p.st"
    assert cli(TOOL, "fit", mallows_text, "--model", "product", "--representation", "lehmer",
               "-o", model).returncode == 0
    x = orderings(cli(TOOL, "sample", model, "-n", "200", "--given", "4,1").stdout)
    assert (x[:, :2] == [4, 1]).all()
    ins = tmp_path / "i.st"
    assert cli(TOOL, "fit", mallows_text, "--model", "rim", "-o", ins).returncode == 0
    x = orderings(cli(TOOL, "sample", ins, "-n", "200", "--given", "2,0,1").stdout)
    pos = np.argsort(x, axis=1)  # positions of items 0, 1, 2 keep the order 2 < 0 < 1
    assert ((pos[:, 2] < pos[:, 0]) & (pos[:, 0] < pos[:, 1])).all()
    bad = cli(TOOL, "sample", ins, "-n", "5", "--given", "4,5", "-o", tmp_path / "no.st")
    one_line_error(bad, f"{TOOL} sample", "first 2 reference items")


def test_preflib_soc_and_soi(cli, tmp_path, one_line_error):
    soc = tmp_path / "a.soc"
    soc.write_text("# NUMBER ALTERNATIVES: 3\n# ALTERNATIVE NAME 1: x\n# ALTERNATIVE NAME 2: y\n"
                   "# ALTERNATIVE NAME 3: z\n2: 1,2,3\n1: 3,1,2\n")
    proc = cli(TOOL, "encode", soc, "--representation", "inline")
    assert load(proc.stdout)["codes"].tolist() == [[0, 1, 2], [0, 1, 2], [2, 0, 1]]
    soi = tmp_path / "b.soi"
    soi.write_text("# NUMBER ALTERNATIVES: 3\n2: 1,2,3\n1: 3\n")
    one_line_error(cli(TOOL, "encode", soi, "-o", tmp_path / "no.st"), f"{TOOL} encode",
                          "line 3", "--partial")
    dropped = load(cli(TOOL, "encode", soi, "--partial", "drop", "--representation", "inline").stdout)
    assert dropped["codes"].shape == (2, 3)
    shuffled = load(cli(TOOL, "encode", soi, "--partial", "shuffle", "--representation", "inline").stdout)
    assert shuffled["codes"][2, 0] == 2


def test_movielens_ratings_to_rankings(cli, tmp_path, one_line_error):
    rng = np.random.default_rng(0)
    lines = []
    for user in range(1, 31):
        for item in rng.choice(np.arange(1, 9), size=6, replace=False):
            lines.append(f"{user}\t{item}\t{rng.integers(1, 6)}\t0")
    data = tmp_path / "u.data"
    data.write_text("\n".join(lines) + "\n")
    proc = cli(TOOL, "encode", data, "--n-items", "5", "--min-ratings", "1", "--representation", "inline",
               "--split", "train")
    assert proc.returncode == 0, proc.stderr
    assert load(proc.stdout)["codes"].shape == (24, 5)
    lines[3] = "4\t2\tnan\t0"
    data.write_text("\n".join(lines) + "\n")
    one_line_error(cli(TOOL, "encode", data, "--n-items", "5", "-o", tmp_path / "no.st"),
                          f"{TOOL} encode", "line 4", "NaN")


@pytest.mark.parametrize("rows, fragment", [
    ([[0, 1, 2], [0, 0, 2]], "line 2 is not a permutation: item 0 repeats"),
    ([[0, 1, 2], [0, 1]], "line 2 has 2 items"),
    ([[0, 1, 2], [0, 1, 7]], "line 2 has item 7 outside"),
])
def test_bad_permutations_are_rejected(cli, tmp_path, rows, fragment, one_line_error):
    src = write_text(tmp_path / "bad.txt", rows)
    out = tmp_path / "out.st"
    proc = cli(TOOL, "fit", src, "--model", "mallows", "--base", "0", "-o", out)
    one_line_error(proc, f"{TOOL} fit", fragment)
    assert not out.exists()


def test_n_mismatch_and_bad_codes(cli, tmp_path, mallows_text, one_line_error):
    model = tmp_path / "m.st"
    assert cli(TOOL, "fit", mallows_text, "--model", "mallows", "-o", model).returncode == 0
    other = write_text(tmp_path / "four.txt", [[0, 1, 2, 3]])
    one_line_error(cli(TOOL, "score", model, other, "-o", tmp_path / "r.yaml"), f"{TOOL} score",
                          "n = 4", "n = 6")
    assert not (tmp_path / "r.yaml").exists()
    codes = write_text(tmp_path / "c.txt", [[0, 0, 0], [3, 0, 0]])
    one_line_error(cli(TOOL, "decode", codes, "--representation", "lehmer", "-o", tmp_path / "d.st"),
                          f"{TOOL} decode", "row 2 digit 0 = 3")
    one_line_error(cli(TOOL, "sample", model, "--nfe", "3", "-o", tmp_path / "s.st"),
                          f"{TOOL} sample", "NFE = 1")
    one_line_error(cli(TOOL, "score", mallows_text, mallows_text), f"{TOOL} score",
                          "not a safetensors artifact")


def test_sushi_mallows_matches_known_phi(cli, shared_data):
    soc = shared_data / "perm" / "sushi" / "00014-00000001.soc"
    proc = cli(TOOL, "fit", soc, "--model", "mallows", "--reference", "borda")
    assert proc.returncode == 0, proc.stderr
    assert "phi 0.785" in proc.stderr


def _rating_table(path, seed):
    """A MovieLens-style u.data: 40 users rating 6 of 8 movies each."""
    rng = np.random.default_rng(seed)
    lines = [f"{u}\t{i}\t{rng.integers(1, 6)}\t0" for u in range(1, 41)
             for i in rng.choice(np.arange(1, 9), size=6, replace=False)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_conditional_model_on_rating_table(cli, tmp_path, one_line_error):
    data = _rating_table(tmp_path / "u.data", 1)
    common = ["--n-items", "5", "--min-ratings", "1"]
    model = tmp_path / "c.st"
    proc = cli(TOOL, "fit", data, *common, "--split", "train", "--model", "ar", "--condition", "items",
               "--epochs", "2", "--d-model", "16", "--layers", "1", "--heads", "2", "--ff", "32", "-o", model)
    assert proc.returncode == 0, proc.stderr
    assert load(model.read_bytes())["vocabulary"].tolist() == list(range(1, 9))
    rep = yaml.safe_load(cli(TOOL, "score", model, data, *common, "--split", "test").stdout)
    assert rep["count"] == 8 and rep["mean_nll"] > 0
    s = cli(TOOL, "sample", model, "--items", data, *common, "--split", "test", "-n", "3", "--given", "1,0")
    assert s.returncode == 0, s.stderr
    out = load(s.stdout)
    assert out["orderings"].shape == (24, 5) and out["items"].shape == (24, 5)
    pos = np.argsort(out["orderings"], axis=1)
    assert (pos[:, 1] < pos[:, 0]).all()  # insertion prefix: item 1 before item 0
    # any two of the row's items, not the first reference items: relabelled inside, not refused
    s = cli(TOOL, "sample", model, "--items", data, *common, "--split", "test", "-n", "3", "--given", "3,1", "-v")
    assert s.returncode == 0, s.stderr
    assert "24 permutations in" in s.stderr and "us per digit" in s.stderr  # -v: its own throughput
    pos = np.argsort(load(s.stdout)["orderings"], axis=1)
    assert (pos[:, 3] < pos[:, 1]).all()
    one_line_error(cli(TOOL, "sample", model, "-o", tmp_path / "x.st"), f"{TOOL} sample", "--items")
    plain = write_text(tmp_path / "p.txt", [[0, 1, 2, 3, 4]])
    one_line_error(cli(TOOL, "score", model, plain), f"{TOOL} score", "item ids")


def test_item_prior_fit_stores_its_scores_and_samples(cli, tmp_path, one_line_error):
    """fit --condition items --item-prior (issue 22, item 3): the model carries the popularity
    prior of its vocabulary and samples like any item-conditioned model; without item ids it is refused."""
    data = _rating_table(tmp_path / "u.data", 2)
    common = ["--n-items", "5", "--min-ratings", "1"]
    net = ["--model", "ar", "--epochs", "2", "--d-model", "16", "--layers", "1", "--heads", "2", "--ff", "32"]
    model = tmp_path / "c.st"
    proc = cli(TOOL, "fit", data, *common, "--split", "train", *net, "--condition", "items", "--item-prior",
               "-o", model)
    assert proc.returncode == 0, proc.stderr
    tensors = load(model.read_bytes())
    prior = tensors["net.context_prior_scores"]
    assert prior.shape == (9, 2) and np.abs(prior[:8].mean(0)).max() < 1e-5 and (prior[8] == 0).all()
    s = cli(TOOL, "sample", model, "--items", data, *common, "--split", "test", "-n", "2")
    assert s.returncode == 0, s.stderr
    assert load(s.stdout)["orderings"].shape == (16, 5)
    p = cli(TOOL, "fit", data, *common, *net, "--item-prior", "-o", tmp_path / "x.st")
    one_line_error(p, f"{TOOL} fit", "--item-prior", "--condition items")
    assert not (tmp_path / "x.st").exists()


def test_beam_decoding_pipeline_reports_score_likelihoods(sh, cli, tmp_path, mallows_text, one_line_error):
    """sample --strategy beam | score: the log-likelihoods written beside the decoded permutations
    are score's (same NFE, same random partition from the same --seed); greedy is width 1."""
    model = tmp_path / "mlm.st"
    proc = cli(TOOL, "fit", mallows_text, "--model", "mlm", "--epochs", "3", "--d-model", "16",
               "--layers", "1", "--heads", "2", "--ff", "32", "--threads", "1", "-o", model)
    assert proc.returncode == 0, proc.stderr
    common = "--nfe 3 --partition random --seed 2 --threads 1"
    proc = sh(f"cortexkit {TOOL} sample {model} --strategy beam --beam-width 5 -n 4 {common} -o {tmp_path}/b.st"
              f" && cortexkit {TOOL} score {model} {tmp_path}/b.st {common} --scores {tmp_path}/s.st")
    assert proc.returncode == 0, proc.stderr
    beam = load((tmp_path / "b.st").read_bytes())
    scored = load((tmp_path / "s.st").read_bytes())["log_likelihood"]
    assert beam["orderings"].shape == (4, 6)
    assert np.allclose(beam["log_likelihood"], scored, atol=1e-5)
    assert (np.diff(beam["log_likelihood"]) <= 1e-9).all()  # best first
    greedy = load(cli(TOOL, "sample", model, "--strategy", "greedy", *common.split()).stdout)
    width1 = load(cli(TOOL, "sample", model, "--strategy", "beam", "--beam-width", "1", *common.split()).stdout)
    assert np.array_equal(greedy["orderings"], width1["orderings"])
    assert greedy["log_likelihood"][0] <= beam["log_likelihood"][0] + 1e-6
    out = tmp_path / "no.st"
    one_line_error(cli(TOOL, "sample", model, "--strategy", "beam", "--beam-width", "0", "-o", out),
                   f"{TOOL} sample", "--beam-width", code=2)
    one_line_error(cli(TOOL, "sample", model, "--strategy", "beam", "--beam-width", "3", "-n", "5", "-o", out),
                   f"{TOOL} sample", "at most --beam-width 3")
    one_line_error(cli(TOOL, "sample", model, "--beam-width", "3", "-o", out), f"{TOOL} sample",
                   "--strategy beam")
    assert not out.exists()


def test_mallows_greedy_decodes_the_centre(cli, tmp_path, mallows_text):
    model = tmp_path / "m.st"
    assert cli(TOOL, "fit", mallows_text, "--model", "mallows", "--reference", "borda", "-o", model).returncode == 0
    out = load(cli(TOOL, "sample", model, "--strategy", "greedy").stdout)
    centre = load(model.read_bytes())["reference"]
    assert out["orderings"].tolist() == [centre.tolist()]
    scored = yaml.safe_load(cli(TOOL, "score", model, "-", input=cli(TOOL, "sample", model, "--strategy", "greedy").stdout).stdout)
    assert abs(scored["max_log_likelihood"] - float(out["log_likelihood"][0])) < 1e-9


def test_neural_fit_says_why_it_stopped_and_stores_it(cli, tmp_path, mallows_text):
    """Issue 29 item 2: a neural fit stopped by its epoch cap or by patience says so at normal
    verbosity when it is not the planned end, and the record is in the model."""
    from cortexkit.formats.artifact import decode

    out = tmp_path / "m.st"
    proc = cli(TOOL, "fit", mallows_text, "--model", "ar", "--epochs", "40", "--patience", "1",
               "-o", out)
    assert proc.returncode == 0, proc.stderr
    record, = decode(out.read_bytes()).meta_json("cortexkit.stopped")
    assert record["stage"] == "fit" and record["unit"] == "epochs" and record["planned"] == 40
    assert 1 <= record["ran"] <= 40 and record["best_epoch"] < record["ran"]
    if record["ran"] < 40:  # patience ended it: said on stderr without -v
        assert record["reason"] == "patience"
        assert f"fit: stopped after {record['ran']} of 40 epochs (patience" in proc.stderr
    else:
        assert record["reason"] == "completed"


def test_inspect_of_a_classical_model_lists_only_its_options(cli, tmp_path, mallows_text):
    """Issue 29 item 4: a Mallows model's stored config has no network options; a neural one has."""
    from cortexkit.formats.artifact import decode

    for model, has_net in (("mallows", False), ("ar", True)):
        out = tmp_path / f"{model}.st"
        proc = cli(TOOL, "fit", mallows_text, "--model", model, "--epochs", "2", "-o", out)
        assert proc.returncode == 0, proc.stderr
        config = decode(out.read_bytes()).config
        assert config["model"] == model and "representation" in config
        assert all((key in config) == has_net for key in ("epochs", "lr", "d-model", "dropout"))
        shown = cli("inspect", out).stdout
        assert (b"d-model" in shown) == has_net

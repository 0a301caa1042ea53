"""cortexkit dp-fairness-train through the installed console script: pipelines and bad input."""
import csv

import numpy as np
import pytest
import yaml

TOOL = "dp-fairness-train"


def write_table(path, n=1500, seed=0, groups=("F", "M"), label_fn=None, missing=False):
    rng = np.random.default_rng(seed)
    g = rng.choice(groups, n, p=None)
    x1 = rng.normal(size=n) + 0.8 * (g == groups[0])
    x2 = rng.normal(size=n)
    job = rng.choice(["a", "b", "c"], n)
    logit = 1.2 * x1 - 0.5 * x2 + 0.7 * (job == "a")
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    if label_fn is not None:
        y = label_fn(rng, n)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x1", "x2", "job", "sex", "y"])
        for i in range(n):
            w.writerow([f"{x1[i]:.4f}", "" if (missing and i == 7) else f"{x2[i]:.4f}", job[i], g[i], y[i]])
    return path


@pytest.fixture
def tables(tmp_path):
    return write_table(tmp_path / "train.csv"), write_table(tmp_path / "test.csv", n=600, seed=1)


FAST = ["--label", "y", "--sensitive", "sex", "--batch-size", "300", "--laplace-b", "0.2", "--sigma", "2",
        "--max-steps", "15", "--epsilon", "8", "-q"]


def test_train_evaluate_predict(cli, tables, tmp_path):
    train, test = tables
    model = tmp_path / "m.safetensors"
    p = cli(TOOL, "train", train, *FAST, "--gamma", "0.05", "-o", model)
    assert p.returncode == 0, p.stderr
    from safetensors.numpy import load_file, safe_open
    tensors = load_file(model)
    assert tensors["last.0.weight"].shape == (2, 5)        # x1, x2, job=a, job=b, job=c
    assert tensors["dual.last"].shape == (4,)
    with safe_open(model, "np") as fh:
        meta = fh.metadata()
    assert meta["cortexkit.kind"] == "dpfair-model"
    ledger = yaml.safe_load(meta["dpfair.ledger"])
    assert ledger["epsilon_spent"] <= 8.0 and ledger["steps"] == 15 and ledger["laplace_b"] == 0.2
    assert ledger["laplace_scale"] == pytest.approx(5.0) and "inverse scale" in ledger["laplace_convention"]

    rep = cli(TOOL, "evaluate", model, test)
    assert rep.returncode == 0, rep.stderr
    r = yaml.safe_load(rep.stdout)
    assert 0.5 < r["accuracy"] <= 1 and r["error"] == pytest.approx(1 - r["accuracy"])
    assert set(r["selection_rates"]) == {"F", "M"}
    assert r["privacy"]["epsilon_spent"] == pytest.approx(ledger["epsilon_spent"])
    assert len(r["constraint_violation"]["constraints"]) == 4

    # predict needs no sensitive column
    rows = list(csv.reader(open(test)))
    no_sens = tmp_path / "nosens.csv"
    with open(no_sens, "w", newline="") as fh:
        csv.writer(fh).writerows([[c for j, c in enumerate(row) if j not in (3, 4)] for row in rows])
    out = tmp_path / "pred.csv"
    p = cli(TOOL, "predict", model, no_sens, "-o", out)
    assert p.returncode == 0, p.stderr
    pred = list(csv.DictReader(open(out)))
    assert len(pred) == 600 and set(pred[0]) == {"label", "p_no", "p_yes"}
    assert all(abs(float(r["p_no"]) + float(r["p_yes"]) - 1) < 1e-5 for r in pred[:20])
    p = cli(TOOL, "predict", model, no_sens, "-o", tmp_path / "pred.safetensors")
    assert p.returncode == 0
    t = load_file(tmp_path / "pred.safetensors")
    assert t["labels"].shape == (600,) and t["probabilities"].shape == (600, 2)
    agree = np.array([r["label"] for r in pred]) == np.array(["no", "yes"])[t["labels"]]
    assert agree.all()


def test_pipe_train_into_evaluate_and_seed_reproducible(sh, tables, tmp_path):
    train, test = tables
    args = " ".join(f"'{a}'" for a in FAST)
    p = sh(f"cat {train} | cortexkit {TOOL} train - {args} --constraint equalized-odds "
           f"| cortexkit {TOOL} evaluate - {test} --iterate average")
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(p.stdout)
    assert r["iterate"] == "average" and "eo_gap" in r
    assert len(r["constraint_violation"]["constraints"]) == 8     # K * K * Z
    a = sh(f"cortexkit {TOOL} train {train} {args} --seed 4 | sha256sum")
    b = sh(f"cortexkit {TOOL} train {train} {args} --seed 4 | sha256sum")
    assert a.stdout == b.stdout and a.returncode == 0


def test_constraint_none_is_dpsgd_and_accounts_gaussian_only(cli, tables, tmp_path):
    train, _ = tables
    model = tmp_path / "dpsgd.safetensors"
    p = cli(TOOL, "train", train, *FAST[:-1], "--constraint", "none", "-o", model)   # not -q: the info line
    assert p.returncode == 0, p.stderr
    assert "no histogram" in p.stderr and "None" not in p.stderr      # issue 23: it said "laplace-b None"
    from safetensors import safe_open
    with safe_open(model, "np") as fh:
        led = yaml.safe_load(fh.metadata()["dpfair.ledger"])
    assert led["laplace_b"] is None
    assert led["epsilon_validation"] == pytest.approx(0.4)       # 5 % of epsilon 8: the held-out histogram
    acc = cli(TOOL, "account", "--sigma", "2", "--sampling-rate", str(led["sampling_rate"]), "--steps", "15",
              "--validation-epsilon", "0.4")
    assert yaml.safe_load(acc.stdout)["epsilon"] == pytest.approx(led["epsilon_spent"])
    assert led["sampling_rate"] == pytest.approx(300 / led["expected_batch_size"] * led["sampling_rate"])


def test_yaml_spec_constraint_and_fnr(cli, tables, tmp_path):
    train, test = tables
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"partition": ["sex"], "constraints": [
        {"name": "F-yes-rate-at-least-0.3", "gamma": -0.3,
         "terms": [{"where": {"sex": "F"}, "class": "yes", "weight": -1.0}]}]}))
    m = tmp_path / "spec.safetensors"
    p = cli(TOOL, "train", train, *FAST, "--constraint", spec, "-o", m)
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(cli(TOOL, "evaluate", m, test).stdout)
    assert r["constraint_violation"]["constraints"][0]["name"] == "F-yes-rate-at-least-0.3"
    p = cli(TOOL, "train", train, *FAST, "--constraint", "fnr", "--gamma", "0.2", "-o", tmp_path / "f.safetensors")
    assert p.returncode == 0, p.stderr


def test_mlp_and_many_groups(cli, tmp_path):
    train = write_table(tmp_path / "t.csv", groups=("a", "b", "c", "d", "e", "f"))
    p = cli(TOOL, "train", train, *FAST, "--model", "mlp", "--hidden", "8", "-o", tmp_path / "m.safetensors")
    assert p.returncode == 0, p.stderr
    from safetensors.numpy import load_file
    t = load_file(tmp_path / "m.safetensors")
    assert t["last.0.weight"].shape == (8, 5) and t["last.2.weight"].shape == (2, 8)
    assert t["dual.last"].shape == (12,)                    # 6 groups x 2 classes


def test_account_figure1(cli):
    p = cli(TOOL, "account", "--sigma", "4", "--laplace-b", "0.5", "--batch-size", "4096", "--n", "29676",
            "--steps", "1000", "--delta", "1e-4")
    r = yaml.safe_load(p.stdout)
    assert r["epsilon"] == pytest.approx(10.83, abs=0.005) and r["laplace_scale"] == 2.0
    assert "inverse scale" in r["laplace_convention"]
    p = cli(TOOL, "account", "--sigma", "4", "--laplace-b", "0.5", "--batch-size", "4096", "--n", "29676",
            "--epsilon", "1", "--delta", "1e-4")
    r = yaml.safe_load(p.stdout)
    assert r["steps"] == 17 and r["solved_for"] == "steps" and r["within_budget"]
    p = cli(TOOL, "account", "--laplace-b", "0.03", "--sampling-rate", "0.12", "--steps", "300", "--epsilon", "1")
    r = yaml.safe_load(p.stdout)
    assert r["solved_for"] == "sigma" and r["epsilon"] <= 1.0


def test_non_private_mode(cli, tables, tmp_path):
    train, test = tables
    m = tmp_path / "np.safetensors"
    p = cli(TOOL, "train", train, "--label", "y", "--sensitive", "sex", "--non-private", "--steps", "50",
            "--batch-size", "300", "-q", "-o", m)
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(cli(TOOL, "evaluate", m, test).stdout)
    assert r["privacy"]["epsilon_spent"] == float("inf")


def test_sweep_writes_pareto_table_and_plot(cli, tables, tmp_path):
    pytest.importorskip("matplotlib")
    train, test = tables
    png = tmp_path / "p.png"
    p = cli(TOOL, "sweep", train, "--test", test, "--gammas", "0.02,0.2", *FAST, "--plot", png)
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(p.stdout)
    assert [row["gamma"] for row in r["rows"]] == [0.02, 0.2] and r["runs"] == 3   # + the unconstrained model
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("extra, fragment", [
    (["--epsilon", "0"], "Invalid value for '--epsilon'"),
    (["--epsilon", "-1"], "Invalid value for '--epsilon'"),
    (["--delta", "1.5"], "Invalid value for '--delta'"),
])
def test_out_of_range_options_are_usage_errors(cli, one_line_error, tables, tmp_path, extra,
                                               fragment):
    """The base's ranged option types refuse these at parse time (exit 2), before any work."""
    train, _ = tables
    out = tmp_path / "m.safetensors"
    base = ["--label", "y", "--sensitive", "sex", "--batch-size", "300", "-q"]
    p = cli(TOOL, "train", train, *base, *extra, "-o", out)
    one_line_error(p, f"{TOOL} train", fragment, code=2)
    assert not out.exists()


@pytest.mark.parametrize("extra, fragment", [
    (["--sigma", "0.3", "--laplace-b", "5", "--epsilon", "0.01"], "allows zero steps"),
    (["--sigma", "1", "--steps", "200", "--epsilon", "0.5"], "refusing to run past the budget"),
    (["--sensitive", "nope"], "no sensitive column"),
    (["--label", "nope"], "no label column"),
    (["--constraint", "missing.yaml"], "not one of"),
    (["--sensitive", "x1"], "at most 256 are supported"),
    (["--drop", "x1,y"], "--drop names the label column 'y'"),
])
def test_bad_options_fail_before_training(cli, one_line_error, tables, tmp_path, extra, fragment):
    train, _ = tables
    out = tmp_path / "m.safetensors"
    base = ["--label", "y", "--sensitive", "sex", "--batch-size", "300", "-q"]
    p = cli(TOOL, "train", train, *base, *extra, "-o", out)
    one_line_error(p, f"{TOOL} train", fragment)
    assert not out.exists()


def test_bad_tables(cli, one_line_error, tmp_path):
    out = tmp_path / "m.safetensors"
    miss = write_table(tmp_path / "miss.csv", missing=True)
    one_line_error(cli(TOOL, "train", miss, "--label", "y", "--sensitive", "sex", "-o", out),
                   f"{TOOL} train", f"{miss}: column 'x2' has 1 missing value")
    cont = write_table(tmp_path / "cont.csv", label_fn=lambda rng, n: np.round(rng.normal(size=n), 3))
    one_line_error(cli(TOOL, "train", cont, "--label", "y", "--sensitive", "sex", "-o", out),
                   f"{TOOL} train", "must be binary or categorical")
    one = write_table(tmp_path / "one.csv", label_fn=lambda rng, n: np.array(["yes"] * n))
    one_line_error(cli(TOOL, "train", one, "--label", "y", "--sensitive", "sex", "-o", out),
                   f"{TOOL} train", "single value")
    assert not out.exists()


def test_small_group_warns_with_expected_count(cli, tmp_path):
    rng = np.random.default_rng(0)
    path = write_table(tmp_path / "small.csv", n=1500)
    rows = list(csv.reader(open(path)))
    for row in rows[1:6]:
        row[3] = "X"                                        # a group of 5 records
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    out = tmp_path / "m.safetensors"
    loud = [a for a in FAST if a != "-q"]                  # -q silences warnings too
    p = cli(TOOL, "train", path, *loud, "--allow-small-groups", "-o", out)   # an error without it (issue 23)
    assert p.returncode == 0
    assert "small expected noisy counts per batch" in p.stderr and "'X'" in p.stderr
    assert p.stderr.count("small expected noisy counts") == 1


def test_wrong_artifact_kind_and_two_stdins(cli, one_line_error, tables, tmp_path):
    train, test = tables
    conv = tmp_path / "t.safetensors"
    num = tmp_path / "num.csv"
    num.write_text("a,b\n1,2\n3,4\n")
    assert cli("convert", num, conv).returncode == 0
    one_line_error(cli(TOOL, "evaluate", conv, test), f"{TOOL} evaluate", "expected a 'dpfair-model' artifact")
    one_line_error(cli(TOOL, "evaluate", "-", "-", input=b""), f"{TOOL} evaluate", "only one input")


def test_adult_real_data_short_run(cli, shared_data, tmp_path):
    adult = shared_data / "dpfair" / "adult" / "adult_purified.csv"
    if not adult.exists():
        pytest.skip("adult_purified.csv not in shared data")
    m = tmp_path / "adult.safetensors"
    p = cli(TOOL, "train", adult, "--label", ">50K", "--sensitive", "sex", "--gamma", "0.05", "--epsilon", "1",
            "--max-steps", "30", "-q", "-o", m)
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(cli(TOOL, "evaluate", m, adult).stdout)
    assert r["rows"] == 45222 and r["privacy"]["steps"] == 30 and r["privacy"]["epsilon_spent"] <= 1.0
    assert r["accuracy"] > 0.76                               # at least the majority class


def test_clip_split_is_recorded_and_keeps_the_ledger(cli, one_line_error, tables, tmp_path):
    """--clip-split separate clips the loss part and the rate part to C/2 each: a different model at the
    same noise and epsilon (sensitivity stays C), recorded in the ledger and the resolved config."""
    from safetensors.numpy import load_file, safe_open

    train, _ = tables
    runs = {}
    for split in ("joint", "separate"):
        model = tmp_path / f"{split}.safetensors"
        p = cli(TOOL, "train", train, *FAST, "--gamma", "0.02", "--seed", "3", "--clip-split", split, "-o", model)
        assert p.returncode == 0, p.stderr
        with safe_open(model, "np") as fh:
            meta = fh.metadata()
        runs[split] = (yaml.safe_load(meta["dpfair.ledger"]), yaml.safe_load(meta["cortexkit.config"]),
                       load_file(model)["last.0.weight"])
    for split, (led, config, _) in runs.items():
        assert led["clip_split"] == split and config["clip-split"] == split
    (lj, _, wj), (ls, _, ws) = runs["joint"], runs["separate"]
    for key in ("epsilon_spent", "sigma", "clip_norm", "steps", "sampling_rate"):
        assert ls[key] == lj[key]
    assert not np.allclose(wj, ws)
    p = cli(TOOL, "train", train, *FAST, "--clip-split", "halves", "-o", tmp_path / "bad.safetensors")
    one_line_error(p, f"{TOOL} train", "Invalid value for '--clip-split'", code=2)


@pytest.mark.parametrize("extra, clip, lr", [
    (["--constraint", "none"], 1.0, 2.0),                       # unconstrained default: clip 1 (issue 35)
    (["--gamma", "0.05"], 2.0, 1.0),                            # constrained: clip 2 (stop 42's study)
    (["--constraint", "none", "--clip", "3"], 3.0, 2.0 / 3.0),  # an explicit --clip wins
])
def test_default_clip_depends_on_the_constraint(cli, tables, tmp_path, extra, clip, lr):
    from safetensors.numpy import safe_open

    train, _ = tables
    model = tmp_path / "m.safetensors"
    p = cli(TOOL, "train", train, *FAST, "--max-steps", "3", *extra, "-o", model)
    assert p.returncode == 0, p.stderr
    with safe_open(model, "np") as fh:
        meta = fh.metadata()
    assert yaml.safe_load(meta["dpfair.ledger"])["clip_norm"] == clip
    assert yaml.safe_load(meta["dpfair.model"])["lr"] == pytest.approx(lr)
    shown = cli(TOOL, "train", train, *FAST, "--max-steps", "3", *extra, "--print-config")
    assert shown.returncode == 0, shown.stderr
    config = yaml.safe_load(shown.stdout)       # --print-config shows the values the run used, not null
    assert config["clip"] == clip and config["lr"] == pytest.approx(lr)

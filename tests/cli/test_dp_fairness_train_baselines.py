"""Issue 35: --non-private converges to scikit-learn's logistic regression; train and sweep score the model
against the majority class (and, for sweeps, the unconstrained private model) on held-out rows, with the
figures, once per cause; the held-out release is inside the privacy ledger."""
import csv

import numpy as np
import pytest
import yaml

TOOL = "dp-fairness-train"


def _approved(path, n, seed=0, signal=1.0):
    """A small loan table: binary ``approved``, one sensitive column, numeric and categorical features."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    income = rng.normal(size=n) + 0.5 * (group == "a")
    debt = rng.normal(size=n)
    years = rng.integers(0, 30, n)
    purpose = rng.choice(["car", "home", "study"], n)
    logit = signal * (1.2 * income - 0.8 * debt + 0.03 * years + 0.6 * (purpose == "home")) - 0.3
    approved = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["income", "debt", "years", "purpose", "group", "approved"])
        w.writerows(zip(income.round(4), debt.round(4), years, purpose, group, approved))
    return path


def _sklearn_accuracy(train, test):
    """scikit-learn LogisticRegression (defaults) on cortexkit's own encoding of the same rows."""
    sk = pytest.importorskip("sklearn.linear_model")
    from cortexkit.tools.dpfair import table as tab
    from cortexkit.tools.dpfair.io import read_columns

    tr, te = read_columns(str(train)), read_columns(str(test))
    features = ["income", "debt", "years", "purpose"]
    enc = tab.TableEncoder.fit(tr, features)
    xtr, xte = enc.transform(tr)[0], enc.transform(te)[0]
    model = sk.LogisticRegression(max_iter=5000).fit(xtr, np.array(tr["approved"], dtype=int))
    return float((model.predict(xte) == np.array(te["approved"], dtype=int)).mean())


def test_non_private_reaches_sklearn_on_a_small_table(cli, tmp_path):
    train, test = _approved(tmp_path / "train.csv", 1500), _approved(tmp_path / "test.csv", 3000, seed=1)
    reference = _sklearn_accuracy(train, test)
    model = tmp_path / "m.st"
    p = cli(TOOL, "train", train, "--label", "approved", "--sensitive", "group", "--constraint", "none",
            "--non-private", "--validation", "0", "-o", model)
    assert p.returncode == 0, p.stderr
    assert "SGDA: stopped after" not in p.stderr or "step-cap" not in p.stderr      # converged, or said why
    r = yaml.safe_load(cli(TOOL, "evaluate", model, test).stdout)
    assert abs(r["accuracy"] - reference) <= 0.005, (r["accuracy"], reference)
    labels = np.array([row[-1] for row in list(csv.reader(open(test)))[1:]], dtype=int)
    assert r["accuracy"] > max(labels.mean(), 1 - labels.mean()) + 0.1     # a real signal, well above the majority


def test_train_warns_once_with_figures_when_it_loses_to_the_majority_class(cli, tmp_path):
    # no signal in the features, 70 % class 1, and a constraint that forces class 0 on half the rows:
    # the trained model must lose to "always 1" (about 0.5 against 0.7), and exactly (non-private)
    rng = np.random.default_rng(3)
    n = 3000
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x1", "x2", "sex", "y"])
        w.writerows(zip(rng.normal(size=n).round(3), rng.normal(size=n).round(3), rng.choice(["F", "M"], n),
                        (rng.random(n) < 0.7).astype(int)))
    spec = tmp_path / "half.yaml"
    spec.write_text("partition: [sex]\nconstraints:\n  - name: zero-rate\n    gamma: -0.5\n"
                    "    terms: [{where: {sex: [F, M]}, class: '0', weight: -1.0}]\n")
    model = tmp_path / "m.st"
    p = cli(TOOL, "train", path, "--label", "y", "--sensitive", "sex", "--constraint", spec, "--non-private",
            "-o", model)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("below the majority class '1'") == 1, p.stderr
    line = next(x for x in p.stderr.splitlines() if "below the majority class" in x)
    acc = float(line.split("scores accuracy ")[1].split()[0])
    maj = float(line.split("'1' (")[1].split(")")[0])
    assert acc < maj - 0.1 and 0.65 < maj < 0.75
    from safetensors import safe_open
    with safe_open(model, "np") as fh:
        held = yaml.safe_load(fh.metadata()["dpfair.validation"])
    assert held["model"]["accuracy"] == pytest.approx(acc, abs=1e-3) and held["rows"] > 200
    assert held["majority"] == {"class": "1", "accuracy": pytest.approx(maj, abs=1e-3)}


def test_private_held_out_figures_are_noisy_and_in_the_ledger(cli, tmp_path):
    train = _approved(tmp_path / "train.csv", 3000)
    model = tmp_path / "m.st"
    p = cli(TOOL, "train", train, "--label", "approved", "--sensitive", "group", "--epsilon", "8",
            "--validation-epsilon", "2", "--max-steps", "40", "-o", model)
    assert p.returncode == 0, p.stderr
    from safetensors import safe_open
    with safe_open(model, "np") as fh:
        held = yaml.safe_load(fh.metadata()["dpfair.validation"])
        ledger = yaml.safe_load(fh.metadata()["dpfair.ledger"])
    assert held["epsilon"] == 2.0 and held["accuracy_noise_sd"] > 0
    assert "held-out rows" in p.stderr and "noise sd" in p.stderr
    assert ledger["epsilon_validation"] == 2.0 and ledger["epsilon_spent"] <= 8.0
    assert held["model"]["accuracy"] > held["majority"]["accuracy"]        # a real signal: no warning
    assert "below the majority class" not in p.stderr


def test_held_out_release_is_composed_into_the_ledger_exactly():
    from dp_accounting.pld import privacy_loss_distribution as pld

    from cortexkit.tools.dpfair import accounting

    sigma, b, q, steps, delta, ce, ve = 8.0, 0.05, 0.05, 200, 1e-5, 0.05, 0.1
    ours = accounting.epsilon_spent(sigma, b, q, steps, delta, (ce, ve))
    ref = pld.from_gaussian_mechanism(sigma, sampling_prob=q, use_connect_dots=True).self_compose(steps)
    ref = ref.compose(pld.from_laplace_mechanism(1 / b, sampling_prob=q, use_connect_dots=True).self_compose(steps))
    ref = ref.compose(pld.from_laplace_mechanism(1 / ce, use_connect_dots=True))
    ref = ref.compose(pld.from_laplace_mechanism(1 / ve, use_connect_dots=True))
    assert ours == pytest.approx(ref.get_epsilon_for_delta(delta), rel=1e-9)
    assert ours > accounting.epsilon_spent(sigma, b, q, steps, delta, ce)     # the release is not free


def test_sweep_names_unmet_gamma_and_says_each_cause_once(cli, tmp_path):
    train, test = _approved(tmp_path / "train.csv", 1500), _approved(tmp_path / "test.csv", 600, seed=1)
    # clip 3 keeps gamma 0 out of reach here (released violation 0.033); at the default clip 2 this table's
    # run gets within the 0.01 tolerance (0.0078, stop 42) and rightly names nothing
    p = cli(TOOL, "sweep", train, "--test", test, "--label", "approved", "--sensitive", "group",
            "--gammas", "0,0.2", "--epsilon", "3", "--max-steps", "30", "--laplace-b", "0.05", "--clip", "3")
    assert p.returncode == 0, p.stderr
    report = yaml.safe_load(p.stdout)
    assert report["runs"] == 3                                 # two gammas and the unconstrained baseline
    for row in report["rows"]:
        held = row["held_out"][0]
        assert set(held) >= {"model", "unconstrained", "majority", "rows", "accuracy_noise_sd"}
    assert p.stderr.count("small expected noisy counts") <= 1
    lines = [x for x in p.stderr.splitlines() if "warning" in x]
    assert len(lines) == len(set(lines))                       # nothing said twice
    # rate gaps are clipped at 0 before gamma is subtracted, so at gamma 0 the noisy violation stays positive
    assert report["rows"][0]["train_violation"] > 0.01
    assert p.stderr.count("gamma 0: not met on the training rows") == 1


def test_sweep_says_once_which_gammas_lose_to_the_majority_class(cli, tmp_path):
    rng = np.random.default_rng(4)
    n = 2000
    rows = list(zip(rng.normal(size=n).round(3), rng.choice(["F", "M"], n), (rng.random(n) < 0.7).astype(int)))
    for name, part in (("train.csv", rows[:1500]), ("test.csv", rows[1500:])):
        with open(tmp_path / name, "w", newline="") as fh:
            csv.writer(fh).writerows([("x1", "sex", "y"), *part])
    spec = tmp_path / "half.yaml"           # class 0 on at least half the rows: every run must lose
    spec.write_text("partition: [sex]\nconstraints:\n  - name: zero-rate\n    gamma: -0.5\n"
                    "    terms: [{where: {sex: [F, M]}, class: '0', weight: -1.0}]\n")
    p = cli(TOOL, "sweep", tmp_path / "train.csv", "--test", tmp_path / "test.csv", "--label", "y", "--sensitive",
            "sex", "--constraint", spec, "--gammas", "0.1,0.2", "--non-private", "--max-steps", "300")
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if "below the majority class" in x]
    assert len(lines) == 1 and lines[0].count("gamma ") == 2, p.stderr   # one line naming both runs
    assert "run(s) score below the majority class '1'" in lines[0]
    for row in yaml.safe_load(p.stdout)["rows"]:
        held = row["held_out"][0]
        assert held["model"]["accuracy"] < held["majority"]["accuracy"] - 0.1
        assert held["unconstrained"]["accuracy"] >= held["majority"]["accuracy"] - 0.02

"""dp-fairness-train reads every table through formats/table: CSV, NPZ, table artifacts, --categorical."""
import csv

import numpy as np
import pytest
import yaml

TOOL = "dp-fairness-train"
FAST = ["--sensitive", "sex", "--batch-size", "200", "--laplace-b", "0.2", "--sigma", "2", "--max-steps", "10",
        "--epsilon", "8", "-q"]


def _rows(n=700, seed=0):
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    edu = rng.integers(1, 7, n)                     # a category coded 1..6
    x = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(x + (edu == 3) - 0.5 * sex)))).astype(int)
    return {"x": x.round(4), "edu": edu, "sex": sex, "y": y}


def _csv(path, cols):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(cols))
        w.writerows(zip(*cols.values()))
    return path


def test_categorical_codes_are_one_hot(cli, tmp_path):
    from safetensors import safe_open
    from safetensors.numpy import load_file

    train = _csv(tmp_path / "t.csv", _rows())
    plain, coded = tmp_path / "plain.st", tmp_path / "coded.st"
    assert cli(TOOL, "train", train, "--label", "y", *FAST, "-o", plain).returncode == 0
    p = cli(TOOL, "train", train, "--label", "y", *FAST, "--categorical", "edu", "-o", coded)
    assert p.returncode == 0, p.stderr
    assert load_file(plain)["last.0.weight"].shape == (2, 2)           # x, edu as a number
    assert load_file(coded)["last.0.weight"].shape == (2, 7)           # x, edu=1..6
    with safe_open(coded, "np") as fh:
        names = yaml.safe_load(fh.metadata()["dpfair.model"])["feature_names"]
    assert names == ["x"] + [f"edu={k}" for k in range(1, 7)]
    rep = cli(TOOL, "evaluate", coded, _csv(tmp_path / "test.csv", _rows(300, seed=1)))
    assert rep.returncode == 0, rep.stderr and yaml.safe_load(rep.stdout)["rows"] == 300


def test_table_artifact_and_npz_give_the_csv_model(cli, sh, tmp_path):
    from cortexkit.formats.table import Table, write_table
    from safetensors.numpy import load_file

    cols = _rows()
    train = _csv(tmp_path / "t.csv", cols)
    art = tmp_path / "t.table.safetensors"
    write_table(str(art), Table({k: np.asarray(v) for k, v in cols.items()}))
    np.savez(tmp_path / "t.npz", **cols)
    ref = tmp_path / "ref.st"
    assert cli(TOOL, "train", train, "--label", "y", *FAST, "-o", ref).returncode == 0
    for i, src in enumerate([f"cat {art} |", f"cat {tmp_path / 't.npz'} |"]):
        out = tmp_path / f"m{i}.st"
        p = sh(f"{src} cortexkit {TOOL} train - --label y {' '.join(FAST)} -o {out}")
        assert p.returncode == 0, p.stderr
        a, b = load_file(ref), load_file(out)
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_stray_text_cell_in_numeric_column_is_an_error(cli, one_line_error, tmp_path):
    cols = _rows()
    cols["x"] = cols["x"].astype(object)
    cols["x"][4] = "forty"
    out = tmp_path / "m.st"
    p = cli(TOOL, "train", _csv(tmp_path / "t.csv", cols), "--label", "y", *FAST, "-o", out)
    one_line_error(p, f"{TOOL} train", "line 6, column 'x': 'forty' is not a number")
    assert not out.exists()
    p = cli(TOOL, "train", _csv(tmp_path / "t2.csv", _rows()), "--label", "y", *FAST, "--categorical", "nope",
            "-o", out)
    one_line_error(p, f"{TOOL} train", "nope")


@pytest.mark.parametrize("cell", ["inf", "1e400", "-inf"])
def test_infinite_cell_in_numeric_column_is_an_error_not_a_category(cli, one_line_error, tmp_path, cell):
    """Issue 16: inf or 1e400 turned the column categorical and trained (an existing -o replaced)."""
    cols = _rows()
    cols["x"] = cols["x"].astype(object)
    cols["x"][4] = cell
    out = tmp_path / "m.st"
    out.write_bytes(b"an earlier model")
    p = cli(TOOL, "train", _csv(tmp_path / "t.csv", cols), "--label", "y", *FAST, "-o", out)
    one_line_error(p, f"{TOOL} train", "t.csv: column 'x', data row 5", "not a finite number")
    assert out.read_bytes() == b"an earlier model"


def test_convert_train_evaluate_pipe(sh, shared_data, tmp_path):
    """Three tools: convert's table artifact (text columns categorical) into train, into evaluate."""
    adult = shared_data / "dpfair" / "adult" / "adult_purified.csv"
    if not adult.exists():
        pytest.skip("adult_purified.csv not in shared data")
    small = tmp_path / "adult.csv"
    lines = adult.read_text().splitlines()
    small.write_text("\n".join(lines[:3001]) + "\n")            # 3000 rows keep CI short
    test = tmp_path / "test.csv"
    test.write_text("\n".join([lines[0]] + lines[3001:4001]) + "\n")
    p = sh(f"cortexkit convert {small} - | cortexkit {TOOL} train - --label '>50K' --sensitive sex "
           f"--categorical education-num --epsilon 3 --max-steps 20 --batch-size 600 -q "
           f"| cortexkit {TOOL} evaluate - {test}")
    if "convert handles numeric tables" in p.stderr:   # the named-column convert of issue 16 not merged yet
        pytest.skip("this cortexkit's convert writes numeric tables only")
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load(p.stdout)
    assert r["rows"] == 1000 and r["accuracy"] > 0.7 and set(r["selection_rates"]) == {"Female", "Male"}
    assert r["privacy"]["epsilon_spent"] <= 3.0

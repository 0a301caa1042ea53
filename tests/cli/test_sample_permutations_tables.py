"""sample-permutations fit reads integer orderings from any table (CSV, NPY, NPZ, table artifact)."""

import numpy as np
import pytest
from safetensors.numpy import load

TOOL = "sample-permutations"


@pytest.fixture
def rows():
    rng = np.random.default_rng(1)
    return np.stack([rng.permutation(4) for _ in range(50)])


def log_probs(path) -> np.ndarray:
    return load(path.read_bytes())["log_probs"]


def test_convert_pipes_a_table_of_orderings_into_fit(sh, tmp_path, rows):
    csv = tmp_path / "orders.csv"
    csv.write_text("p0,p1,p2,p3\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    proc = sh(f"cortexkit convert {csv} - | cortexkit {TOOL} fit - --model product "
              f"--representation lehmer -o {tmp_path}/t.st")
    assert proc.returncode == 0, proc.stderr
    direct = sh(f"cortexkit {TOOL} fit {csv} --model product --representation lehmer -o {tmp_path}/c.st")
    assert direct.returncode == 0, direct.stderr
    assert np.array_equal(log_probs(tmp_path / "t.st"), log_probs(tmp_path / "c.st"))
    # counting by hand: digit 0 of a Lehmer code (identity reference) is the first item
    counts = np.bincount(rows[:, 0], minlength=4) + 0.5
    assert np.allclose(np.exp(log_probs(tmp_path / "t.st")[0]), counts / counts.sum(), atol=1e-6)


def test_npy_and_npz_orderings_fit_like_text(cli, tmp_path, rows):
    np.save(tmp_path / "o.npy", rows)
    np.savez(tmp_path / "o.npz", orderings=rows + 1)  # 1-based: found by --base auto
    text = tmp_path / "o.txt"
    text.write_text("\n".join(" ".join(map(str, r)) for r in rows) + "\n")
    outs = []
    for name in ("o.npy", "o.npz", "o.txt"):
        proc = cli(TOOL, "fit", tmp_path / name, "--model", "rim", "-o", tmp_path / f"{name}.st")
        assert proc.returncode == 0, proc.stderr
        outs.append(log_probs(tmp_path / f"{name}.st"))
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


def test_bad_tables_are_one_line_errors(cli, tmp_path, rows, one_line_error):
    bad = rows.copy()
    bad[3, 1] = bad[3, 0]
    np.save(tmp_path / "dup.npy", bad)
    np.save(tmp_path / "frac.npy", rows + 0.5)
    for name, words in (("dup.npy", "row 4 is not a permutation"), ("frac.npy", "not an integer")):
        proc = cli(TOOL, "fit", tmp_path / name, "--model", "product", "-o", tmp_path / "x.st")
        one_line_error(proc, f"{TOOL} fit", words)
        assert not (tmp_path / "x.st").exists()


def test_fit_group_column_holds_out_users(cli, tmp_path, rows, one_line_error):
    csv = tmp_path / "orders.csv"
    users = np.arange(len(rows)) // 5
    csv.write_text("user,p0,p1,p2,p3\n" + "\n".join(f"{u}," + ",".join(map(str, r))
                                                   for u, r in zip(users, rows)) + "\n")
    proc = cli(TOOL, "fit", csv, "--group", "user", "--model", "ar", "--epochs", "1", "--d-model", "8",
               "--heads", "2", "--ff", "8", "-o", tmp_path / "m.st")
    assert proc.returncode == 0, proc.stderr
    assert "validation held-out groups" in proc.stderr and "val_rows 5" in proc.stderr  # 1 of 10 users
    bad = cli(TOOL, "fit", csv, "--group", "nope", "--model", "ar", "-o", tmp_path / "x.st")
    one_line_error(bad, f"{TOOL} fit", "nope")
    assert not (tmp_path / "x.st").exists()

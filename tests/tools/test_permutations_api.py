"""The permutation method from Python (no click): the same artifact bytes as the command line."""

import numpy as np
import pytest
import torch

from cortexkit.formats.artifact import decode, write_artifact
from cortexkit.formats.errors import CortexError
from cortexkit.formats.rankings import OrderOptions, load_orders
from cortexkit.tools.permutations import api

TOOL = "sample-permutations"


@pytest.fixture
def orders_file(tmp_path):
    rng = np.random.default_rng(5)
    rows = [rng.permutation(5) for _ in range(40)]
    path = tmp_path / "orders.txt"
    path.write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


def same_bytes(cli_bytes: bytes, tensors: dict, kind: str, metadata: dict, tmp_path) -> bytes:
    """The bytes the Python API writes, stamped with the command line's producer, config and run
    record (how each training loop stopped: the command's, not the method's)."""
    stamp = decode(cli_bytes, "cli")
    out = tmp_path / "api.st"
    run_record = {k: v for k, v in stamp.metadata.items() if k == "cortexkit.stopped"}
    write_artifact(out, tensors, kind, producer=stamp.producer, config=stamp.config,
                   metadata={**run_record, **metadata})
    return out.read_bytes()


@pytest.fixture
def one_thread():
    """The CLI fixture runs with OMP_NUM_THREADS=1; identical bytes need the same thread count
    here too (more threads reduce floats in another order)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_fit_and_sample_from_python_give_the_cli_bytes(cli, tmp_path, orders_file, one_thread):
    args = ["--model", "ar", "--representation", "lehmer", "--epochs", "2", "--d-model", "16",
            "--ff", "16", "--seed", "7"]
    fitted = cli(TOOL, "fit", orders_file, *args, "-o", tmp_path / "m.st")
    assert fitted.returncode == 0, fitted.stderr
    cli_model = (tmp_path / "m.st").read_bytes()

    orders = load_orders(str(orders_file), OrderOptions())
    config = api.FitConfig("ar", "lehmer", train=api.TrainConfig(epochs=2), d_model=16, ff=16)
    model = api.fit(config, orders.orderings, seed=7)
    tensors, meta = api.model_tensors(model)
    assert same_bytes(cli_model, tensors, "permutation-model", meta, tmp_path) == cli_model

    drawn = cli(TOOL, "sample", tmp_path / "m.st", "-n", "25", "--seed", "3", "-o", tmp_path / "s.st")
    assert drawn.returncode == 0, drawn.stderr
    cli_sample = (tmp_path / "s.st").read_bytes()
    out = api.sample(model, api.SampleConfig(num=25), seed=3)
    x = out.orderings.to(api.int_dtype(5))
    assert same_bytes(cli_sample, {"orderings": x}, "permutations", {"permutations.n": "5"},
                      tmp_path) == cli_sample

    beam = cli(TOOL, "sample", tmp_path / "m.st", "--strategy", "beam", "--beam-width", "4", "-n", "3",
               "-o", tmp_path / "b.st")
    assert beam.returncode == 0, beam.stderr
    best = api.sample(model, api.SampleConfig(num=3, strategy="beam", beam_width=4))
    cli_best = decode((tmp_path / "b.st").read_bytes(), "b")
    assert np.array_equal(cli_best.tensors["orderings"], best.orderings.numpy())
    assert np.allclose(cli_best.tensors["log_likelihood"], best.extra["log_likelihood"].numpy())


def test_score_report_matches_the_log_likelihoods(orders_file):
    orders = load_orders(str(orders_file), OrderOptions())
    model = api.fit(api.FitConfig("mallows", "lehmer", reference="borda"), orders.orderings)
    lp, report = api.score(model, orders.orderings)
    assert report["count"] == 40 and report["mean_nll"] == pytest.approx(float(-lp.mean()))
    # a Mallows model is normalised: its probabilities over S_5 sum to 1
    import itertools

    every = torch.tensor(list(itertools.permutations(range(5))))
    total = api.score(model, every)[0].exp().sum()
    assert float(total) == pytest.approx(1.0, abs=1e-9)


def test_configs_refuse_bad_combinations_before_any_data():
    with pytest.raises(CortexError, match="--head pointer"):
        api.FitConfig("mlm", head="pointer")
    with pytest.raises(CortexError, match="multiple of --heads"):
        api.FitConfig(d_model=10, heads=4)
    with pytest.raises(CortexError, match="at most --beam-width"):
        api.SampleConfig(num=5, strategy="beam", beam_width=2)
    with pytest.raises(CortexError, match="--given x"):
        api.parse_given("x")


def test_group_split_holds_out_whole_groups():
    from cortexkit.tools.permutations import neural as N

    groups = torch.arange(300) // 7  # 43 users, 7 rows each (the last has 6)
    val, train = N.validation_split(300, 0.2, torch.Generator().manual_seed(0), groups)
    assert len(val) + len(train) == 300
    assert not set(groups[val].tolist()) & set(groups[train].tolist())
    assert len(set(groups[val].tolist())) == round(43 * 0.2)
    plain_val, _ = N.validation_split(300, 0.2, torch.Generator().manual_seed(0))
    assert set(groups[plain_val].tolist()) & set(groups[train].tolist())  # rows split, users shared


def test_group_tensor_of_a_permutations_artifact(tmp_path):
    """fit --group TENSOR reads a row-aligned integer tensor of a permutations artifact (MovieLens
    rows carry 'users'); a missing name or a wrong shape is a one-line error."""
    x = np.stack([np.random.default_rng(i).permutation(4) for i in range(6)]).astype(np.int16)
    users = np.array([7, 7, 3, 3, 9, 9], dtype=np.int64)
    write_artifact(tmp_path / "p.st", {"orderings": x, "users": users, "half": users[:3]}, "permutations",
                   metadata={"permutations.n": "4"})
    orders = load_orders(str(tmp_path / "p.st"), OrderOptions(group="users"))
    assert orders.groups.tolist() == users.tolist()
    with pytest.raises(CortexError, match="--group user: no such tensor"):
        load_orders(str(tmp_path / "p.st"), OrderOptions(group="user"))
    with pytest.raises(CortexError, match=r"--group half: expected an integer tensor of shape \(6,\)"):
        load_orders(str(tmp_path / "p.st"), OrderOptions(group="half"))


def test_preflib_incomplete_orders_as_evidence_rows():
    from cortexkit.formats.rankings import read_preflib_partial

    n, given = read_preflib_partial(b"# NUMBER ALTERNATIVES: 3\n2: 2,1\n1: 3,1,2\n1: 3\n", "e.soi")
    assert n == 3 and given.tolist() == [[1, 0, -1], [1, 0, -1], [2, 0, 1], [2, -1, -1]]
    with pytest.raises(CortexError, match="item 2 repeats"):
        read_preflib_partial(b"# NUMBER ALTERNATIVES: 3\n1: 2,2\n", "e.soi")


def test_movielens_split_is_by_user_and_local_order_is_training_popularity(tmp_path):
    """The man page's MovieLens defaults: --split train and --split test hold disjoint users
    (every row of a user on one side, --draws rows each), and local item k is the k-th most
    popular of the row's movies counted on training users."""
    rng = np.random.default_rng(0)
    lines = [f"{u}\t{i}\t{rng.integers(1, 6)}\t0" for u in range(1, 41)
             for i in rng.choice(np.arange(1, 13), size=8, replace=False)]
    (tmp_path / "u.data").write_text("\n".join(lines) + "\n")
    read = lambda split: load_orders(str(tmp_path / "u.data"), OrderOptions(  # noqa: E731
        n_items=5, min_ratings=1, split=split, draws=3))
    train, test = read("train"), read("test")
    assert not set(train.users.tolist()) & set(test.users.tolist())
    assert len(set(test.users.tolist())) == 8 and len(test.orderings) == 8 * 3  # 0.2 of 40 users
    table = np.array([[int(v) for v in line.split()[:2]] for line in lines])
    counts = {m: int(((table[:, 1] == m) & np.isin(table[:, 0], train.users)).sum()) for m in range(1, 13)}
    for row in np.concatenate([train.items, test.items]):
        row = [int(m) for m in row]
        assert row == sorted(row, key=lambda m: (-counts[m], m))  # ties by movie id

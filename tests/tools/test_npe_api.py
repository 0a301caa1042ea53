"""The simulate-npe method from Python, without click: same seed, same artifact bytes as the command line."""
import torch

from cortexkit.formats.artifact import read_artifact, write_artifact
from cortexkit.formats.errors import CortexError
from cortexkit.tools import npe
from cortexkit.tools.npe.estimator import FlowConfig
from cortexkit.tools.npe.training import TrainConfig

TOOL = "simulate-npe"
TINY = ["--transforms", "1", "--bins", "4", "--hidden", "16", "--depth", "1", "--max-epochs", "4", "--threads", "1"]


def _same_bytes(cli_path, tensors, kind, metadata, out_path):
    """Write our tensors with the command's own producer/config stamp, then compare whole files."""
    art = read_artifact(str(cli_path))
    write_artifact(str(out_path), tensors, kind, producer=art.producer, config=art.config, metadata=metadata)
    return out_path.read_bytes() == cli_path.read_bytes()


def test_simulate_and_mf_npe_from_python_match_the_command_line(cli, tmp_path):
    for fid, n, seed, name in (("lf", 300, 1, "lf.st"), ("hf", 60, 2, "hf.st")):
        p = cli(TOOL, "simulate", "--task", "ou", "--fidelity", fid, "-n", n, "--chunk-size", "100", "--seed", seed,
                "-o", tmp_path / name)
        assert p.returncode == 0, p.stderr
    p = cli(TOOL, "train", "--method", "mf-npe", "--task", "ou", "--lf", tmp_path / "lf.st", "--hf", tmp_path / "hf.st",
            "--seed", "4", *TINY, "-o", tmp_path / "post.st")
    assert p.returncode == 0, p.stderr

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        prior = npe.io.read_prior(None, "ou")
        data = {}
        for fid, n, seed, name in (("lf", 300, 1, "lf.st"), ("hf", 60, 2, "hf.st")):
            theta = npe.draw_parameters(prior, n, torch.Generator().manual_seed(seed))
            sims = npe.simulate(npe.simulator_spec("ou", fid), theta, npe.SimulateConfig(chunk_size=100, seed=seed), prior)
            assert _same_bytes(tmp_path / name, sims.tensors, "npe-simulations", sims.metadata, tmp_path / f"py-{name}")
            data[fid] = (sims.tensors["theta"], sims.tensors["x"])
        torch.manual_seed(4)
        config = npe.MethodConfig(method="mf-npe", seed=4, flow=FlowConfig(transforms=1, bins=4, hidden=16, depth=1),
                                  train=TrainConfig(max_epochs=4))
        result = npe.train(config, npe.TrainInputs(prior, lf=data["lf"], hf=data["hf"]))
    finally:
        torch.set_num_threads(threads)
    assert _same_bytes(tmp_path / "post.st", result.tensors, "npe-posterior", result.metadata, tmp_path / "py-post.st")
    # and the posterior object itself scores like the reloaded file
    reloaded = npe.io.posterior_from_artifact(read_artifact(str(tmp_path / "post.st"), "npe-posterior"))
    with torch.no_grad():
        assert torch.equal(result.posterior.log_prob(*data["hf"]), reloaded.log_prob(*data["hf"]))


def test_a_failed_run_hands_python_the_finished_simulations(tmp_path, monkeypatch):
    """From Python the rescue is the same as on the command line: PartialFailure carries the finished chunks."""
    (tmp_path / "failsim.py").write_text(
        "import torch\n"
        "def simulate(theta):\n"
        "    if (theta[:, 0] > 0.9).any():\n"
        "        raise RuntimeError('diverged')\n"
        "    return theta * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    prior = npe.io.read_prior(None, "ou")
    theta = prior.sample(30, torch.Generator().manual_seed(0)).clamp(max=0.8)
    theta[25, 0] = 1.0  # chunk 2 (rows 20..29) fails
    with_partial = None
    try:
        npe.simulate(npe.simulator_spec(None, simulator="failsim:simulate"), theta, npe.SimulateConfig(chunk_size=10), prior)
    except npe.PartialFailure as failure:
        with_partial = failure
    assert with_partial is not None and "diverged" in str(with_partial)
    assert with_partial.tensors["index"].tolist() == list(range(20))
    assert torch.equal(with_partial.tensors["x"], theta[:20] * 2) and with_partial.metadata["npe.partial"] is True
    assert with_partial.kept == "the 20 finished simulations (rows 0..19)"
    try:
        npe.load_train_inputs(npe.MethodConfig(method="mf-npe"), read_artifact, hf="x.st")
    except CortexError as err:
        assert "needs --lf FILE" in str(err)
    else:
        raise AssertionError("mf-npe without LF data must fail")


def test_dispatch_stops_at_the_first_failure_and_keeps_what_was_running():
    """The dispatcher of --workers and --scheduler on a backend whose pieces finish when the test
    says: after piece 1 fails no new piece starts, and piece 0, still running then, is kept."""
    from concurrent.futures import FIRST_COMPLETED, Future, wait

    from cortexkit.tools.npe.simulation import Piece, _dispatch

    class Manual:
        limit, abandon_on_error = 2, False

        def __init__(self):
            self.futures, self.submitted, self.closed = {}, [], False

        def submit(self, piece):
            self.submitted.append(piece.chunk)
            self.futures[piece.chunk] = f = Future()
            if piece.chunk == 1:
                f.set_exception(RuntimeError("simulations 10..19: boom"))  # fails first
            return f

        def wait_first(self, running):
            done, _ = wait(list(running), timeout=0, return_when=FIRST_COMPLETED)
            if not done:  # the failure has been seen: now let piece 0 finish
                self.futures[0].set_result(torch.zeros(10, 1))
                done = {self.futures[0]}
            return [(f, None) for f in done]

        def result(self, handle, piece):
            return handle.result()

        def close(self):
            self.closed = True

    backend, kept = Manual(), {}
    pieces = [Piece(c, 10 * c, 10 * c + 10, (10 * c, 10 * c + 10)) for c in range(6)]
    try:
        _dispatch(pieces, backend, lambda piece, x: kept.__setitem__(piece.chunk, x))
    except RuntimeError as err:
        assert "boom" in str(err)
    else:
        raise AssertionError("the failure must be raised")
    assert backend.submitted == [0, 1] and list(kept) == [0] and backend.closed


def test_resume_takes_another_split_only_where_no_shard_cuts_a_chunk(tmp_path, monkeypatch):
    """A partial file of shard 1/4 resumes in an unsharded run when the shards are whole chunks
    (and gives the unsharded numbers); when the shard cut a chunk, whose random numbers then
    depend on the split, it is refused."""
    import importlib

    import pytest

    (tmp_path / "flakysim.py").write_text(
        "import torch\n"
        "FAIL = True\n"
        "def simulate(theta):\n"
        "    if FAIL and (theta[:, 0] > 0.9).any():\n"
        "        raise RuntimeError('diverged')\n"
        "    return theta + torch.rand(theta.shape)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    flaky = importlib.import_module("flakysim")
    spec = npe.simulator_spec(None, simulator="flakysim:simulate")
    prior = npe.io.read_prior(None, "ou")
    theta = prior.sample(80, torch.Generator().manual_seed(0)).clamp(max=0.8)
    theta[35, 0] = 1.0  # rows 30..39 fail while FAIL

    def partial(chunk_size):
        flaky.FAIL = True
        with pytest.raises(npe.PartialFailure) as failure:
            npe.simulate(spec, theta, npe.SimulateConfig(chunk_size=chunk_size, shard=(1, 4)), prior)
        path = str(tmp_path / f"p{chunk_size}.st")
        write_artifact(path, failure.value.tensors, "npe-simulations", metadata=failure.value.metadata)
        flaky.FAIL = False
        return read_artifact(path)

    # 8 chunks of 10 over 4 shards: whole chunks, so shard 1/4's rows 20..29 are the unsharded ones
    part = partial(10)
    assert part.meta_json("npe.done") == [[20, 30]]
    whole = npe.simulate(spec, theta, npe.SimulateConfig(chunk_size=10), prior)
    resumed = npe.simulate(spec, theta, npe.SimulateConfig(chunk_size=10), prior, resume=part)
    assert all(torch.equal(whole.tensors[k], resumed.tensors[k]) for k in ("theta", "x", "index"))
    # 3 chunks of 30 over 4 shards: shard 1/4 (rows 20..39) cuts chunks 0 and 1
    part = partial(30)
    assert part.meta_json("npe.done") == [[20, 30]]
    with pytest.raises(CortexError, match="it is shard 1/4, this run is shard 0/1, and one of the two splits cuts"):
        npe.simulate(spec, theta, npe.SimulateConfig(chunk_size=30), prior, resume=part)


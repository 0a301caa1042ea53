"""cortexkit simulate-npe through the installed command: pipelines, shards, external simulators, bad input."""
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
import torch
from safetensors.torch import load_file

TOOL = "simulate-npe"
TINY = ["--transforms", "1", "--bins", "4", "--hidden", "16", "--depth", "1", "--max-epochs", "4", "--threads", "1"]
PRIOR = textwrap.dedent("""\
    - {name: a, dist: uniform, low: 0.0, high: 1.0}
    - {name: b, dist: lognormal, loc: 0.0, scale: 0.5}
    """)
# An external simulator: theta artifact on stdin, x on stdout; behaviour steered by MODE.
EXTERNAL = textwrap.dedent("""\
    import os, sys, time
    import numpy as np
    from safetensors.numpy import load, save
    theta = load(sys.stdin.buffer.read())["theta"]
    first = int(os.environ["CORTEXKIT_FIRST_INDEX"])
    mode = os.environ.get("MODE", "ok")
    if os.environ.get("START"):  # one file per chunk started
        open(os.path.join(os.environ["START"], f"start-{first}"), "w").close()
    if mode == "crash" and first >= 20:
        sys.exit("boom: solver diverged")
    if mode == "crash-one" and first == 20:
        sys.exit("boom: chunk 2 diverged")
    if mode == "hang" and first >= 10:
        time.sleep(60)
    if mode == "crash-second":  # dies on its second call (a marker file counts the calls)
        if os.path.exists(os.environ["MARK"]):
            sys.exit("boom: second call")
        open(os.environ["MARK"], "w").close()
    x = np.stack([theta[:, 0] + theta[:, 1], theta[:, 0] * theta[:, 1], theta[:, 1] ** 2], 1)
    if mode == "shape" and first >= 10:
        x = x[:, :2]
    if os.environ.get("LOG"):  # one file per chunk that came back
        open(os.path.join(os.environ["LOG"], f"ok-{first}"), "w").close()
    sys.stdout.buffer.write(save({"x": np.ascontiguousarray(x, dtype=np.float32)}))
    """)


@pytest.fixture
def work(tmp_path):
    (tmp_path / "prior.yaml").write_text(PRIOR)
    (tmp_path / "extsim.py").write_text(EXTERNAL)
    (tmp_path / "nansim.py").write_text(textwrap.dedent("""\
        import torch
        def simulate(theta):
            x = torch.cat([theta, theta.sum(1, keepdim=True)], 1)
            x[theta[:, 0] > 0.7] = float("nan")
            return x
        """))
    return tmp_path


def sims(path):
    return load_file(str(path))


def same_bytes(path_a, path_b, scratch):
    """True when file b is byte-identical to file a once given a's command stamp (producer and
    config name the options, which differ between a sharded, merged, Dask or resumed run)."""
    from cortexkit.formats.artifact import CONFIG, KIND, PRODUCER, VERSION, read_artifact, write_artifact

    a, b = read_artifact(str(path_a)), read_artifact(str(path_b))
    extra = {k: v for k, v in b.metadata.items() if k not in (KIND, VERSION, PRODUCER, CONFIG)}
    write_artifact(str(scratch), dict(b.tensors), b.kind, producer=a.producer, config=a.config, metadata=extra)
    return Path(scratch).read_bytes() == Path(path_a).read_bytes()


def test_simulate_is_deterministic_and_shards_merge_to_the_whole(cli, work):
    common = ["simulate", "--task", "ou", "-n", "55", "--chunk-size", "10", "--seed", "3"]
    (work / "again").mkdir()
    whole = cli(TOOL, *common, "-o", "all.st", cwd=work)
    assert whole.returncode == 0, whole.stderr
    assert cli(TOOL, *common, "-o", "all.st", cwd=work / "again").returncode == 0
    assert (work / "all.st").read_bytes() == (work / "again" / "all.st").read_bytes()
    for i in range(3):
        p = cli(TOOL, *common, "--shard", f"{i}/3", "-o", work / f"s{i}.st")
        assert p.returncode == 0, p.stderr
    # merge in scrambled order: the result is in run order
    m = cli(TOOL, "merge", work / "s2.st", work / "s0.st", work / "s1.st", "-o", work / "merged.st")
    assert m.returncode == 0, m.stderr
    a, b = sims(work / "all.st"), sims(work / "merged.st")
    for key in ("theta", "x", "index"):
        assert torch.equal(a[key], b[key]), key
    assert a["x"].shape == (55, 10) and a["index"].tolist() == list(range(55))
    assert same_bytes(work / "all.st", work / "merged.st", work / "restamped.st")
    dup = cli(TOOL, "merge", work / "s0.st", work / "s0.st", "-o", work / "dup.st")
    assert dup.returncode == 1 and "shard 0/3 given twice" in dup.stderr and not (work / "dup.st").exists()


def meta(path):
    from cortexkit.formats.artifact import read_artifact

    return read_artifact(str(path)).metadata


@pytest.mark.parametrize("n, shards, chunk", [(1000, 4, 1000), (3, 4, 10)])
def test_any_n_and_shard_count_merge_to_the_unsharded_bytes(cli, work, n, shards, chunk):
    """Issue 24: -n 1000 --shard i/4 used to crash shards 0-2 (one chunk, four shards). Shards now
    split rows; n < N leaves empty shards, which are valid empty files."""
    common = ["simulate", "--task", "ou", "-n", str(n), "--chunk-size", str(chunk), "--seed", "7"]
    assert cli(TOOL, *common, "-o", work / "all.st").returncode == 0
    rows = []
    for i in range(shards):
        p = cli(TOOL, *common, "--shard", f"{i}/{shards}", "-o", work / f"s{i}.st")
        assert p.returncode == 0, p.stderr
        m = meta(work / f"s{i}.st")
        run = json.loads(m["npe.run"])
        assert m["npe.shard"] == f"{i}/{shards}" and run["n"] == n and run["seed"] == 7
        assert run["simulator"] == "task ou (hf)" and len(run["prior"]) == 16
        lo, hi = json.loads(m["npe.rows"])
        assert sims(work / f"s{i}.st")["index"].tolist() == list(range(lo, hi))
        rows.append((lo, hi))
    # the row ranges tile 0..n and none is empty unless n < N
    assert rows[0][0] == 0 and rows[-1][1] == n and all(rows[k][1] == rows[k + 1][0] for k in range(shards - 1))
    assert sum(hi == lo for lo, hi in rows) == max(0, shards - n)
    files = [work / f"s{i}.st" for i in reversed(range(shards))]
    m = cli(TOOL, "merge", *files, "-o", work / "merged.st")
    assert m.returncode == 0, m.stderr
    assert f"merged {shards} shards: all {n} rows" in m.stderr
    assert same_bytes(work / "all.st", work / "merged.st", work / "restamped.st")


def test_merge_refuses_incomplete_or_mixed_sets_and_allow_partial_says_what_it_joins(cli, work, one_line_error):
    common = ["simulate", "--task", "ou", "-n", "40", "--chunk-size", "10", "--seed", "7"]
    for i in range(4):
        assert cli(TOOL, *common, "--shard", f"{i}/4", "-o", work / f"s{i}.st").returncode == 0
    assert cli(TOOL, *common[:-1], "8", "--shard", "3/4", "-o", work / "other.st").returncode == 0
    assert cli(TOOL, *common, "--shard", "1/2", "-o", work / "half.st").returncode == 0
    out = work / "m.st"
    p = cli(TOOL, "merge", work / "s0.st", work / "s2.st", "-o", out)
    one_line_error(p, f"{TOOL} merge", "incomplete set: shards 1, 3 of 4 missing (rows 10..19, 30..39)", "--allow-partial")
    assert not out.exists()
    p = cli(TOOL, "merge", work / "s0.st", work / "s1.st", work / "s2.st", work / "other.st", "-o", out)
    one_line_error(p, f"{TOOL} merge", "are from different runs: seed 8 vs 7")
    p = cli(TOOL, "merge", work / "s0.st", work / "half.st", "-o", out)
    one_line_error(p, f"{TOOL} merge", "shards of different splits (0/4, 1/2)")
    assert not out.exists()
    p = cli(TOOL, "merge", "--allow-partial", work / "s2.st", work / "s0.st", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "shards 1, 3 of 4 missing" in p.stderr and "rows 0..9, 20..29 (20 of 40)" in p.stderr
    d, m = sims(out), meta(out)
    assert d["index"].tolist() == list(range(10)) + list(range(20, 30))
    assert m["npe.partial"] == "true" and json.loads(m["npe.done"]) == [[0, 10], [20, 30]]
    # shards lost without a partial file (a killed node): one unsharded run finishes the joined set
    assert cli(TOOL, *common, "-o", work / "whole.st").returncode == 0
    r = cli(TOOL, *common, "--resume", out, "-o", work / "finished.st")
    assert r.returncode == 0, r.stderr
    assert "resuming: 20 of 40 simulations done, 20 to go" in r.stderr
    assert same_bytes(work / "whole.st", work / "finished.st", work / "restamped.st")


def test_workers_give_the_same_numbers(cli, work):
    common = ["simulate", "--task", "sir", "--fidelity", "lf", "-n", "40", "--chunk-size", "10", "--seed", "1"]
    assert cli(TOOL, *common, "-o", work / "w1.st").returncode == 0
    p = cli(TOOL, *common, "--workers", "2", "-o", work / "w2.st")
    assert p.returncode == 0, p.stderr
    assert torch.equal(sims(work / "w1.st")["x"], sims(work / "w2.st")["x"])


def test_external_program_simulator_in_a_pipe(sh, work):
    p = sh(f"cortexkit {TOOL} simulate --prior prior.yaml -n 30 --chunk-size 8 --workers 2 --seed 5 "
           f"--simulator-cmd '{sys.executable} extsim.py' | cortexkit inspect -", cwd=work)
    assert p.returncode == 0, p.stderr
    assert b"kind: npe-simulations" in p.stdout and b"shape: [30, 3]" in p.stdout
    p = sh(f"cortexkit {TOOL} simulate --prior prior.yaml -n 30 --chunk-size 8 --seed 5 "
           f"--simulator-cmd '{sys.executable} extsim.py' -o ext.st", cwd=work)
    d = sims(work / "ext.st")
    th = d["theta"]
    assert torch.allclose(d["x"], torch.stack([th[:, 0] + th[:, 1], th[:, 0] * th[:, 1], th[:, 1] ** 2], 1))
    assert (th[:, 0] >= 0).all() and (th[:, 0] <= 1).all() and (th[:, 1] > 0).all()


@pytest.mark.parametrize("mode, fragment, kept", [
    ("crash", "simulations 20..29: simulator command exited with status 1: boom: solver diverged", 20),
    ("hang", "simulations 10..19: simulator command timed out after 8 s", 10),
    ("shape", "simulations 10..19: simulator returned x of dimension 2, earlier chunks had 3", 10),
])
def test_failing_simulator_gives_one_line_and_keeps_finished_work(cli, work, one_line_error, mode, fragment, kept):
    out = work / "out.st"
    timeout = ["--timeout", "8"] if mode == "hang" else []
    p = cli(TOOL, "simulate", "--prior", work / "prior.yaml", "-n", "40", "--chunk-size", "10", *timeout,
            "--simulator-cmd", f"{sys.executable} {work / 'extsim.py'}", "-o", out, env={"MODE": mode})
    one_line_error(p, f"{TOOL} simulate", fragment, f"kept in {out}.partial")
    assert not out.exists()
    part = sims(f"{out}.partial")
    assert part["theta"].shape[0] == kept and part["index"].tolist() == list(range(kept))


def test_workers_keep_every_finished_chunk_and_resume_gives_the_uninterrupted_bytes(cli, work):
    """Issue 24: with --workers 2 the chunks finished after a failure were thrown away. Now every
    chunk the simulator finished is in the partial file (npe.done lists its rows), and --resume
    simulates only the rest and writes what an uninterrupted run writes."""
    ext = ["--simulator-cmd", f"{sys.executable} {work / 'extsim.py'}"]
    common = ["simulate", "--prior", work / "prior.yaml", "-n", "60", "--chunk-size", "10", "--seed", "5", *ext]
    assert cli(TOOL, *common, "-o", work / "whole.st").returncode == 0
    log1, log2 = work / "log1", work / "log2"
    log1.mkdir(), log2.mkdir()
    out = work / "out.st"
    p = cli(TOOL, *common, "--workers", "2", "-o", out, env={"MODE": "crash-one", "LOG": str(log1)})
    assert p.returncode == 1 and "simulations 20..29: simulator command exited with status 1" in p.stderr
    ran = sorted(int(f.name[3:]) for f in log1.iterdir())
    assert 0 in ran and 10 in ran and 20 not in ran  # chunks 0 and 1 precede the failing chunk 2
    part = sims(f"{out}.partial")
    done = json.loads(meta(f"{out}.partial")["npe.done"])
    kept = sorted({int(i) // 10 * 10 for i in part["index"].tolist()})
    assert kept == ran and sum(b - a for a, b in done) == 10 * len(ran)
    assert f"the {10 * len(ran)} finished simulations (rows " in p.stderr
    r = cli(TOOL, *common, "--workers", "2", "--resume", f"{out}.partial", "-o", out, env={"LOG": str(log2)})
    assert r.returncode == 0, r.stderr
    again = sorted(int(f.name[3:]) for f in log2.iterdir())
    assert again == [c for c in range(0, 60, 10) if c not in ran]  # only what was missing
    assert same_bytes(work / "whole.st", out, work / "restamped.st")
    other = cli(TOOL, *common[:-4], "--seed", "6", *ext, "--resume", f"{out}.partial", "-o", work / "x.st")
    assert other.returncode == 1 and "from another run (seed 5, this run 6)" in other.stderr


def test_a_terminated_run_keeps_its_finished_chunks_and_resumes(sh, cli, work):
    """A Slurm time limit (SIGTERM) mid-run: the finished chunks go to the partial file, the
    running simulator programs are ended at once, the exit status stays 143 (128 + SIGTERM), and
    --resume finishes the run."""
    (work / "started").mkdir()
    common = (f"simulate --prior prior.yaml -n 30 --chunk-size 10 --seed 5 --workers 2 "
              f"--simulator-cmd '{sys.executable} extsim.py'")
    # chunks 1 and 2 (rows 10..29) hang for 60 s; chunk 2 starts once chunk 0 is accepted, then the job is ended
    p = sh(f"MODE=hang START=started cortexkit {TOOL} {common} -o out.st & job=$!\n"
           "for i in $(seq 600); do [ -e started/start-20 ] && break; sleep 0.2; done\n"
           "t0=$SECONDS; kill -TERM $job; wait $job; echo \"status $? after $((SECONDS - t0)) s\"", cwd=work)
    status, after = p.stdout.decode().split(" after ")
    assert status == "status 143", p.stderr
    assert int(after.split()[0]) < 30, p.stdout  # not the 60 s the hung programs would take
    assert "the 10 finished simulations (rows 0..9) were kept in out.st.partial" in p.stderr
    assert p.stderr.strip().endswith(f"cortexkit {TOOL} simulate: terminated") and "Traceback" not in p.stderr
    assert not (work / "out.st").exists() and sims(work / "out.st.partial")["index"].tolist() == list(range(10))
    r = sh(f"cortexkit {TOOL} {common} --resume out.st.partial -o out.st", cwd=work)
    assert r.returncode == 0, r.stderr
    d = sims(work / "out.st")
    th = d["theta"]
    assert d["index"].tolist() == list(range(30))
    assert torch.allclose(d["x"], torch.stack([th[:, 0] + th[:, 1], th[:, 0] * th[:, 1], th[:, 1] ** 2], 1))


@pytest.mark.parametrize("task, dim", [("two_moons", 2), ("gaussian_linear", 10)])
def test_simulate_the_lf_version_of_two_moons_and_gaussian_linear(cli, work, task, dim):
    """The cheap versions are reachable from the command line and differ from HF on the same theta."""
    out = {}
    for fid in ("hf", "lf"):
        p = cli(TOOL, "simulate", "--task", task, "--fidelity", fid, "-n", "500", "--seed", "5", "-o", work / f"{fid}.st")
        assert p.returncode == 0, p.stderr
        out[fid] = sims(work / f"{fid}.st")
        assert out[fid]["x"].shape == (500, dim)
    assert torch.equal(out["hf"]["theta"], out["lf"]["theta"])
    if task == "gaussian_linear":  # x ~ N(0.9 theta, 0.2 I) against N(theta, 0.1 I)
        res = out["lf"]["x"].double() - 0.9 * out["lf"]["theta"].double()
        assert res.var().item() == pytest.approx(0.2, rel=0.1)
    else:
        assert not torch.allclose(out["hf"]["x"], out["lf"]["x"])


def test_invalid_simulations_are_dropped_and_counted(cli, work):
    p = cli(TOOL, "simulate", "--prior", work / "prior.yaml", "-n", "100", "--seed", "2",
            "--simulator", "nansim:simulate", "-o", work / "nan.st", env={"PYTHONPATH": str(work)})
    assert p.returncode == 0, p.stderr
    d = sims(work / "nan.st")
    n_bad = 100 - d["theta"].shape[0]
    assert 15 < n_bad < 45 and (d["theta"][:, 0] <= 0.7).all()
    assert f"dropped {n_bad} of 100" in p.stderr
    meta = yaml.safe_load(cli("inspect", work / "nan.st").stdout)["metadata"]
    assert int(meta["npe.n_invalid"]) == n_bad


def test_train_sample_score_evaluate_pipeline(cli, sh, work):
    assert cli(TOOL, "simulate", "--task", "ou", "--fidelity", "lf", "-n", "300", "--seed", "1", "-o", work / "lf.st").returncode == 0
    assert cli(TOOL, "simulate", "--task", "ou", "-n", "60", "--seed", "2", "-o", work / "hf.st").returncode == 0
    assert cli(TOOL, "simulate", "--task", "ou", "-n", "3", "--seed", "9", "-o", work / "obs.st").returncode == 0
    train = [TOOL, "train", "--method", "mf-npe", "--lf", work / "lf.st", "--hf", work / "hf.st", "--seed", "4",
             "--embedding", "mlp", *TINY]
    (work / "again").mkdir()
    p = cli(*train, "-o", "post.st", cwd=work)
    assert p.returncode == 0, p.stderr
    assert cli(*train, "-o", "post.st", cwd=work / "again").returncode == 0
    assert (work / "post.st").read_bytes() == (work / "again" / "post.st").read_bytes()
    # samples for x of the observation file, then their C2ST against themselves-with-noise is a valid report
    p = sh(f"cortexkit {TOOL} sample post.st --x-o obs.st -n 200 --seed 1 -o samples.st && "
           f"cortexkit {TOOL} sample post.st --x-o obs.st -n 200 --seed 2 "
           f"| cortexkit {TOOL} evaluate samples.st --reference - --metrics rf-c2st,mmd", cwd=work)
    assert p.returncode == 0, p.stderr
    import yaml

    rep = yaml.safe_load(p.stdout)
    assert rep["samples"] == {"n_observations": 3, "n_samples": 200, "n_reference": 200}
    assert 0.35 < rep["summary"]["rf_c2st"]["mean"] < 0.65  # two draws of the same posterior
    s = sims(work / "samples.st")
    assert s["theta"].shape == (3, 200, 2)
    assert ((s["theta"][..., 0] >= 0.1) & (s["theta"][..., 0] <= 3.0)).all()
    # score: log q of the HF pairs, matching an in-process reload bit for bit
    assert cli(TOOL, "score", work / "post.st", work / "hf.st", "-o", work / "lp.st").returncode == 0
    from cortexkit.formats.artifact import read_artifact
    from cortexkit.tools.npe.io import posterior_from

    art = read_artifact(str(work / "post.st"), "npe-posterior")
    post = posterior_from(art.tensors, {k: art.meta_json(k) for k in ("npe.prior", "npe.flow", "npe.x_dim", "npe.members")})
    hf = sims(work / "hf.st")
    assert post.members[0].cfg.embedding == "mlp"  # the flag reached the artifact and the reload
    with torch.no_grad():
        assert torch.equal(post.log_prob(hf["theta"], hf["x"]), sims(work / "lp.st")["log_prob"])
    # NLTP and SBC reports
    p = cli(TOOL, "evaluate", "--posterior", work / "post.st", "--sbc", work / "hf.st", "--sbc-samples", "20")
    assert p.returncode == 0, p.stderr
    rep = yaml.safe_load(p.stdout)
    assert set(rep["sbc"]["parameters"]) == {"mu", "sigma"} and rep["sbc"]["n_pairs"] == 60


def _png_is_a_drawing(path):
    import matplotlib.image

    img = matplotlib.image.imread(str(path))
    return img.ndim == 3 and img.shape[0] > 100 and img[..., :3].std() > 0.05  # not blank


def test_evaluate_plots_pairs_and_sbc_ranks(cli, one_line_error, work):
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    assert cli(TOOL, "simulate", "--task", "ou", "-n", "60", "--seed", "2", "-o", work / "hf.st").returncode == 0
    assert cli(TOOL, "simulate", "--task", "ou", "-n", "3", "--seed", "9", "-o", work / "obs.st").returncode == 0
    assert cli(TOOL, "train", "--method", "npe", "--hf", work / "hf.st", "--seed", "4", *TINY,
               "-o", work / "post.st").returncode == 0
    for seed, name in ((1, "a.st"), (2, "b.st")):
        assert cli(TOOL, "sample", work / "post.st", "--x-o", work / "obs.st", "-n", "300", "--seed", seed,
                   "-o", work / name).returncode == 0
    p = cli(TOOL, "evaluate", work / "a.st", "--reference", work / "b.st", "--metrics", "rf-c2st",
            "--observation", "1", "--plot", work / "pairs.png")
    assert p.returncode == 0, p.stderr
    import yaml

    rep = yaml.safe_load(p.stdout)
    assert [r["observation"] for r in rep["per_observation"]] == [1] and rep["samples"]["n_observations"] == 1
    assert rep["plot"] == str(work / "pairs.png") and _png_is_a_drawing(work / "pairs.png")
    p = cli(TOOL, "evaluate", "--posterior", work / "post.st", "--sbc", work / "hf.st", "--sbc-samples", "20",
            "--plot", work / "sbc.png")
    assert p.returncode == 0, p.stderr
    assert _png_is_a_drawing(work / "sbc.png")
    p = cli(TOOL, "evaluate", work / "a.st", "--reference", work / "b.st", "--observation", "3", "--plot", work / "no.png")
    one_line_error(p, f"{TOOL} evaluate", "--observation 3: SAMPLES hold 3 observations")
    p = cli(TOOL, "evaluate", "--posterior", work / "post.st", "--x-o", work / "obs.st", "--plot", work / "no.png")
    one_line_error(p, f"{TOOL} evaluate", "--plot draws SAMPLES against --reference, or SBC ranks")
    assert not (work / "no.png").exists()


def test_pretrained_is_what_npe_at_the_pretraining_rate_writes(cli, work):
    """--pretrained's documented input: train --method npe --hf LF --lr 1e-4 --patience 20 gives the very flow
    mf-npe --lf LF pretrains, so the fine-tuned weights are identical either way."""
    assert cli(TOOL, "simulate", "--task", "ou", "--fidelity", "lf", "-n", "200", "--seed", "1", "-o", work / "lf.st").returncode == 0
    assert cli(TOOL, "simulate", "--task", "ou", "-n", "40", "--seed", "2", "-o", work / "hf.st").returncode == 0
    seed = ["--seed", "4", *TINY]
    assert cli(TOOL, "train", "--method", "mf-npe", "--lf", work / "lf.st", "--hf", work / "hf.st", *seed,
               "-o", work / "direct.st").returncode == 0
    pre = cli(TOOL, "train", "--method", "npe", "--hf", work / "lf.st", "--lr", "1e-4", "--patience", "20", *seed,
              "-o", work / "pre.st")
    assert pre.returncode == 0, pre.stderr
    p = cli(TOOL, "train", "--method", "mf-npe", "--pretrained", work / "pre.st", "--hf", work / "hf.st", *seed,
            "-o", work / "reused.st")
    assert p.returncode == 0, p.stderr
    a, b = sims(work / "direct.st"), sims(work / "reused.st")
    assert sorted(a) == sorted(b) and all(torch.equal(a[k], b[k]) for k in a)


def test_sequential_method_through_the_cli(cli, work):
    assert cli(TOOL, "simulate", "--task", "ou", "--fidelity", "lf", "-n", "200", "--seed", "1", "-o", work / "lf.st").returncode == 0
    assert cli(TOOL, "simulate", "--task", "ou", "-n", "2", "--seed", "9", "-o", work / "obs.st").returncode == 0
    p = cli(TOOL, "train", "--method", "a-mf-tsnpe", "--task", "ou", "--lf", work / "lf.st", "--x-o", work / "obs.st",
            "--observation", "1", "--hf-budget", "30", "--rounds", "3", "--ensemble", "2", "--candidates", "20",
            "--truncation-samples", "1000", *TINY, "-o", work / "seq.st")
    assert p.returncode == 0, p.stderr
    d = sims(work / "seq.st")
    assert d["rounds.theta"].shape == (30, 2) and d["rounds.round"].tolist() == [1] * 10 + [2] * 10 + [3] * 10
    assert d["rounds.acquired"].sum() == 4 and torch.equal(d["x_o"], sims(work / "obs.st")["x"][1])
    assert any(k.startswith("member1.") for k in d)
    # the stored observation is the default for sampling
    assert cli(TOOL, "sample", work / "seq.st", "-n", "10", "-o", work / "s.st").returncode == 0
    assert sims(work / "s.st")["theta"].shape == (1, 10, 2)


def test_sequential_training_keeps_finished_rounds_when_the_simulator_fails(cli, work, one_line_error):
    save = __import__("safetensors.torch", fromlist=["save_file"]).save_file
    save({"x_o": torch.tensor([0.9, 0.2, 0.1])}, str(work / "obs3.st"))
    out = work / "seq.st"
    p = cli(TOOL, "train", "--method", "tsnpe", "--prior", work / "prior.yaml", "--x-o", work / "obs3.st",
            "--hf-budget", "30", "--rounds", "3", "--truncation-samples", "1000", *TINY,
            "--simulator-cmd", f"{sys.executable} {work / 'extsim.py'}", "-q", "-o", out,
            env={"MODE": "crash-second", "MARK": str(work / "mark")})
    one_line_error(p, f"{TOOL} train", "round 2: simulations 10..19", "boom: second call", f"1 finished round(s) were kept in {out}.partial")
    assert not out.exists()
    part = sims(f"{out}.partial")
    assert part["theta"].shape == (10, 2) and part["round"].tolist() == [1] * 10  # the round the message calls 1
    # the kept simulations are the external simulator's outputs for those parameters
    th = part["theta"]
    assert torch.allclose(part["x"], torch.stack([th[:, 0] + th[:, 1], th[:, 0] * th[:, 1], th[:, 1] ** 2], 1))


def test_bad_input_one_line_errors(cli, work, one_line_error):
    cli(TOOL, "simulate", "--task", "ou", "-n", "30", "--seed", "1", "-o", work / "hf.st")
    cli(TOOL, "simulate", "--task", "slcp", "--fidelity", "lf", "-n", "30", "--seed", "1", "-o", work / "slcp.st")
    out = work / "never.st"
    # LF and HF of different x-dimension (the slcp file also has 5 parameters; give the OU prior's names)
    torch.manual_seed(0)
    from safetensors.torch import save_file

    save_file({"theta": torch.rand(30, 2) * 0.5 + 0.1, "x": torch.randn(30, 8)}, str(work / "lf8.st"))
    p = cli(TOOL, "train", "--method", "mf-npe", "--task", "ou", "--lf", work / "lf8.st", "--hf", work / "hf.st", "-o", out)
    one_line_error(p, f"{TOOL} train", "dimension 8", "has 10", "share the x-space")
    # theta outside the prior
    save_file({"theta": torch.tensor([[0.5, 0.3]] * 9 + [[5.0, 0.3]]), "x": torch.randn(10, 10)}, str(work / "out.st"))
    p = cli(TOOL, "train", "--method", "npe", "--task", "ou", "--hf", work / "out.st", "-o", out)
    one_line_error(p, f"{TOOL} train", "simulation 9", "outside the prior")
    # an observation of the wrong size
    cli(TOOL, "train", "--method", "npe", "--task", "ou", "--hf", work / "hf.st", *TINY, "-o", work / "post.st")
    p = cli(TOOL, "sample", work / "post.st", "--x-o", work / "slcp.st", "-o", out)
    one_line_error(p, f"{TOOL} sample", "8 dimensions", "dimension 10")
    # a wrong artifact kind and an unknown task
    p = cli(TOOL, "sample", work / "hf.st", "--x-o", work / "hf.st", "-o", out)
    one_line_error(p, f"{TOOL} sample", "expected a 'npe-posterior' artifact, got 'npe-simulations'")
    p = cli(TOOL, "simulate", "--task", "lotka", "-n", "3", "-o", out)
    one_line_error(p, f"{TOOL} simulate", "unknown task 'lotka'")
    p = cli(TOOL, "train", "--method", "tsnpe", "--task", "ou", "--x-o", work / "hf.st", "--hf-budget", "50", "-o", out)
    one_line_error(p, f"{TOOL} train", "holds 30 observations", "--observation")
    # --resume of a finished file; --workers beside --scheduler
    p = cli(TOOL, "simulate", "--task", "ou", "-n", "30", "--seed", "1", "--resume", work / "hf.st", "-o", out)
    one_line_error(p, f"{TOOL} simulate", "hf.st: not the partial file of a failed simulate run")
    p = cli(TOOL, "simulate", "--task", "ou", "-n", "30", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9", "-o", out)
    one_line_error(p, f"{TOOL} simulate", "give --workers or --scheduler, not both")
    assert not out.exists()


@pytest.mark.parametrize("metrics", ["", ",", " , "])
def test_a_metric_list_naming_no_metric_is_an_error(cli, work, one_line_error, metrics):
    """Issue 16: --metrics '' evaluated nothing and reported an empty summary with exit 0."""
    cli(TOOL, "simulate", "--task", "two_moons", "-n", "40", "--seed", "1", "-o", work / "s.st")
    out = work / "never.yaml"
    p = cli(TOOL, "evaluate", work / "s.st", "--reference", work / "s.st", "--metrics", metrics, "-o", out)
    one_line_error(p, f"{TOOL} evaluate", "--metrics", "names no metric")
    assert not out.exists()


def test_a_prior_of_another_size_than_the_task_is_an_error(cli, work, one_line_error):
    """Issue 16: a 3-parameter prior for two_moons (2 parameters) simulated without a word."""
    prior = work / "p3.yaml"
    prior.write_text("".join(f"- {{name: {n}, dist: uniform, low: -1, high: 1}}\n" for n in "abc"))
    out = work / "never.st"
    p = cli(TOOL, "simulate", "--task", "two_moons", "--prior", prior, "-n", "5", "-o", out)
    one_line_error(p, f"{TOOL} simulate", "3 parameters (a, b, c)", "task two_moons takes 2")
    p = cli(TOOL, "train", "--method", "npe", "--task", "two_moons", "--prior", prior, "--hf", out, "-o", out)
    one_line_error(p, f"{TOOL} train", "task two_moons takes 2")
    assert not out.exists()


def test_figure4_smoke_mf_npe_beats_npe_on_the_paper_ou_data(cli, shared_data, tmp_path):
    """OU, LF 10^3, HF 100, 3 observations, 2 seeds: MF-NPE's RF-C2ST below NPE's on average."""
    import yaml

    d = shared_data / "npe" / "ou_process"
    obs = d / "true_obs_10.safetensors"
    from safetensors.torch import save_file

    ref = load_file(str(obs))
    save_file({"x_o": ref["x_o"][:3].contiguous(), "reference_posterior_samples": ref["reference_posterior_samples"][:3].contiguous()},
              str(tmp_path / "obs3.st"))
    c2st = {"npe": [], "mf-npe": []}
    for seed in (12, 13):
        for method in c2st:
            extra = ["--lf", d / "lf_train_1000.safetensors"] if method == "mf-npe" else []
            p = cli(TOOL, "train", "--method", method, "--task", "ou", "--hf", d / "hf_train_100.safetensors", *extra,
                    "--seed", seed, "--threads", "1", "-o", tmp_path / f"{method}{seed}.st")
            assert p.returncode == 0, p.stderr
            p = cli(TOOL, "sample", tmp_path / f"{method}{seed}.st", "--x-o", tmp_path / "obs3.st", "-n", "1000",
                    "--seed", "1", "-o", tmp_path / "s.st")
            assert p.returncode == 0, p.stderr
            p = cli(TOOL, "evaluate", tmp_path / "s.st", "--reference", tmp_path / "obs3.st", "--metrics", "rf-c2st")
            assert p.returncode == 0, p.stderr
            c2st[method] += [r["rf_c2st"] for r in yaml.safe_load(p.stdout)["per_observation"]]
    npe, mf = sum(c2st["npe"]) / 6, sum(c2st["mf-npe"]) / 6
    print(f"figure-4 smoke: NPE {npe:.3f}, MF-NPE {mf:.3f}", c2st)
    assert mf < npe, c2st
    assert npe < 0.95 and mf < 0.9, c2st


# GNU parallel is not installed here: a stand-in for "parallel CMD... ::: ARG..." ({} in CMD
# replaced by each ARG, all jobs at once, exit status the number of failed jobs, as GNU's).
PARALLEL = textwrap.dedent("""\
    #!PYTHON
    import subprocess, sys
    args = sys.argv[1:]
    cut = args.index(":::")
    cmd, values = args[:cut], args[cut + 1:]
    jobs = [subprocess.Popen([w.replace("{}", v) for w in cmd]) for v in values]
    sys.exit(sum(job.wait() != 0 for job in jobs))
    """)
MY_MODEL = textwrap.dedent("""\
    #!PYTHON
    # a random model: its noise comes from the seed cortexkit gives each chunk
    import os, sys
    import numpy as np
    from safetensors.numpy import load, save
    theta = load(sys.stdin.buffer.read())["theta"]
    rng = np.random.default_rng(int(os.environ["CORTEXKIT_SEED"]))
    x = theta @ np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 1.0]]) + rng.normal(size=(theta.shape[0], 3))
    sys.stdout.buffer.write(save({"x": x.astype(np.float32)}))
    """)


def test_readme_fan_out_runs_as_printed_and_merges_to_the_unsharded_bytes(sh, work):
    """Issue 24: the README's own fan-out crashed three of its four shards and merge joined the one
    left. Its block runs here as printed (parallel is a stand-in) with a random external model."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", readme, re.S) if "--shard {}/4" in b)
    bin_dir = work / "bin"
    bin_dir.mkdir()
    for path, text in ((bin_dir / "parallel", PARALLEL), (work / "my_model", MY_MODEL)):
        path.write_text(text.replace("PYTHON", sys.executable))
        path.chmod(0o755)
    env = {"PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])}
    p = sh(block, cwd=work, env=env)
    assert p.returncode == 0, p.stderr
    assert "merged 4 shards: all 1000 rows, 1000 simulations" in p.stderr
    # the same command without --shard and parallel: one local run
    whole = block.split("\n")[0:2]
    whole = " ".join(line.rstrip("\\") for line in whole).replace("parallel ", "", 1)
    whole = whole.replace(" --shard {}/4", "").replace("-o shard{}.safetensors ::: 0 1 2 3", "-o whole.safetensors")
    q = sh(whole, cwd=work, env=env)
    assert q.returncode == 0, q.stderr
    assert same_bytes(work / "whole.safetensors", work / "hf.safetensors", work / "restamped.st")
    (work / "shard2.safetensors").unlink()
    r = sh("cortexkit simulate-npe merge shard*.safetensors -o again.safetensors", cwd=work)
    assert r.returncode == 1 and "shard 2 of 4 missing (rows 500..749)" in r.stderr

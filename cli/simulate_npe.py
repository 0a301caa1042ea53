"""cortexkit simulate-npe: multifidelity neural posterior estimation for costly simulators."""

from __future__ import annotations

import click

from cortexkit.cli.base import POSITIVE, Count, UNIT, Float, output_option, require_matplotlib, tool_group, verb
from cortexkit.tools.npe import schema as _schema  # noqa: F401  (registers the schemas checked on read)
from cortexkit.formats.errors import CortexError

group = tool_group(
    "simulate-npe",
    help="MF-(TS)NPE: posterior estimation that pretrains on cheap low-fidelity simulations and "
         "fine-tunes on few high-fidelity ones (Krouglova et al., ICLR 2026).",
)

METHODS = ("npe", "mf-npe", "tsnpe", "mf-tsnpe", "a-mf-tsnpe")
SEQUENTIAL = ("tsnpe", "mf-tsnpe", "a-mf-tsnpe")
SIM_KIND = "npe-simulations"
THETA_KIND = "npe-theta"
POSTERIOR_KIND = "npe-posterior"
SAMPLES_KIND = "npe-samples"
LOGPROB_KIND = "npe-log-prob"

MAN = {
    "DESCRIPTION": """
Simulation-based inference for a simulator whose runs are expensive. A conditional neural spline
flow q(theta | x) is trained on (theta, x) pairs; MF-NPE first pretrains it on many cheap
low-fidelity (LF) simulations and then fine-tunes every weight on the few high-fidelity (HF) ones.

The flow: 5 masked-autoregressive rational-quadratic spline layers (8 bins, conditioners of 5
hidden layers of 50 units, zuko), Gaussian base. theta is mapped from the prior's support to R^d
by a fixed bijection whose Jacobian is part of the density, so samples never leave the prior:
logit for uniform boxes and (theta - loc) / scale for normal priors (sbi's mcmc_transform, as the
authors use it), (log theta - loc) / scale for log-normal ones (the authors stop at log theta, which
leaves priors far from 0 outside the splines' [-5, 5] domain, where the flow cannot reach them).
The logit map can cost accuracy when posterior mass lies against a box's bound: on sbibm's two
moons, whose posteriors reach |theta| = 1, NPE at 10^3 simulations scores C2ST 0.79 where sbi's
z-scored theta scores 0.73 (sbi with the logit map: 0.79; benchmarks/RESULTS.md).
x is z-scored with the statistics of the data of the current training phase. Training: negative log-likelihood, random 90/10 train/validation
split, minibatches of min(200, N), Adam, gradient norm clipped at 5, stop after 20 epochs without
validation improvement, best-validation weights kept.

Methods (train --method):
- npe :: HF data only, lr 5e-4.
- mf-npe :: pretrain on LF data (lr 1e-4), then fine-tune all weights on HF data with a fresh Adam
(lr 5e-4) and an x-standardiser re-fitted on the HF data.
- tsnpe :: per observation x_o: 5 rounds of N_HF/5 HF simulations; each round trains the same
network on all rounds' data; the next proposal is the prior truncated to where
log q(theta | x_o) exceeds the 1e-6 quantile of 10^6 posterior draws (rejection from the prior).
- mf-tsnpe :: the same loop starting from the LF-pretrained flow, keeping its LF x-statistics.
- a-mf-tsnpe :: an ensemble of 5 copies of the pretrained flow; from round 2 on, 20% of each round's
parameters are the prior candidates (250, 2500 or 25000 for N_HF up to 10^3, 10^4, more) with
the largest variance over members of log q(theta | x_o); the posterior is the members' uniform
mixture and truncation is computed on it. As in the authors' code, the acquired points are not
importance-weighted.

Verbs: simulate (run a simulator: a built-in task, a Python function or any external program),
merge (join shards), train, sample, score (log q(theta | x)) and evaluate (C2ST with the paper's
random forest and sbibm's MLP, MMD, NLTP, or simulation-based calibration).

Built-in tasks (--task, --fidelity hf|lf): ou (HF: Euler-Maruyama OU process, dt 0.1, gamma 0.5,
x0 ~ N(mu + 3, 1), 101 steps, values at steps 0, 10, ..., 90; LF: 10 i.i.d. N(mu, sigma) draws),
slcp (LF: mean fixed to 0), sir (HF: I at days 0, 17, ..., 153; LF: a solver saving every 4 days,
read at days 0, 16, 36, 52, 72, 88, 108, 124, 144, 160), two_moons and gaussian_linear (HF only),
all vectorised.

An external simulator (--simulator-cmd 'CMD') is run by the shell once per chunk of --chunk-size
parameter vectors: it reads a safetensors file with tensor theta (n, d) on stdin and writes a
safetensors file with tensor x (n, x_dim) on stdout; CORTEXKIT_SEED and CORTEXKIT_FIRST_INDEX
are set in its environment. Chunk c of a run is seeded from (--seed, c), so a run gives the same
numbers at once, with --workers N, or as --shard i/N pieces joined by merge. Simulations whose x
holds NaN or inf are dropped and counted. If a simulator crashes, hangs past --timeout or returns
the wrong shape, the command fails with one line naming the simulation indices, and the
simulations that finished are kept in the --partial file. Sequential train does the same: the HF
simulations of the rounds that came back (tensor round says which) go to its --partial file, so
a failed run's simulator time is not lost.
""",
    "EXAMPLES": """
Simulate the built-in OU task at both fidelities and train MF-NPE:

    cortexkit simulate-npe simulate --task ou --fidelity lf -n 10000 --seed 1 \\
      -o lf.safetensors
    cortexkit simulate-npe simulate --task ou -n 100 --seed 2 -o hf.safetensors
    cortexkit simulate-npe train --method mf-npe --task ou --lf lf.safetensors \\
      --hf hf.safetensors -o post.safetensors

Posterior samples for observations and their C2ST against reference samples:

    cortexkit simulate-npe sample post.safetensors --x-o obs.safetensors \\
      -n 1000 \\
      | cortexkit simulate-npe evaluate - --reference obs.safetensors

A prior spec and an external simulator, fanned out with GNU parallel over 4 shards:

    cat > prior.yaml <<END
    - {name: g_na, dist: uniform, low: 0.005, high: 0.8}
    - {name: g_k, dist: lognormal, loc: -4.0, scale: 0.5}
    END
    parallel cortexkit simulate-npe simulate --prior prior.yaml -n 1000 \\
      --seed 7 --shard {}/4 \\
      --simulator-cmd ./run_neuron --timeout 600 \\
      -o shard{}.safetensors ::: 0 1 2 3
    cortexkit simulate-npe merge shard*.safetensors -o hf.safetensors

A-MF-TSNPE for observation 3, with the HF task simulated in the loop:

    cortexkit simulate-npe train --method a-mf-tsnpe --task ou \\
      --lf lf.safetensors \\
      --x-o obs.safetensors --observation 3 --hf-budget 100 -o post3.safetensors

Calibration without a reference posterior, with the rank histograms drawn (needs matplotlib):

    cortexkit simulate-npe simulate --task sir -n 200 --seed 9 \\
      -o test.safetensors
    cortexkit simulate-npe evaluate --posterior post.safetensors \\
      --sbc test.safetensors --plot sbc.png

A pair plot of observation 2's posterior against its reference samples:

    cortexkit simulate-npe sample post.safetensors --x-o obs.safetensors \\
      -n 1000 \\
      | cortexkit simulate-npe evaluate - --reference obs.safetensors \\
      --observation 2 --plot pairs.png
""",
    "FILES": """
- npe-simulations (simulate, merge; train --lf/--hf) :: theta (n, d) float32 parameters; x (n, x_dim)
float32 simulator outputs; index (n,) int64 position of each simulation in the whole run (rows
with invalid x are absent). Metadata npe.prior (the prior spec), npe.parameter_names,
npe.simulator, npe.fidelity, npe.n_requested, npe.n_invalid, npe.shard, npe.chunk_size. Any
safetensors file with tensors theta and x (no cortexkit metadata) is accepted as training data.
- npe-theta (stdin of an external simulator) :: theta (n, d) float32.
- npe-posterior (train) :: member{m}.<name> float32: the weights of ensemble member m (one member
except a-mf-tsnpe): member{m}.standardizer.mean and .std (x_dim,) the x z-score statistics,
member{m}.flow.* the spline flow, member{m}.embedding.* the optional embedding net. Sequential
methods add x_o (x_dim,), rounds.theta (N, d), rounds.x (N, x_dim), rounds.round (N,) int64,
rounds.acquired (N,) bool (chosen by acquisition) and rounds.tau (R,) float64 (log-density
threshold of the next proposal, NaN after the last round). Metadata npe.method, npe.prior,
npe.flow (architecture), npe.x_dim, npe.members, npe.history (epochs and validation losses per
training phase and round). Reloading gives bit-identical log-probabilities.
- npe-samples (sample) :: theta (n_obs, n, d) float32 posterior samples; x_o (n_obs, x_dim).
- npe-log-prob (score) :: log_prob (n,) or (n_obs, n) float32, log q(theta | x).
- observations (--x-o) :: a safetensors file with tensor x_o (or x) of shape (n_obs, x_dim) or
(x_dim,); evaluate --reference reads reference_posterior_samples (n_obs, m, d) (or theta of an
npe-samples file) and, for NLTP, theta_o or theta_true (n_obs, d).
- prior spec (--prior) :: YAML list of {name, dist: uniform, low, high} | {name, dist: normal, loc,
scale} | {name, dist: lognormal, loc, scale}; count: k repeats an entry.
- evaluate --plot PNG :: with SAMPLES, a pair plot of one observation (diagonal: histograms of
the samples and the reference; below: scatter of both); with --sbc, one rank histogram per
parameter with the central 99% band of a bin count under calibration (Talts et al. 2018).
""",
    "SEE ALSO": "cortexkit(1), cortexkit-inspect(1), cortexkit-convert(1)",
    "REFERENCE": """
A. N. Krouglova, H. R. Johnson, B. Confavreux, M. Deistler, P. J. Goncalves. Multifidelity
simulation-based inference for computationally expensive simulators. ICLR 2026 (arXiv 2502.08416).
Truncation: M. Deistler, P. J. Goncalves, J. H. Macke. Truncated proposals for scalable and
hassle-free simulation-based inference. NeurIPS 2022. Flows: zuko (probabilists/zuko).
""",
}


# ---------------------------------------------------------------------------------------------
# helpers (torch imported lazily)

def _load_prior(prior_path, task):
    from cortexkit.tools.npe.priors import Prior
    from cortexkit.tools.npe.tasks import get_task

    if prior_path:
        import yaml
        from pathlib import Path

        p = Path(prior_path)
        if not p.is_file():
            raise CortexError(f"--prior {prior_path}: no such file")
        try:
            spec = yaml.safe_load(p.read_text())
        except yaml.YAMLError as exc:
            raise CortexError(f"--prior {prior_path}: not valid YAML ({str(exc).splitlines()[0]})") from None
        try:
            return Prior.from_spec(spec)
        except ValueError as exc:
            raise CortexError(f"--prior {prior_path}: {exc}") from None
    if task:
        return get_task(task).prior
    return None


def _prior_from_artifact(art):
    from cortexkit.tools.npe.priors import Prior

    spec = art.meta_json("npe.prior")
    return Prior.from_spec(spec) if spec else None


def _simulator_spec(task, fidelity, simulator, simulator_cmd, required=True):
    from cortexkit.tools.npe.simulation import SimulatorSpec
    from cortexkit.tools.npe.tasks import get_task

    given = [s for s in (simulator, simulator_cmd) if s]
    if len(given) > 1:
        raise CortexError("give one of --simulator and --simulator-cmd, not both")
    if simulator:
        return SimulatorSpec("callable", simulator)
    if simulator_cmd:
        return SimulatorSpec("command", simulator_cmd)
    if task:
        get_task(task).simulator(fidelity)  # validates the fidelity
        return SimulatorSpec("task", task, fidelity)
    if required:
        raise CortexError("no simulator: give --task NAME, --simulator MODULE:FUNCTION or --simulator-cmd 'CMD'")
    return None


def _encode_theta(theta):
    from cortexkit.formats.artifact import build_metadata, encode

    return encode({"theta": theta.float().contiguous()}, build_metadata(THETA_KIND, producer="cortexkit simulate-npe"))


def _decode_x(data):
    from cortexkit.formats.artifact import decode

    return decode(data, "<simulator stdout>", framework="pt").tensor("x")


def _read_sims(run, path, what, prior=None):
    """(theta, x, artifact) from a simulations file; checks shapes, finiteness and the prior."""
    import torch

    art = run.read_artifact(path)
    if art.kind not in (None, SIM_KIND):
        raise CortexError(f"{art.source}: expected an '{SIM_KIND}' artifact (or a safetensors with theta and x), got '{art.kind}'")
    theta, x = art.tensor("theta").float(), art.tensor("x").float()
    if theta.dim() == 1:
        theta = theta[:, None]
    if theta.dim() != 2 or x.dim() != 2 or theta.shape[0] != x.shape[0]:
        raise CortexError(f"{art.source}: theta {tuple(theta.shape)} and x {tuple(x.shape)} must be (n, d) and (n, x_dim) with the same n")
    if theta.shape[0] < 2:
        raise CortexError(f"{art.source}: {what} holds {theta.shape[0]} simulations; at least 2 are needed")
    bad = ~torch.isfinite(x).all(1)
    if bad.any():
        raise CortexError(f"{art.source}: {what} simulation {int(bad.nonzero()[0])} has non-finite x; drop invalid rows first")
    if prior is not None:
        _check_in_prior(art.source, theta, prior, f"{what} simulation")
    return theta, x, art


def _check_in_prior(source: str, theta, prior, row: str) -> None:
    """theta (n, d) must have the prior's dimension and lie in its support (error names the row)."""
    if theta.shape[1] != prior.dim:
        raise CortexError(f"{source}: theta has {theta.shape[1]} columns but the prior has {prior.dim} "
                          f"parameters ({', '.join(prior.names)})")
    inside = prior.in_support(theta)
    if not inside.all():
        i = int((~inside).nonzero()[0])
        raise CortexError(f"{source}: {row} {i} has theta {[round(v, 6) for v in theta[i].tolist()]} "
                          "outside the prior")


def _read_observations(run, path, observation=None, x_dim=None):
    art = run.read_artifact(path)
    x_o = art.tensor("x_o", "x").float()
    if x_o.dim() == 1:
        x_o = x_o[None]
    if x_o.dim() != 2:
        raise CortexError(f"{art.source}: observations must be (n_obs, x_dim) or (x_dim,), got {tuple(x_o.shape)}")
    if x_dim is not None and x_o.shape[1] != x_dim:
        raise CortexError(f"{art.source}: observations have {x_o.shape[1]} dimensions but the posterior was trained on x of dimension {x_dim}")
    if observation is not None:
        if not 0 <= observation < x_o.shape[0]:
            raise CortexError(f"{art.source}: --observation {observation} out of range (the file holds {x_o.shape[0]} observations, 0-based)")
        return x_o[observation:observation + 1], art
    return x_o, art


def _read_posterior(run, path):
    from cortexkit.tools.npe.io import posterior_from

    art = run.read_artifact(path, POSTERIOR_KIND, max_version=1)
    meta = {k: art.meta_json(k) for k in ("npe.prior", "npe.flow", "npe.x_dim", "npe.members")}
    return posterior_from(art.tensors, meta), art


def _parse_shard(shard):
    if not shard:
        return 0, 1
    try:
        i, n = (int(v) for v in shard.split("/"))
    except ValueError:
        raise CortexError(f"--shard {shard!r}: expected i/N, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise CortexError(f"--shard {shard}: need 0 <= i < N")
    return i, n


# ---------------------------------------------------------------------------------------------
# simulate / merge

def _partial_target(run, partial):
    """Where finished simulations go when a run fails: --partial, else OUTPUT.partial."""
    if partial:
        return partial
    return f"{run.output}.partial" if run.output not in (None, "-") else "simulate-npe.partial.safetensors"


# left out of --help (shown by --help-all and the man page): the paper's hyperparameters and
# run-steering details
ADVANCED_SIMULATE = ("quantile", "truncation_samples", "chunk_size", "partial")
ADVANCED_TRAIN = ("timeout", "workers", "partial", "quantile", "truncation_samples", "ensemble", "active_fraction",
                  "candidates", "lr_pretrain", "batch_size", "validation_fraction", "patience", "clip", "max_epochs",
                  "x_stats", "transforms", "bins", "hidden", "depth", "embedding", "embedding_dim")


@verb(group, "simulate", output="artifact", torch_options=True, advanced=ADVANCED_SIMULATE)
@click.option("--task", help="Built-in task: ou, slcp, sir, two_moons, gaussian_linear (gives prior and simulator).")
@click.option("--fidelity", type=click.Choice(["hf", "lf"]), default="hf", show_default=True, help="Which simulator of the task.")
@click.option("--simulator", metavar="MODULE:FUNCTION", help="A Python function theta (n, d) -> x (n, x_dim).")
@click.option("--simulator-cmd", metavar="CMD", help="External program: theta artifact on stdin, x artifact on stdout.")
@click.option("--prior", "prior_path", metavar="YAML", help="Prior spec (overrides the task's prior).")
@click.option("-n", "--num-simulations", type=Count(bytes_each=16, what="simulations"), help="Parameters to draw (whole run, all shards).")
@click.option("--theta", "theta_path", metavar="FILE", help="Simulate these parameters (tensor theta) instead of drawing them.")
@click.option("--proposal", metavar="POSTERIOR", help="Draw from the prior truncated by this posterior at --x-o (TSNPE round).")
@click.option("--x-o", "x_o_path", metavar="FILE", help="Observation for --proposal.")
@click.option("--observation", type=int, default=None, help="Row of --x-o to use (0-based).")
@click.option("--quantile", type=Float(0, 1, min_open=True, max_open=True), default=1e-6, show_default=True, help="Truncation quantile for --proposal.")
@click.option("--truncation-samples", type=click.IntRange(min=100), default=1_000_000, show_default=True,
              help="Posterior draws whose --quantile sets the truncation threshold.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Parallel simulator processes.")
@click.option("--shard", metavar="i/N", help="Run only shard i of N (chunk-aligned); join with merge.")
@click.option("--chunk-size", type=click.IntRange(min=1), default=1000, show_default=True, help="Simulations per simulator call.")
@click.option("--timeout", type=POSITIVE, default=None, help="Seconds one simulator call may take.")
@output_option("--partial", help="Where finished simulations go if the run fails [OUTPUT.partial].")
def simulate(run, task, fidelity, simulator, simulator_cmd, prior_path, num_simulations, theta_path, proposal,
             x_o_path, observation, quantile, truncation_samples, workers, shard, chunk_size, timeout, partial):
    """Run a simulator on parameters from the prior, a truncated proposal or a file."""
    import torch

    from cortexkit.tools.npe.methods import density_threshold, sample_truncated_prior
    from cortexkit.tools.npe.simulation import SimulationError, run_chunks

    spec = _simulator_spec(task, fidelity, simulator, simulator_cmd)
    prior = _load_prior(prior_path, task)
    post = None
    if proposal:
        post, post_art = _read_posterior(run, proposal)
        prior = prior or post.prior
        if not x_o_path and "x_o" not in post_art.tensors:
            raise CortexError("--proposal needs --x-o FILE (the observation the truncation is for)")
    shard_i, shard_n = _parse_shard(shard)
    gen = run.torch_generator()
    if theta_path:
        src = run.read_artifact(theta_path)
        theta = src.tensor("theta").float()
        if theta.dim() == 3:
            theta = theta.reshape(-1, theta.shape[-1])
        if theta.dim() == 1:
            theta = theta[:, None]
        prior = prior or _prior_from_artifact(src)
        if prior is not None:
            _check_in_prior(src.source, theta, prior, "theta row")
    else:
        if prior is None:
            raise CortexError("no prior: give --prior YAML or --task NAME (or --theta FILE)")
        if not num_simulations:
            raise CortexError("give -n/--num-simulations (or --theta FILE)")
        if post is not None:
            if x_o_path:
                x_o, _ = _read_observations(run, x_o_path, observation, post.members[0].x_dim)
                if x_o.shape[0] != 1:
                    raise CortexError(f"{x_o_path}: holds {x_o.shape[0]} observations; choose one with --observation")
                x_o = x_o[0]
            else:
                x_o = post_art.tensor("x_o").float()
            run.info(f"truncating the prior with {truncation_samples} posterior draws (quantile {quantile:g})")
            tau = density_threshold(post, x_o, quantile, truncation_samples)
            theta, rate = sample_truncated_prior(prior, post, x_o, tau, num_simulations, gen)
            run.info(f"truncated prior: log q threshold {tau:.4g}, acceptance {rate:.3g}")
        else:
            theta = prior.sample(num_simulations, gen)
    total = theta.shape[0]
    n_chunks = -(-total // chunk_size)
    chunk_ids = list(range(n_chunks * shard_i // shard_n, n_chunks * (shard_i + 1) // shard_n))
    lo = chunk_ids[0] * chunk_size if chunk_ids else 0
    hi = min(total, (chunk_ids[-1] + 1) * chunk_size) if chunk_ids else 0
    theta_shard = theta[lo:hi]
    bar = run.progress(total=len(chunk_ids), desc="simulating")

    def done(c, x):
        bar.update(1)

    meta = {"npe.simulator": spec.describe(), "npe.fidelity": spec.fidelity if spec.kind == "task" else "",
            "npe.n_requested": total, "npe.shard": f"{shard_i}/{shard_n}", "npe.chunk_size": chunk_size}
    if prior is not None:
        meta.update({"npe.prior": prior.to_spec(), "npe.parameter_names": prior.names})

    def assemble(finished):
        xs, ths, idx = [], [], []
        for c in sorted(finished):
            start = c * chunk_size
            rows = finished[c].shape[0]
            xs.append(finished[c])
            ths.append(theta[start:start + rows])
            idx.append(torch.arange(start, start + rows, dtype=torch.int64))
        if not xs:
            return None
        x, th, ix = torch.cat(xs), torch.cat(ths), torch.cat(idx)
        ok = torch.isfinite(x).all(1)
        return {"theta": th[ok].contiguous(), "x": x[ok].contiguous(), "index": ix[ok]}, int((~ok).sum())

    try:
        finished = run_chunks(spec, theta_shard, chunk_ids, chunk_size, seed=run.seed or 0, workers=workers,
                              timeout=timeout, encode=_encode_theta, decode=_decode_x, on_done=done)
    except SimulationError as err:
        bar.close()
        kept = assemble(err.finished)
        where = ""
        if kept is not None:
            target = _partial_target(run, partial)
            tensors, n_bad = kept
            run.write_artifact(tensors, SIM_KIND, metadata={**meta, "npe.n_invalid": n_bad, "npe.partial": True}, target=target, now=True)
            where = f"; the {tensors['theta'].shape[0]} finished simulations were kept in {target}"
        raise CortexError(f"{err}{where}") from None
    bar.close()
    tensors, n_bad = assemble(finished)
    if tensors["theta"].shape[0] == 0:
        raise CortexError(f"all {theta_shard.shape[0]} simulations returned NaN/inf; nothing to write")
    if n_bad:
        run.warn(f"dropped {n_bad} of {theta_shard.shape[0]} simulations with NaN/inf output")
    run.info(f"{tensors['theta'].shape[0]} simulations ({spec.describe()}), {n_bad} invalid dropped")
    run.write_artifact(tensors, SIM_KIND, metadata={**meta, "npe.n_invalid": n_bad})


@verb(group, "merge", output="artifact")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
def merge(run, files):
    """Join simulation shards (or any simulation files) into one, in run order."""
    import torch

    parts = []
    for f in files:
        art = run.read_artifact(f, SIM_KIND)
        theta, x = art.tensor("theta"), art.tensor("x")
        idx = art.tensors.get("index")
        parts.append((art, theta, x, idx))
    first = parts[0][0]
    for art, theta, x, _ in parts[1:]:
        if x.shape[1] != parts[0][2].shape[1]:
            raise CortexError(f"{art.source}: x has dimension {x.shape[1]} but {first.source} has {parts[0][2].shape[1]}")
        if theta.shape[1] != parts[0][1].shape[1]:
            raise CortexError(f"{art.source}: theta has {theta.shape[1]} columns but {first.source} has {parts[0][1].shape[1]}")
        if art.metadata.get("npe.prior") != first.metadata.get("npe.prior"):
            raise CortexError(f"{art.source}: its prior differs from {first.source}'s; shards of one run share the prior")
    have_index = all(p[3] is not None for p in parts)
    theta = torch.cat([p[1] for p in parts])
    x = torch.cat([p[2] for p in parts])
    tensors = {"theta": theta, "x": x}
    if have_index:
        index = torch.cat([p[3] for p in parts])
        order = torch.argsort(index, stable=True)
        index = index[order]
        if (index[1:] == index[:-1]).any():
            dup = int(index[1:][index[1:] == index[:-1]][0])
            raise CortexError(f"simulation {dup} appears in more than one input; merge each shard once")
        tensors = {"theta": theta[order], "x": x[order], "index": index}
    else:
        tensors["index"] = torch.arange(theta.shape[0], dtype=torch.int64)
    meta = {k: first.metadata[k] for k in ("npe.prior", "npe.parameter_names", "npe.simulator", "npe.fidelity",
                                           "npe.chunk_size") if k in first.metadata}
    meta["npe.n_invalid"] = sum(int(p[0].meta_json("npe.n_invalid", 0) or 0) for p in parts)
    meta["npe.n_requested"] = sum(int(p[0].meta_json("npe.n_requested", 0) or 0) for p in parts) if len(parts) == 1 else \
        max(int(p[0].meta_json("npe.n_requested", 0) or 0) for p in parts)
    meta["npe.merged"] = len(parts)
    run.info(f"merged {len(parts)} files: {theta.shape[0]} simulations")
    run.write_artifact(tensors, SIM_KIND, metadata=meta)


# ---------------------------------------------------------------------------------------------
# train

@verb(group, "train", output="artifact", torch_options=True, advanced=ADVANCED_TRAIN)
@click.option("--method", type=click.Choice(METHODS), required=True, help="Inference method.")
@click.option("--hf", "hf_path", metavar="FILE", help="High-fidelity simulations (amortized methods).")
@click.option("--lf", "lf_path", metavar="FILE", help="Low-fidelity simulations to pretrain on (mf-* methods).")
@click.option("--pretrained", metavar="POSTERIOR", help="Reuse an LF-pretrained npe-posterior instead of --lf.")
@click.option("--prior", "prior_path", metavar="YAML", help="Prior spec (default: the task's, or the one in --hf/--lf).")
@click.option("--task", help="Built-in task: its prior, and its HF simulator for sequential methods.")
@click.option("--simulator", metavar="MODULE:FUNCTION", help="HF simulator for sequential methods.")
@click.option("--simulator-cmd", metavar="CMD", help="External HF simulator for sequential methods.")
@click.option("--timeout", type=POSITIVE, default=None, help="Seconds one simulator call may take.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Parallel simulator processes.")
@output_option("--partial", help="Where finished HF simulations go if a round's simulator fails [OUTPUT.partial].")
@click.option("--x-o", "x_o_path", metavar="FILE", help="Observation(s) for sequential methods.")
@click.option("--observation", type=int, default=None, help="Row of --x-o (0-based) for sequential methods.")
@click.option("--hf-budget", type=click.IntRange(min=2), help="HF simulations in total over all rounds (sequential).")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True,
              help="Sequential rounds; each simulates --hf-budget / rounds.")
@click.option("--quantile", type=Float(0, 1, min_open=True, max_open=True), default=1e-6, show_default=True, help="Truncation quantile.")
@click.option("--truncation-samples", type=click.IntRange(min=100), default=1_000_000, show_default=True,
              help="Posterior draws whose --quantile sets the truncation threshold.")
@click.option("--ensemble", type=click.IntRange(min=0), default=0, help="Ensemble members (0: 5 for a-mf-tsnpe, else 1).")
@click.option("--active-fraction", type=UNIT, default=None, help="Share of acquired parameters per round [0.2 for a-mf-tsnpe].")
@click.option("--candidates", type=click.IntRange(min=0), default=0, help="Acquisition candidates (0: 250/2500/25000 by budget).")
@click.option("--lr", type=POSITIVE, default=5e-4, show_default=True, help="Learning rate on HF data (npe, fine-tuning).")
@click.option("--lr-pretrain", type=POSITIVE, default=1e-4, show_default=True, help="Learning rate on LF data.")
@click.option("--batch-size", type=click.IntRange(min=1), default=200, show_default=True, help="Minibatch size, capped at the training-set size.")
@click.option("--validation-fraction", type=Float(0, 1, min_open=True, max_open=True), default=0.1, show_default=True,
              help="Held out for early stopping.")
@click.option("--patience", type=click.IntRange(min=1), default=20, show_default=True,
              help="Epochs without validation improvement before stopping.")
@click.option("--clip", type=POSITIVE, default=5.0, show_default=True, help="Gradient norm clip.")
@click.option("--max-epochs", type=click.IntRange(min=1), default=None, help="Hard cap on epochs [none].")
@click.option("--x-stats", type=click.Choice(["auto", "refit", "keep"]), default="auto", show_default=True,
              help="x z-score when fine-tuning: refit on HF (mf-npe) or keep LF's (mf-tsnpe); auto = the paper's.")
@click.option("--transforms", type=click.IntRange(min=1), default=5, show_default=True,
              help="Autoregressive spline transforms in the flow.")
@click.option("--bins", type=click.IntRange(min=2), default=8, show_default=True, help="Spline bins per transform.")
@click.option("--hidden", type=click.IntRange(min=1), default=50, show_default=True, help="Units per conditioner layer.")
@click.option("--depth", type=click.IntRange(min=1), default=5, show_default=True, help="Hidden layers per conditioner.")
@click.option("--embedding", type=click.Choice(["identity", "mlp"]), default="identity", show_default=True,
              help="Net applied to standardised x before the flow (mlp: x_dim-50-out, trained with it).")
@click.option("--embedding-dim", type=click.IntRange(min=0), default=0, help="Output size of the mlp embedding [x_dim].")
def train(run, method, hf_path, lf_path, pretrained, prior_path, task, simulator, simulator_cmd, timeout, workers,
          partial, x_o_path, observation, hf_budget, rounds, quantile, truncation_samples, ensemble, active_fraction,
          candidates, lr, lr_pretrain, batch_size, validation_fraction, patience, clip, max_epochs, x_stats,
          transforms, bins, hidden, depth, embedding, embedding_dim):
    """Train a posterior estimator (npe, mf-npe, tsnpe, mf-tsnpe, a-mf-tsnpe) -> npe-posterior."""
    import math

    import torch

    from cortexkit.tools.npe import methods as M
    from cortexkit.tools.npe.estimator import EnsemblePosterior, FlowConfig
    from cortexkit.tools.npe.io import posterior_metadata, posterior_tensors
    from cortexkit.tools.npe.simulation import SimulationError, run_chunks
    from cortexkit.tools.npe.training import TrainConfig

    flow_cfg = FlowConfig(transforms, bins, hidden, depth, embedding, embedding_dim)
    base = TrainConfig(lr=lr, batch_size=batch_size, validation_fraction=validation_fraction, patience=patience,
                       clip=clip, max_epochs=max_epochs or 2**31 - 1)
    seed = run.seed or 0
    sequential = method in SEQUENTIAL
    multifidelity = method.startswith("mf-") or method.startswith("a-mf-")

    # ---- check every input before any work
    prior = _load_prior(prior_path, task)
    pre = None
    if pretrained:
        pre_post, pre_art = _read_posterior(run, pretrained)
        pre = pre_post.members[0]
        if prior is not None and prior.to_spec() != pre.prior.to_spec():
            raise CortexError(f"{pretrained}: its prior differs from the one given")
        prior = prior or pre.prior
    if multifidelity and not (lf_path or pre is not None):
        raise CortexError(f"--method {method} needs --lf FILE (low-fidelity simulations) or --pretrained POSTERIOR")
    if not multifidelity and (lf_path or pretrained):
        raise CortexError(f"--method {method} uses HF data only; drop --lf/--pretrained or use mf-{method}")
    lf = hf = None
    if lf_path and pre is None:
        if prior is None:
            art = run.read_artifact(lf_path)
            prior = _prior_from_artifact(art)
        if prior is None:
            raise CortexError("no prior: give --prior YAML or --task NAME")
        lf = _read_sims(run, lf_path, "LF", prior)
    if not sequential:
        if not hf_path:
            raise CortexError(f"--method {method} needs --hf FILE (high-fidelity simulations)")
        if prior is None:
            prior = _prior_from_artifact(run.read_artifact(hf_path))
        if prior is None:
            raise CortexError("no prior: give --prior YAML or --task NAME")
        hf = _read_sims(run, hf_path, "HF", prior)
        ref_dim = lf[1].shape[1] if lf is not None else (pre.x_dim if pre is not None else None)
        if ref_dim is not None and ref_dim != hf[1].shape[1]:
            src = lf_path if lf is not None else pretrained
            raise CortexError(f"LF x ({src}) has dimension {ref_dim} but HF x ({hf_path}) has {hf[1].shape[1]}; "
                              "both fidelities must share the x-space")
    else:
        if prior is None:
            raise CortexError("no prior: give --prior YAML or --task NAME")
        if hf_path:
            raise CortexError(f"--method {method} simulates HF data in its rounds; give a simulator, not --hf")
        spec = _simulator_spec(task, "hf", simulator, simulator_cmd)
        if not x_o_path:
            raise CortexError(f"--method {method} is trained for one observation: give --x-o FILE")
        if not hf_budget:
            raise CortexError(f"--method {method} needs --hf-budget N (HF simulations over all rounds)")
        ref_dim = lf[1].shape[1] if lf is not None else (pre.x_dim if pre is not None else None)
        x_o_all, _ = _read_observations(run, x_o_path, observation, ref_dim)
        if x_o_all.shape[0] != 1:
            raise CortexError(f"{x_o_path}: holds {x_o_all.shape[0]} observations; choose one with --observation i")
        x_o = x_o_all[0]
        try:
            M.round_sizes(hf_budget, rounds, 0.0)
        except ValueError as exc:
            raise CortexError(str(exc)) from None
        n_members = ensemble or (5 if method == "a-mf-tsnpe" else 1)
        active = active_fraction if active_fraction is not None else (0.2 if method == "a-mf-tsnpe" else 0.0)
        if active > 0 and n_members < 2:
            raise CortexError("acquisition (--active-fraction > 0) needs --ensemble of at least 2")

    def on_epoch(epoch, tr, val):
        run.detail(f"epoch {epoch}: train {tr:.4f} validation {val:.4f}")

    history = {}
    extra_tensors = {}
    # ---- pretraining (multifidelity)
    if multifidelity and pre is None:
        run.info(f"pretraining on {lf[0].shape[0]} LF simulations (lr {lr_pretrain:g})")
        pre, h = M.fit_npe(prior, lf[0], lf[1], flow_cfg, M._with_lr(base, lr_pretrain), seed, on_epoch)
        history["pretrain"] = h.summary()
        run.info(f"pretraining: {h.epochs} epochs, best validation NLL {h.best_val_loss:.4f}")
    refit = {"auto": method == "mf-npe", "refit": True, "keep": False}[x_stats]

    if method == "npe":
        model, h = M.fit_npe(prior, hf[0], hf[1], flow_cfg, base, seed, on_epoch)
        history["train"] = h.summary()
        posterior = EnsemblePosterior([model])
        run.info(f"NPE: {h.epochs} epochs, best validation NLL {h.best_val_loss:.4f}")
    elif method == "mf-npe":
        model, h = M.fine_tune(pre, hf[0], hf[1], base, seed, refit, on_epoch)
        history["finetune"] = h.summary()
        posterior = EnsemblePosterior([model])
        run.info(f"fine-tuning: {h.epochs} epochs, best validation NLL {h.best_val_loss:.4f}")
    else:
        sim_calls = [0]
        finished = []  # (theta, x) of every round whose simulations came back

        def hf_simulator(theta):
            # every round is its own block of chunks so the seeds never repeat between rounds
            chunk = max(1, theta.shape[0])
            block = 1_000_003 * (sim_calls[0] + 1)
            sim_calls[0] += 1
            try:
                out = run_chunks(spec, theta, [block], chunk, seed=seed, workers=1, timeout=timeout,
                                 encode=_encode_theta, decode=_decode_x,
                                 first_index=sum(t.shape[0] for t, _ in finished))
            except SimulationError as err:
                raise CortexError(f"round {sim_calls[0]}: {err}") from None
            x = out[block]
            if x.shape[1] != x_o.shape[0]:
                raise CortexError(f"round {sim_calls[0]}: the HF simulator returns x of dimension {x.shape[1]} "
                                  f"but the observation has {x_o.shape[0]}")
            finished.append((theta, x))
            return x

        def on_round(r, rec):
            run.info(f"round {r + 1}/{rounds}: {rec.theta.shape[0]} HF simulations ({int(rec.acquired.sum())} acquired, "
                     f"{rec.n_invalid} invalid), proposal acceptance {rec.acceptance:.3g}, "
                     f"epochs {[t['epochs'] for t in rec.train]}")

        try:
            posterior, records = M.run_sequential(
                prior, hf_simulator, x_o, hf_budget, pretrained=pre if multifidelity else None, flow_cfg=flow_cfg,
                ensemble_size=n_members, active_fraction=active, rounds=rounds, quantile=quantile,
                truncation_samples=truncation_samples, candidates=candidates or None, train_cfg=base, seed=seed,
                refit_x_stats=refit, on_round=on_round, on_epoch=on_epoch)
        except CortexError as err:
            if not finished:
                raise
            theta = torch.cat([t for t, _ in finished])
            x = torch.cat([v for _, v in finished])
            ok = torch.isfinite(x).all(1)
            rnd = torch.cat([torch.full((t.shape[0],), i, dtype=torch.int64) for i, (t, _) in enumerate(finished)])
            target = _partial_target(run, partial)
            run.write_artifact({"theta": theta[ok].contiguous(), "x": x[ok].contiguous(),
                                "index": torch.arange(theta.shape[0], dtype=torch.int64)[ok], "round": rnd[ok]},
                               SIM_KIND, metadata={"npe.simulator": spec.describe(), "npe.fidelity": "hf",
                                                   "npe.prior": prior.to_spec(), "npe.parameter_names": prior.names,
                                                   "npe.n_invalid": int((~ok).sum()), "npe.partial": True},
                               target=target, now=True)
            raise CortexError(f"{err}; the {int(ok.sum())} HF simulations of the {len(finished)} finished "
                              f"round(s) were kept in {target}") from None
        history["rounds"] = [{"n": int(r.theta.shape[0]), "acquired": int(r.acquired.sum()), "invalid": r.n_invalid,
                              "acceptance": r.acceptance, "tau": None if math.isnan(r.tau) else r.tau,
                              "train": r.train} for r in records]
        extra_tensors = {
            "x_o": x_o.clone(),
            "rounds.theta": torch.cat([r.theta for r in records]),
            "rounds.x": torch.cat([r.x for r in records]),
            "rounds.round": torch.cat([torch.full((r.theta.shape[0],), i, dtype=torch.int64) for i, r in enumerate(records)]),
            "rounds.acquired": torch.cat([r.acquired for r in records]),
            "rounds.tau": torch.tensor([r.tau for r in records], dtype=torch.float64),
        }
    tensors = {**posterior_tensors(posterior), **extra_tensors}
    meta = {**posterior_metadata(posterior), "npe.method": method, "npe.history": history}
    run.write_artifact(tensors, POSTERIOR_KIND, metadata=meta)


# ---------------------------------------------------------------------------------------------
# sample / score

@verb(group, "sample", output="artifact", torch_options=True)
@click.argument("posterior_path", metavar="POSTERIOR|-")
@click.option("--x-o", "x_o_path", metavar="FILE", help="Observations (tensor x_o or x); default: the posterior's own x_o.")
@click.option("--observation", type=int, default=None, help="Use only this row of --x-o (0-based).")
@click.option("-n", "--num-samples", type=Count(bytes_each=8, what="posterior samples"), default=1000, show_default=True)
def sample(run, posterior_path, x_o_path, observation, num_samples):
    """Posterior samples theta ~ q(theta | x_o) for one or many observations -> npe-samples."""
    import torch

    post, art = _read_posterior(run, posterior_path)
    if x_o_path:
        x_o, _ = _read_observations(run, x_o_path, observation, post.members[0].x_dim)
    elif "x_o" in art.tensors:
        x_o = art.tensor("x_o").float()[None]
    else:
        raise CortexError("give --x-o FILE: this posterior is amortized and holds no observation")
    gen = run.torch_generator()
    out = torch.empty(x_o.shape[0], num_samples, post.prior.dim)
    for i in run.progress(range(x_o.shape[0]), desc="sampling"):
        out[i] = post.sample(num_samples, x_o[i], generator=gen)
    run.write_artifact({"theta": out, "x_o": x_o}, SAMPLES_KIND,
                       metadata={"npe.parameter_names": post.prior.names, "npe.prior": post.prior.to_spec()})


@verb(group, "score", output="artifact", torch_options=True)
@click.argument("posterior_path", metavar="POSTERIOR")
@click.argument("data_path", metavar="DATA|-")
def score(run, posterior_path, data_path):
    """log q(theta | x) for the (theta, x) pairs of DATA (simulations) or of npe-samples -> npe-log-prob."""
    import torch

    post, _ = _read_posterior(run, posterior_path)
    art = run.read_artifact(data_path)
    theta = art.tensor("theta").float()
    x_dim = post.members[0].x_dim
    if art.kind == SAMPLES_KIND or theta.dim() == 3:
        x_o = art.tensor("x_o").float()
        if x_o.shape[-1] != x_dim:
            raise CortexError(f"{art.source}: x_o has dimension {x_o.shape[-1]}, the posterior expects {x_dim}")
        out = torch.stack([post.log_prob(theta[i], x_o[i]) for i in range(theta.shape[0])])
    else:
        x = art.tensor("x").float()
        if x.dim() != 2 or x.shape[1] != x_dim:
            raise CortexError(f"{art.source}: x has shape {tuple(x.shape)}, the posterior expects (n, {x_dim})")
        if theta.shape[-1] != post.prior.dim or theta.shape[0] != x.shape[0]:
            raise CortexError(f"{art.source}: theta {tuple(theta.shape)} does not pair with x {tuple(x.shape)} for a {post.prior.dim}-parameter prior")
        out = torch.cat([post.log_prob(theta[i:i + 4096], x[i:i + 4096]) for i in range(0, theta.shape[0], 4096)])
    with torch.no_grad():
        out = out.detach().float()
    outside = ~post.prior.in_support(theta.reshape(-1, theta.shape[-1])).reshape(out.shape)
    out[outside] = float("-inf")
    if outside.any():
        run.warn(f"{int(outside.sum())} parameter vectors lie outside the prior (log q = -inf)")
    finite = out[torch.isfinite(out)]
    run.info(f"mean log q(theta | x) = {finite.mean().item():.4f} over {finite.numel()} pairs")
    run.write_artifact({"log_prob": out}, LOGPROB_KIND)


# ---------------------------------------------------------------------------------------------
# evaluate

@verb(group, "evaluate", output="report", torch_options=True)
@click.argument("samples_path", metavar="[SAMPLES|-]", required=False)
@click.option("--reference", metavar="FILE", help="Reference posterior samples (reference_posterior_samples or theta).")
@click.option("--metrics", default="rf-c2st,mmd", show_default=True, help="Comma list of rf-c2st, mlp-c2st, mmd.")
@click.option("--max-samples", type=click.IntRange(min=10), default=None, help="Use at most this many samples of each set.")
@click.option("--posterior", "posterior_path", metavar="POSTERIOR", help="For NLTP (with --x-o) or SBC (with --sbc).")
@click.option("--x-o", "x_o_path", metavar="FILE", help="Observations with theta_o/theta_true, for NLTP.")
@click.option("--sbc", "sbc_path", metavar="FILE", help="Simulations (theta, x) for simulation-based calibration.")
@click.option("--sbc-samples", type=click.IntRange(min=10), default=100, show_default=True, help="Posterior draws per SBC pair.")
@output_option("--plot", metavar="PNG", help="Pair plot of SAMPLES vs reference (--observation K, default 0), "
              "else SBC rank histograms (needs matplotlib).")
@click.option("--observation", type=int, default=None, help="Evaluate (and plot) only this row of SAMPLES (0-based).")
def evaluate(run, samples_path, reference, metrics, max_samples, posterior_path, x_o_path, sbc_path, sbc_samples,
             plot, observation):
    """Posterior quality: C2ST (random forest, MLP), MMD against reference samples; NLTP; SBC."""
    import torch

    from cortexkit.tools.npe import metrics as Q

    wanted = [m.strip() for m in metrics.split(",") if m.strip()]
    bad = [m for m in wanted if m not in ("rf-c2st", "mlp-c2st", "mmd")]
    if bad:
        raise CortexError(f"--metrics: unknown {', '.join(bad)}; use rf-c2st, mlp-c2st, mmd")
    if not (samples_path or posterior_path):
        raise CortexError("nothing to evaluate: give SAMPLES with --reference, or --posterior with --x-o or --sbc")
    if samples_path and not reference:
        raise CortexError("SAMPLES need --reference FILE (reference posterior samples)")
    if (x_o_path or sbc_path) and not posterior_path:
        raise CortexError("--x-o (NLTP) and --sbc need --posterior POSTERIOR")
    if posterior_path and not (x_o_path or sbc_path):
        raise CortexError("--posterior needs --x-o FILE (NLTP) or --sbc FILE (calibration)")
    if plot is not None:
        if not (samples_path or sbc_path):
            raise CortexError("--plot draws SAMPLES against --reference, or SBC ranks (--sbc): give one of them")
        require_matplotlib()
    if observation is not None and not samples_path:
        raise CortexError("--observation selects a row of SAMPLES: give SAMPLES")
    if "mlp-c2st" in wanted or "rf-c2st" in wanted:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            raise CortexError("C2ST needs scikit-learn: pip install 'cortexkit[npe]'") from None
    report = {}
    if samples_path:
        art = run.read_artifact(samples_path)
        ours = art.tensor("theta").float()
        ref_art = run.read_artifact(reference)
        ref = ref_art.tensor("reference_posterior_samples", "theta").float()
        if ours.dim() == 2:
            ours = ours[None]
        if ref.dim() == 2:
            ref = ref[None]
        if ours.shape[0] != ref.shape[0] or ours.shape[2] != ref.shape[2]:
            raise CortexError(f"samples {tuple(ours.shape)} and reference {tuple(ref.shape)} must both be "
                              "(n_obs, n, d) with the same n_obs and d")
        if max_samples:
            ours, ref = ours[:, :max_samples], ref[:, :max_samples]
        rows = range(ours.shape[0])
        if observation is not None:
            if not 0 <= observation < ours.shape[0]:
                raise CortexError(f"--observation {observation}: SAMPLES hold {ours.shape[0]} observations")
            rows = [observation]
        per = []
        for i in run.progress(rows, desc="evaluating"):
            row = {"observation": i}
            if "rf-c2st" in wanted:
                row["rf_c2st"] = Q.c2st(ours[i], ref[i], "rf")
            if "mlp-c2st" in wanted:
                row["mlp_c2st"] = Q.c2st(ours[i], ref[i], "mlp")
            if "mmd" in wanted:
                row["mmd"] = Q.mmd2(ours[i], ref[i], generator=run.torch_generator())
            per.append(row)
        report["samples"] = {"n_observations": len(rows), "n_samples": ours.shape[1], "n_reference": ref.shape[1]}
        report["summary"] = {k: Q.mean_ci95([r[k] for r in per]) for k in per[0] if k != "observation"}
        report["per_observation"] = per
    if posterior_path:
        post, _ = _read_posterior(run, posterior_path)
        x_dim = post.members[0].x_dim
        if x_o_path:
            x_o, obs_art = _read_observations(run, x_o_path, None, x_dim)
            theta_o = obs_art.tensors.get("theta_o", obs_art.tensors.get("theta_true"))
            if theta_o is None:
                raise CortexError(f"{obs_art.source}: NLTP needs the true parameters (tensor theta_o or theta_true)")
            theta_o = theta_o.float().reshape(x_o.shape[0], -1)
            with torch.no_grad():
                lp = post.log_prob(theta_o, x_o)
            report["nltp"] = {**Q.mean_ci95((-lp).tolist()), "per_observation": (-lp).tolist()}
        if sbc_path:
            theta, x, _ = _read_sims(run, sbc_path, "SBC", post.prior)
            if x.shape[1] != x_dim:
                raise CortexError(f"{sbc_path}: x has dimension {x.shape[1]}, the posterior expects {x_dim}")
            gen = run.torch_generator()
            samples = torch.empty(theta.shape[0], sbc_samples, post.prior.dim)
            lq_s = torch.empty(theta.shape[0], sbc_samples)
            with torch.no_grad():
                for i in run.progress(range(theta.shape[0]), desc="SBC"):
                    samples[i] = post.sample(sbc_samples, x[i], generator=gen)
                    lq_s[i] = post.log_prob(samples[i], x[i])
                lq_true = torch.cat([post.log_prob(theta[i:i + 4096], x[i:i + 4096]) for i in range(0, theta.shape[0], 4096)])
            ranks = Q.sbc_ranks(theta, samples)
            report["sbc"] = {"n_pairs": theta.shape[0], "n_samples": sbc_samples,
                             "parameters": Q.sbc_summary(ranks, sbc_samples, post.prior.names),
                             "hpd_coverage": Q.expected_coverage(lq_true, lq_s)}
    if plot is not None:
        from cortexkit.tools.npe import plots

        if samples_path:
            k = rows[0]
            names = art.meta_json("npe.parameter_names") or [f"theta_{j + 1}" for j in range(ours.shape[2])]
            title = f"observation {k}" + (f": RF-C2ST {per[0]['rf_c2st']:.3f}" if "rf_c2st" in per[0] else "")
            with run.output_file(plot) as tmp:
                plots.pair_plot(tmp, ours[k], ref[k], names, title)
        else:
            with run.output_file(plot) as tmp:
                plots.sbc_plot(tmp, ranks, sbc_samples, post.prior.names)
        report["plot"] = str(plot)
    run.write_report(report)

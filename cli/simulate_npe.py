"""cortexkit simulate-npe: multifidelity neural posterior estimation for costly simulators."""

from __future__ import annotations

import contextlib

import click

from cortexkit.cli.base import output_option, require_matplotlib, tool_group, verb
from cortexkit.cli.options import POSITIVE, Count, UNIT, Float, Size
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

# ---------------------------------------------------------------------------------------------
# helpers (torch and the method imported lazily: --help stays fast)

def _read_posterior(run, path):
    from cortexkit.tools.npe.io import posterior_from_artifact

    art = run.read_artifact(path, POSTERIOR_KIND, max_version=1)
    return posterior_from_artifact(art), art


def _read_observations(run, path, observation=None, x_dim=None):
    from cortexkit.tools.npe.io import observations_from

    return observations_from(run.read_artifact(path), observation, x_dim)


def _partial_target(run, partial):
    """Where finished simulations go when a run fails: --partial, else OUTPUT.partial."""
    if partial:
        return partial
    return f"{run.output}.partial" if run.output not in (None, "-") else "simulate-npe.partial.safetensors"


def _keep_partial(run, partial, failure, stop=None):
    """Write the simulations a failed run finished (if any) and fail with one line saying where.
    A run stopped by Ctrl-C or SIGTERM (``stop``) says where on a line of its own, then stops."""
    if failure.tensors is None:
        raise CortexError(str(failure)) from None
    target = _partial_target(run, partial)
    run.write_artifact(failure.tensors, SIM_KIND, metadata=failure.metadata, target=target, now=True)
    if stop is not None:
        run.warn(f"{failure}: {failure.kept} were kept in {target}; finish with --resume {target}")
        raise stop
    raise CortexError(f"{failure}; {failure.kept} were kept in {target}") from None


# ---------------------------------------------------------------------------------------------
# simulate / merge

# the HF fits' patience in gradient steps (tools.npe.training.PATIENCE_STEPS; RESULTS.md stop 44)
PATIENCE_STEPS = 1800  # 40 epochs at 10^4 simulations, 60 (--patience) up to ~6,800 (RESULTS.md stop 44)

# left out of --help (shown by --help-all and the man page): the paper's hyperparameters and
# run-steering details
ADVANCED_SIMULATE = ("quantile", "truncation_samples", "chunk_size", "partial", "resume_path")
ADVANCED_TRAIN = ("timeout", "workers", "partial", "quantile", "truncation_samples", "ensemble", "active_fraction",
                  "candidates", "lr_pretrain", "patience_pretrain", "batch_size", "validation_fraction", "patience", "patience_steps", "clip", "max_epochs",
                  "x_stats", "transforms", "bins", "hidden", "depth", "embedding", "embedding_dim", "theta_map",
                  "lognormal_map")


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
@click.option("--truncation-samples", type=Size(min=100, bytes=16, what='prior draws'), default=1_000_000, show_default=True,
              help="Posterior draws whose --quantile sets the truncation threshold.")
@click.option("--workers", type=Size(min=1, max=1024, bytes=0, what='processes'), default=1, show_default=True, help="Parallel simulator processes.")
@click.option("--shard", metavar="i/N", help="Run only shard i of N (its share of the rows); join the N files with merge.")
@click.option("--scheduler", metavar="ADDRESS", help="Run the chunks as tasks on this Dask distributed scheduler "
              "(tcp://host:8786; needs cortexkit[dist]).")
@click.option("--resume", "resume_path", metavar="PARTIAL", help="Finish the run whose partial file this is: "
              "simulate only the rows it lacks (same options as the failed run).")
@click.option("--chunk-size", type=Size(min=1, bytes=16, what='simulations per call'), default=1000, show_default=True, help="Simulations per simulator call.")
@click.option("--timeout", type=POSITIVE, default=None, help="Seconds one simulator call may take.")
@output_option("--partial", help="Where finished simulations go if the run fails [OUTPUT.partial].")
def simulate(run, task, fidelity, simulator, simulator_cmd, prior_path, num_simulations, theta_path, proposal,
             x_o_path, observation, quantile, truncation_samples, workers, shard, scheduler, resume_path, chunk_size,
             timeout, partial):
    """Run a simulator on parameters from the prior, a truncated proposal or a file."""
    from cortexkit.tools import npe

    spec = npe.simulator_spec(task, fidelity, simulator, simulator_cmd)
    if scheduler and workers > 1:
        raise CortexError("give --workers or --scheduler, not both: with --scheduler the cluster's workers run the chunks")
    config = npe.SimulateConfig(chunk_size, workers, timeout, npe.parse_shard(shard), run.seed or 0,
                                scheduler=scheduler)
    theta, prior = _parameters(run, task, prior_path, proposal, theta_path, x_o_path, observation, num_simulations,
                               quantile, truncation_samples)
    resume = run.read_artifact(resume_path, SIM_KIND) if resume_path else None
    try:
        result = npe.simulate(spec, theta, config, prior, log=run, resume=resume)
    except npe.PartialFailure as failure:
        _keep_partial(run, partial, failure)
    except BaseException as stop:  # Ctrl-C, SIGTERM (a Slurm time limit): keep what finished
        if getattr(stop, "partial", None) is None:
            raise
        _keep_partial(run, partial, stop.partial, stop)
    run.write_artifact(result.tensors, SIM_KIND, metadata=result.metadata)


def _parameters(run, task, prior_path, proposal, theta_path, x_o_path, observation, num_simulations, quantile,
                truncation_samples):
    """(theta, prior) of a simulate run: --theta's rows (checked against the prior), else draws from the
    prior or from a --proposal posterior truncated at its observation."""
    from cortexkit.tools import npe
    from cortexkit.tools.npe import io as npe_io

    prior = npe_io.read_prior(prior_path, task)
    post = post_art = None
    if proposal:
        post, post_art = _read_posterior(run, proposal)
        prior = prior or post.prior
        if not x_o_path and "x_o" not in post_art.tensors:
            raise CortexError("--proposal needs --x-o FILE (the observation the truncation is for)")
    if theta_path:
        src = run.read_artifact(theta_path)
        theta = npe_io.theta_from_artifact(src)
        prior = prior or npe_io.prior_from_artifact(src)
        if prior is not None:
            npe_io.check_in_prior(src.source, theta, prior, "theta row")
        return theta, prior
    proposal_x_o = post is not None and num_simulations  # (without -n, draw_parameters says so first)
    x_o = _proposal_observation(run, post, post_art, x_o_path, observation) if proposal_x_o else None
    return npe.draw_parameters(prior, num_simulations, run.torch_generator(), posterior=post, x_o=x_o,
                               quantile=quantile, truncation_samples=truncation_samples, log=run), prior


def _proposal_observation(run, post, post_art, x_o_path, observation):
    """The one observation (x_dim,) a --proposal truncation is for: --x-o's row, else the posterior's own."""
    if not x_o_path:
        return post_art.tensor("x_o").float()
    x_o = _read_observations(run, x_o_path, observation, post.members[0].x_dim)
    if x_o.shape[0] != 1:
        raise CortexError(f"{x_o_path}: holds {x_o.shape[0]} observations; choose one with --observation")
    return x_o[0]

@verb(group, "merge", output="artifact")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--allow-partial", is_flag=True, help="Join an incomplete set of shards (or partial files) and say "
              "what is missing; the result is marked partial.")
def merge(run, files, allow_partial):
    """Join the shards of one run into what the unsharded run writes (refuses a set that is incomplete,
    repeats a shard or mixes runs); plain simulation files are joined in order."""
    from cortexkit.tools import npe

    result = npe.merge([run.read_artifact(f, SIM_KIND) for f in files], log=run, allow_partial=allow_partial)
    run.write_artifact(result.tensors, SIM_KIND, metadata=result.metadata)


# ---------------------------------------------------------------------------------------------
# train

def _resolve_baseline(ctx, param, value):
    """--baseline unset -> npe for mf-npe (plain NPE on the HF data is what a user tries first),
    none for the rest; --method is declared first, so click has processed it."""
    if value is not None:
        return value
    return "npe" if ctx.params.get("method") == "mf-npe" else "none"

@verb(group, "train", output="artifact", torch_options=True, advanced=ADVANCED_TRAIN)
@click.option("--method", type=click.Choice(METHODS), required=True, help="Inference method.")
@click.option("--baseline", type=click.Choice(["npe", "none"]), default=None, callback=_resolve_baseline,
              help="First-try baseline fitted beside the method on the same HF simulations and validation split; "
                   "both held-out losses are printed and a warning says when the method loses "
                   "[default: npe for mf-npe, none for the others].")
@click.option("--hf", "hf_path", metavar="FILE", help="High-fidelity simulations (amortized methods).")
@click.option("--lf", "lf_path", metavar="FILE", help="Low-fidelity simulations to pretrain on (mf-* methods).")
@click.option("--pretrained", metavar="POSTERIOR", help="Reuse an LF-pretrained npe-posterior instead of --lf: what "
              "'train --method npe --hf LF --lr 1e-4 --patience=20' writes.")
@click.option("--prior", "prior_path", metavar="YAML", help="Prior spec (default: the task's, or the one in --hf/--lf).")
@click.option("--task", help="Built-in task: its prior, and its HF simulator for sequential methods.")
@click.option("--simulator", metavar="MODULE:FUNCTION", help="HF simulator for sequential methods.")
@click.option("--simulator-cmd", metavar="CMD", help="External HF simulator for sequential methods.")
@click.option("--timeout", type=POSITIVE, default=None, help="Seconds one simulator call may take.")
@click.option("--workers", type=Size(min=1, max=1024, bytes=0, what='processes'), default=1, show_default=True, help="Parallel simulator processes.")
@output_option("--partial", help="Where finished HF simulations go if a round's simulator fails [OUTPUT.partial].")
@click.option("--x-o", "x_o_path", metavar="FILE", help="Observation(s) for sequential methods.")
@click.option("--observation", type=int, default=None, help="Row of --x-o (0-based) for sequential methods.")
@click.option("--hf-budget", type=Size(min=2, bytes=16, what='simulations'), help="HF simulations in total over all rounds (sequential).")
@click.option("--rounds", type=Size(min=1, seconds=1.0, what='rounds'), default=5, show_default=True,
              help="Sequential rounds; each simulates --hf-budget / rounds.")
@click.option("--quantile", type=Float(0, 1, min_open=True, max_open=True), default=1e-6, show_default=True, help="Truncation quantile.")
@click.option("--truncation-samples", type=Size(min=100, bytes=16, what='prior draws'), default=1_000_000, show_default=True,
              help="Posterior draws whose --quantile sets the truncation threshold.")
@click.option("--ensemble", type=Size(min=0, seconds=0.01, what='members'), default=0, help="Ensemble members (0: 5 for a-mf-tsnpe, else 1).")
@click.option("--active-fraction", type=UNIT, default=None, help="Share of acquired parameters per round [0.2 for a-mf-tsnpe].")
@click.option("--candidates", type=Size(min=0, bytes=16, what='candidates'), default=0, help="Acquisition candidates (0: 250/2500/25000 by budget).")
@click.option("--lr", type=POSITIVE, default=5e-4, show_default=True, help="Learning rate on HF data (npe, fine-tuning).")
@click.option("--lr-pretrain", type=POSITIVE, default=1e-4, show_default=True, help="Learning rate on LF data.")
@click.option("--batch-size", type=click.IntRange(min=1), default=200, show_default=True, help="Minibatch size, capped at the training-set size.")
@click.option("--validation-fraction", type=Float(0, 1, min_open=True, max_open=True), default=0.1, show_default=True,
              help="Held out for early stopping.")
@click.option("--patience", type=click.IntRange(min=1), default=60, show_default=True,
              help="Epochs without validation improvement before an HF fit stops (the paper's and sbi's: 20).")
@click.option("--patience-steps", type=click.IntRange(min=0), default=PATIENCE_STEPS, show_default=True,
              help="The HF fits' patience also in gradient steps: min(--patience, max(20, ceil(this / steps per "
                   "epoch))) epochs, so large training sets stop sooner; 0: --patience epochs (the paper's).")
@click.option("--patience-pretrain", type=click.IntRange(min=1), default=20, show_default=True,
              help="The same for LF pretraining (longer pretraining fits the LF simulator's bias).")
@click.option("--clip", type=POSITIVE, default=5.0, show_default=True, help="Gradient norm clip.")
@click.option("--max-epochs", type=Size(min=1, seconds=1e-4, what='epochs'), default=5000, show_default=True,
              help="Cap on epochs per fit (a safety net: patience ends every measured run long before).")
@output_option("--log", "log_path", metavar="FILE.yaml", help="Per-fit record: why it stopped, and the per-epoch "
               "train and validation loss.")
@click.option("--x-stats", type=click.Choice(["auto", "refit", "keep"]), default="auto", show_default=True,
              help="x z-score when fine-tuning: refit on HF (mf-npe) or keep LF's (mf-tsnpe); auto = the paper's.")
@click.option("--theta-map", type=click.Choice(["zscore", "logit"]), default="zscore", show_default=True,
              help="Map of box (uniform) parameters into the flow: zscore (affine, samples kept inside by rejection, "
                   "log q renormalised for the leaked mass; sbi's) or logit (the paper's).")
@click.option("--lognormal-map", type=click.Choice(["auto", "zscore", "log"]), default="auto", show_default=True,
              help="Map of log-normal parameters into the flow: zscore (theta itself, as sbi; samples kept above 0 by "
                   "rejection, log q renormalised) or log (log theta standardised); auto = zscore for npe, log for "
                   "the other methods.")
@click.option("--transforms", type=Size(min=1, bytes=lambda t, p: 4.0 * (p.get('hidden') or 1) ** 2 * t, what='transforms'), default=5, show_default=True,
              help="Autoregressive spline transforms in the flow.")
@click.option("--bins", type=Size(min=2, bytes=lambda b, p: 4.0 * b * (p.get('hidden') or 1), what='bins'), default=10, show_default=True, help="Spline bins per transform (sbi's 10; the paper's 8).")
@click.option("--hidden", type=Size(min=1, bytes=lambda h, p: 4.0 * h * h * (p.get('depth') or 1), what='units'), default=50, show_default=True, help="Units per conditioner layer.")
@click.option("--depth", type=Size(min=1, bytes=lambda d, p: 4.0 * (p.get('hidden') or 1) ** 2 * d, what='layers'), default=5, show_default=True, help="Hidden layers per conditioner.")
@click.option("--embedding", type=click.Choice(["identity", "mlp"]), default="identity", show_default=True,
              help="Net applied to standardised x before the flow (mlp: x_dim-50-out, trained with it).")
@click.option("--embedding-dim", type=Size(min=0, bytes=lambda e, p: 4.0 * e * e, what='units'), default=0, help="Output size of the mlp embedding [x_dim].")
def train(run, method, baseline, hf_path, lf_path, pretrained, prior_path, task, simulator, simulator_cmd, timeout, workers,
          partial, x_o_path, observation, hf_budget, rounds, quantile, truncation_samples, ensemble, active_fraction,
          candidates, lr, lr_pretrain, batch_size, validation_fraction, patience, patience_steps, patience_pretrain, clip, max_epochs,
          log_path, x_stats,
          theta_map, lognormal_map, transforms, bins, hidden, depth, embedding, embedding_dim):
    """Train a posterior estimator (npe, mf-npe, tsnpe, mf-tsnpe, a-mf-tsnpe) -> npe-posterior."""
    from cortexkit.tools import npe
    from cortexkit.tools.npe import io as npe_io

    config = npe.MethodConfig.from_options(
        method=method, hf_budget=hf_budget, rounds=rounds, quantile=quantile, truncation_samples=truncation_samples,
        ensemble=ensemble, active_fraction=active_fraction, candidates=candidates, lr=lr, lr_pretrain=lr_pretrain,
        batch_size=batch_size, validation_fraction=validation_fraction, patience=patience, patience_steps=patience_steps,
        patience_pretrain=patience_pretrain, clip=clip,
        max_epochs=max_epochs, x_stats=x_stats, transforms=transforms, bins=bins, hidden=hidden, depth=depth,
        embedding=embedding, embedding_dim=embedding_dim, theta_map=theta_map, lognormal_map=lognormal_map, timeout=timeout, workers=workers,
        baseline=baseline, seed=run.seed or 0)
    inputs = npe.load_train_inputs(
        config, run.read_artifact, hf=hf_path, lf=lf_path, pretrained=pretrained,
        prior=npe_io.read_prior(prior_path, task), task=task, simulator=simulator, simulator_cmd=simulator_cmd,
        x_o=x_o_path, observation=observation)
    try:
        result = npe.train(config, inputs, log=run)
    except npe.PartialFailure as failure:
        _keep_partial(run, partial, failure)
    run.write_artifact(result.tensors, POSTERIOR_KIND, metadata=result.metadata)
    if log_path:
        run.write_report({"method": method, "stages": result.stages}, target=log_path)


# ---------------------------------------------------------------------------------------------
# sample / score

@verb(group, "sample", output=lambda params: "table" if params.get("fmt") == "table" else "artifact",
      torch_options=True)
@click.argument("posterior_path", metavar="POSTERIOR|-")
@click.option("--x-o", "x_o_path", metavar="FILE", help="Observations (tensor x_o or x); default: the posterior's own x_o.")
@click.option("--observation", type=int, default=None, help="Use only this row of --x-o (0-based).")
@click.option("-n", "--num-samples", type=Count(bytes_each=8, what="posterior samples"), default=1000, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["samples", "table"]), default="samples", show_default=True,
              help="samples: npe-samples (theta (observations, samples, parameters)); table: one row per draw, "
                   "an observation column and one column per parameter, for any table tool (-o *.csv writes CSV).")
def sample(run, posterior_path, x_o_path, observation, num_samples, fmt):
    """Posterior samples theta ~ q(theta | x_o) for one or many observations -> npe-samples or a table."""
    from cortexkit.tools import npe

    post, art = _read_posterior(run, posterior_path)
    if x_o_path:
        x_o = _read_observations(run, x_o_path, observation, post.members[0].x_dim)
    elif "x_o" in art.tensors:
        x_o = art.tensor("x_o").float()[None]
    else:
        raise CortexError("give --x-o FILE: this posterior is amortized and holds no observation")
    theta = npe.sample(post, x_o, num_samples, run.torch_generator(), log=run)
    if fmt == "table":
        _write_samples_table(run, theta, post.prior.names, observation or 0)
        return
    run.write_artifact({"theta": theta, "x_o": x_o}, SAMPLES_KIND,
                       metadata={"npe.parameter_names": post.prior.names, "npe.prior": post.prior.to_spec()})


def _write_samples_table(run, theta, names, first_row):
    """theta (n_obs, n, d) as rows: observation (the row of --x-o), then one column per parameter."""
    import numpy as np

    from cortexkit.formats.table import Table

    n_obs, n, d = theta.shape
    flat = theta.reshape(n_obs * n, d).double().numpy()
    columns = {"observation": np.repeat(np.arange(first_row, first_row + n_obs, dtype=np.int64), n)}
    if "observation" in names:
        raise CortexError("a parameter is named 'observation'; rename it in the prior to write a table")
    columns.update({name: np.ascontiguousarray(flat[:, j]) for j, name in enumerate(names)})
    run.write_table(Table(columns, {}, "<samples>"), metadata={"npe.parameter_names": names})


@verb(group, "score", output="table", torch_options=True)
@click.argument("posterior_path", metavar="POSTERIOR")
@click.argument("data_path", metavar="DATA|-")
def score(run, posterior_path, data_path):
    """log q(theta | x) for the (theta, x) pairs of DATA (simulations) or of npe-samples -> npe-log-prob."""
    from cortexkit.tools import npe

    post, _ = _read_posterior(run, posterior_path)
    run.write_artifact({"log_prob": npe.score(post, run.read_artifact(data_path), log=run)}, LOGPROB_KIND)


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
@click.option("--sbc-samples", type=Size(min=10, bytes=16, what='draws per pair'), default=100, show_default=True, help="Posterior draws per SBC pair.")
@output_option("--plot", metavar="PNG", help="Pair plot of SAMPLES vs reference (--observation K, default 0), "
              "else SBC rank histograms (needs matplotlib).")
@click.option("--observation", type=int, default=None, help="Evaluate (and plot) only this row of SAMPLES (0-based).")
def evaluate(run, samples_path, reference, metrics, max_samples, posterior_path, x_o_path, sbc_path, sbc_samples,
             plot, observation):
    """Posterior quality: C2ST (random forest, MLP), MMD against reference samples; NLTP; SBC."""
    from cortexkit.tools import npe

    config = npe.evaluate_config(metrics, samples=bool(samples_path), reference=bool(reference),
                                 posterior=bool(posterior_path), x_o=bool(x_o_path), sbc=bool(sbc_path),
                                 max_samples=max_samples, sbc_samples=sbc_samples, observation=observation,
                                 plot=plot, seed=run.seed or 0)
    if plot is not None:
        require_matplotlib()
    npe.check_evaluate_needs(config, bool(samples_path))
    read = lambda path: run.read_artifact(path) if path else None  # noqa: E731
    samples = read(samples_path)
    ref = read(reference) if samples_path else None
    post = _read_posterior(run, posterior_path)[0] if posterior_path else None
    staged = run.output_file(plot) if plot is not None else contextlib.nullcontext()
    with staged as tmp:
        report = npe.evaluate(config, samples=samples, reference=ref, posterior=post, x_o=read(x_o_path),
                              sbc=read(sbc_path), plot_to=tmp, log=run)
    run.write_report(report)

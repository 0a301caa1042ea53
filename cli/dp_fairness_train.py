"""cortexkit dp-fairness-train: RaCO-DP, differentially private training under rate constraints."""

from __future__ import annotations

import math

import click

from cortexkit.cli.base import output_option, require_matplotlib, tool_group, verb
from cortexkit.cli.options import NONNEGATIVE, POSITIVE, Float, Size, check_time, option_set
from cortexkit.tools.dpfair import schema as _schema  # noqa: F401  (registers the schemas checked on read)

KIND_MODEL = "dpfair-model"
KIND_PREDICTIONS = "dpfair-predictions"
MODEL_VERSION = 1

group = tool_group(
    "dp-fairness-train",
    help="RaCO-DP (ICLR 2026): differentially private training under rate (fairness) constraints, "
         "with PLD privacy accounting.",
)

# ---------------------------------------------------------------------------------------------
# option sets

data_options = option_set(
    click.option("--label", required=True, metavar="COL", help="Label column (binary or categorical)."),
    click.option("--sensitive", default="", metavar="COL[,COL]",
                 help="Sensitive column(s); groups are the product of their values. Not used as features."),
    click.option("--drop", default="", metavar="COL[,COL]", help="Columns that are not features."),
    click.option("--categorical", default="", metavar="COL[,COL]",
                 help="Numerically coded columns that are categories (one-hot, not z-scored)."),
)

train_options = option_set(
    click.option("--constraint", default="demographic-parity", show_default=True,
                 metavar="demographic-parity|equalized-odds|fnr|none|FILE.yaml",
                 help="Rate constraints; none = plain DP-SGD."),
    click.option("--gamma", type=NONNEGATIVE, default=0.05, show_default=True,
                 help="Constraint slack (a spec's per-constraint gamma wins)."),
    click.option("--positive-label", default=None, help="Positive class for fnr (default: the last class)."),
    click.option("--epsilon", type=POSITIVE, default=1.0, show_default=True, help="Target epsilon."),
    click.option("--delta", type=Float(0, 1, min_open=True, max_open=True), default=1e-5, show_default=True, help="Target delta."),
    click.option("--sigma", type=POSITIVE, default=None,
                 help="Gaussian noise multiplier (std / clip). Default: calibrated to the budget "
                      "(about 10 at the planned batch and steps)."),
    click.option("--steps", type=Size(min=1, seconds=1e-4, what='steps'), default=None,
                 help="Steps T. Default: the largest T within the budget (at most --max-steps)."),
    click.option("--max-steps", type=Size(min=1, seconds=1e-4, what='steps'), default=1000, show_default=True,
                 help="Cap on the calibrated number of steps."),
    click.option("--laplace-b", type=POSITIVE, default=0.03, show_default=True,
                 help="Histogram noise as INVERSE scale: Laplace(0, 1/b) per cell."),
    click.option("--count-epsilon", type=POSITIVE, default=None,
                 help="Budget spent once on the constraint cells' sizes (Laplace), which plan the batch size "
                      "and the small-group checks. Default: 5 % of --epsilon."),
    click.option("--batch-size", type=POSITIVE, default=None,
                 help="Expected Poisson batch size B (rate q = B / n, at most 1). Default: planned from n and "
                      "the budget (the largest q at which --max-steps steps of sigma 10 fit; raised for small groups)."),
    click.option("--clip", type=POSITIVE, default=None,
                 help="Per-example gradient clip norm C. Default: 2 with constraints, 1 with --constraint none."),
    click.option("--lr", type=POSITIVE, default=None,
                 help="Primal step size. Default: 2 divided by the clip norm (the mean clipped gradient moves the weights at most 2)."),
    click.option("--lr-dual", type=POSITIVE, default=None, help="Dual step size. Default: 0.03 / --gamma x sqrt(1000 / T)."),
    click.option("--dual-update", type=click.Choice(["heavy-ball", "exponentiated"]), default="heavy-ball",
                 show_default=True, help="Projected (heavy-ball) ascent or exponentiated gradient."),
    click.option("--dual-momentum", type=Float(0, 1, max_open=True), default=0.0, show_default=True, help="Heavy-ball momentum."),
    click.option("--dual-max", type=Float(0, min_open=True, allow_inf=True), default=float("inf"), show_default=True,
                 help="Upper bound of the multipliers (the compact dual set)."),
    click.option("--temperature", type=POSITIVE, default=8.0, show_default=True,
                 help="tau: rates use softmax(tau * logits); large tau makes soft rates track hard ones."),
    click.option("--model", "model_kind", type=click.Choice(["logistic", "mlp"]), default="logistic",
                 show_default=True, help="Logistic regression or a ReLU MLP."),
    click.option("--hidden", default="64", show_default=True, metavar="H[,H]", help="MLP hidden sizes."),
    click.option("--no-standardize", is_flag=True, help="Do not z-score numeric columns."),
    click.option("--histogram-batch", type=click.Choice(["independent", "shared"]),
                 default="independent", show_default=True,
                 help="Histogram from its own Poisson batch (the accounted mechanism exactly) or "
                      "from the gradient's batch as in the paper (epsilon then not a proven bound)."),
    click.option("--dual-rates", type=click.Choice(["hard", "soft"]), default="hard", show_default=True,
                 help="What the released histogram counts: argmax predictions (the rates the model is judged "
                      "by) or softmax(tau * logits) as in the paper; the dual step reads it."),
    click.option("--clip-split", type=click.Choice(["joint", "separate"]), default="joint", show_default=True,
                 help="Clip each example's gradient as a whole to --clip (the paper's step), or its loss part "
                      "and its rate-constraint part to half of --clip each; either way one example moves the "
                      "sum by at most --clip, so the noise and epsilon are the same."),
    click.option("--average-from", type=Float(0, 1, max_open=True), default=0.0, show_default=True,
                 help="The averaged iterate (--iterate average) is the mean of the iterates after this share "
                      "of the steps: 0 all of them (the paper's uniform average), 0.5 the last half (a suffix "
                      "average; post-processing, same epsilon)."),
    click.option("--non-private", is_flag=True,
                 help="sigma 0, no Laplace noise, no clipping: non-private SGDA (epsilon infinite)."),
    click.option("--allow-small-groups", is_flag=True,
                 help="Train although a group's expected batch count is below its Laplace noise."),
    click.option("--validation", type=Float(0, 1, max_open=True), default=0.1, show_default=True,
                 help="Share of the rows held out of training to score the model against the majority class "
                      "(0: none)."),
    click.option("--validation-epsilon", type=POSITIVE, default=None,
                 help="Budget of the held-out rows' Laplace histogram (composed into the ledger). "
                      "Default: 5 % of --epsilon."),
)


# ---------------------------------------------------------------------------------------------
# helpers (torch and numpy are imported inside; the method lives in cortexkit.tools.dpfair)

def _split_names(text: str) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _source(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _read_table(source: str, categorical: str = ""):
    """Column name -> cell strings of a CSV, NPY/NPZ or table artifact (formats.table.read_table)."""
    from cortexkit.tools.dpfair.io import read_columns

    return read_columns(source, _split_names(categorical))


def _train_config(label, sensitive, drop, categorical, constraint, model_kind, hidden, no_standardize, **options):
    """The typed TrainConfig of the train options (the constraint file read here)."""
    from cortexkit.tools.dpfair import TrainConfig
    from cortexkit.tools.dpfair.io import read_constraint_spec

    return TrainConfig(label=label, sensitive=_split_names(sensitive), drop=_split_names(drop),
                       categorical=_split_names(categorical), constraint=constraint,
                       constraint_spec=read_constraint_spec(constraint),
                       model_kind=model_kind, standardize=not no_standardize,
                       hidden=[int(h) for h in _split_names(hidden)] if model_kind == "mlp" else [], **options)


def _check_stdin(*sources: str) -> None:
    from cortexkit.formats.errors import CortexError

    if sum(1 for s in sources if s == "-") > 1:
        raise CortexError("only one input can come from stdin ('-')")


def _model_and_table(run, model: str, table: str, iterate: str, categorical: str = ""):
    """(loaded model, table columns) for predict and evaluate; at most one of them from stdin."""
    from cortexkit.tools import dpfair

    _check_stdin(model, table)
    artifact = run.read_artifact(model, kind=KIND_MODEL, max_version=MODEL_VERSION)
    return dpfair.Model.from_artifact(artifact, iterate), _read_table(table, categorical)


def _resolve_train(ctx) -> dict[str, str]:
    """The clip and lr the run will use (they follow --constraint), in place of null, before --print-config
    and the stored config see them. Left null with --non-private (no clipping; the step comes from the
    data's curvature)."""
    params = ctx.params
    if params.get("non_private"):
        return {}
    from cortexkit.tools.dpfair.api import CLIP_CONSTRAINED, CLIP_UNCONSTRAINED, STEP_LENGTH

    why = {}
    if params.get("clip") is None:
        free = params.get("constraint") == "none"
        params["clip"] = CLIP_UNCONSTRAINED if free else CLIP_CONSTRAINED
        why["clip"] = f"{params['clip']:g}, the default {'without' if free else 'with'} a constraint"
    if params.get("lr") is None:
        clip = float(params["clip"])
        params["lr"] = STEP_LENGTH / (clip if math.isfinite(clip) else 4.0)
        why["lr"] = f"{params['lr']:g} = {STEP_LENGTH:g} / clip"
    return why


# ---------------------------------------------------------------------------------------------
# verbs

# left out of --help (shown by --help-all and the man page): the paper's hyperparameters
ADVANCED_TRAIN = ("positive_label", "max_steps", "laplace_b", "count_epsilon", "batch_size", "clip", "lr_dual", "dual_update",
                  "dual_momentum", "dual_max", "temperature", "hidden", "no_standardize", "histogram_batch",
                  "dual_rates", "clip_split", "average_from", "allow_small_groups", "validation", "validation_epsilon")


@verb(group, "train", output="artifact", torch_options=True, advanced=ADVANCED_TRAIN, resolve=_resolve_train)
@click.argument("table", metavar="TABLE|-")
@data_options
@train_options
def train(run, table, **options):
    """Train a classifier with RaCO-DP (or DP-SGD with --constraint none) -> dpfair-model."""
    from cortexkit.tools import dpfair

    data = _read_table(table, options["categorical"])
    config = _train_config(**options)
    plan = dpfair.plan(data, config, source=_source(table), warn=run.warn, seed=run.seed or 0)
    led = plan.ledger
    histogram = "no histogram" if led.laplace_b is None else f"laplace-b {led.laplace_b:g}"
    histogram += f", count-epsilon {led.epsilon_counts:.3g}" if led.epsilon_counts else ""
    run.info(f"privacy: epsilon {led.epsilon_spent:.4g} (delta {led.delta:g}) over {led.steps} steps, sigma "
             f"{led.sigma:.4g}, {histogram}, q {led.sampling_rate:.4g} (expected batch {led.expected_batch_size:.0f}); "
             f"lr {plan.lr:.3g}" + (f", lr-dual {plan.lr_dual:.3g}" if plan.constraints is not None else ""))
    fitted = dpfair.train(data, config, plan, seed=run.seed or 0, device=run.device, progress=run.progress,
                          warn=run.warn, log=run.detail if run.verbose else None)
    stage = "SGDA" if config.non_private else ("RaCO-DP" if plan.constraints is not None else "DP-SGD")
    stop = dict(fitted.stop)
    run.stopped(stage, stop.pop("ran"), stop.pop("planned"), "steps", stop.pop("reason"), **stop)
    report, warnings = dpfair.check_baselines(
        data, plan, {"model": dpfair.Model.from_fitted(fitted)}, seed=run.seed or 0,
        gamma=config.gamma if config.constraint_spec is None else None, train_violation=fitted.stop.get("train_violation"))
    if report["rows"]:
        run.info(f"held-out rows ({report['rows']}, epsilon {report['epsilon']}): accuracy "
                 f"{report['model']['accuracy']:.4f}, DP gap {report['model']['dp_gap']:.4f}; majority class "
                 f"{report['majority']['class']!r} {report['majority']['accuracy']:.4f} "
                 f"(noise sd {report['accuracy_noise_sd']:.3f})")
    for message in warnings:
        run.warn(message)
    fitted.metadata["dpfair.validation"] = report
    run.write_artifact(fitted.tensors, KIND_MODEL, metadata=fitted.metadata, version=str(MODEL_VERSION))



iterate_option = click.option(
    "--iterate", type=click.Choice(["last", "average"]), default="average", show_default=True,
    help="Which parameters: the last iterate or the averaged one (train's --average-from).")
categorical_option = click.option(
    "--categorical", default="", metavar="COL[,COL]",
    help="Numerically coded columns to read as categories (as given to train).")


@verb(group, "predict", output="table", torch_options=True)
@click.argument("model", metavar="MODEL|-")
@click.argument("table", metavar="TABLE|-")
@iterate_option
@categorical_option
def predict(run, model, table, iterate, categorical):
    """Predict labels and class probabilities (no sensitive column needed) -> dpfair-predictions or CSV."""
    from cortexkit.tools import dpfair

    loaded, data = _model_and_table(run, model, table, iterate, categorical)
    labels, probs = dpfair.predict(loaded, data, run.warn, _source(table))
    if str(run.output).lower().endswith(".csv"):
        import numpy as np

        from cortexkit.formats.stdio import write_bytes
        from cortexkit.formats.tables import write_csv

        names = np.array(loaded.classes, dtype=object)[labels.numpy()]
        rows = np.column_stack([names, probs.numpy().astype(object)])
        write_bytes(run.output, write_csv(rows, ["label"] + [f"p_{c}" for c in loaded.classes]), binary=False)
        return
    run.write_artifact({"labels": labels, "probabilities": probs}, KIND_PREDICTIONS,
                       metadata={"dpfair.classes": loaded.classes})


@verb(group, "evaluate", output="report", torch_options=True)
@click.argument("model", metavar="MODEL|-")
@click.argument("table", metavar="TABLE|-")
@iterate_option
@categorical_option
def evaluate(run, model, table, iterate, categorical):
    """Accuracy, fairness gaps, constraint violations and epsilon spent, as YAML."""
    from cortexkit.tools import dpfair

    loaded, data = _model_and_table(run, model, table, iterate, categorical)
    report = dpfair.evaluate(loaded, data, _source(table), run.warn)
    run.write_report({"model": model, "table": table, "iterate": iterate, **report})


ACCOUNT_SECONDS_PER_STEP = 3e-5


@verb(group, "account", output="report")
@click.option("--sigma", type=POSITIVE, default=None, help="Gaussian noise multiplier (omit to calibrate it).")
@click.option("--laplace-b", type=POSITIVE, default=None,
              help="Histogram noise as INVERSE scale (Laplace(0, 1/b)); omit for DP-SGD (no histogram).")
@click.option("--count-epsilon", type=POSITIVE, default=None,
              help="Add train's one-off Laplace release of the cell sizes (train's default: 5 % of epsilon).")
@click.option("--validation-epsilon", type=POSITIVE, default=None,
              help="Add train's Laplace histogram of the held-out rows (train's default: 5 % of epsilon).")
@click.option("--sampling-rate", type=Float(0, 1, min_open=True), default=None, help="Poisson rate q.")
@click.option("--batch-size", type=POSITIVE, default=None, help="Expected batch size B (with --n: q = B / n).")
@click.option("--n", "n_records", type=click.IntRange(min=1), default=None, help="Training records n.")
@click.option("--steps", type=Size(min=0, seconds=1e-4, what='steps'), default=None, help="Steps T (omit to find the largest).")
@click.option("--delta", type=Float(0, 1, min_open=True, max_open=True), default=1e-5, show_default=True)
@click.option("--epsilon", type=POSITIVE, default=None, help="Target epsilon (to find T or sigma).")
@click.option("--max-steps", type=Size(min=1, seconds=1e-4, what='steps'), default=5000, show_default=True,
              help="Upper end of the step search.")
def account(run, **options):
    """Epsilon of (sigma, b, q, T, delta), or the largest T / smallest sigma within a budget. No data."""
    from cortexkit.tools import dpfair

    # PLD composition: 1e6 steps 5-32 s, 1e7 29 s here (the support grows with T); a search ~20 times
    steps = options["steps"] if options["steps"] is not None else options["max_steps"]
    passes = 1 if options["sigma"] is not None and options["steps"] is not None else 20
    check_time(f"accounting {steps} steps", ACCOUNT_SECONDS_PER_STEP * steps * passes, limit=600)
    run.write_report(dpfair.account(dpfair.AccountConfig(**options), run.warn))


@verb(group, "sweep", output="report", torch_options=True, advanced=ADVANCED_TRAIN)
@click.argument("table", metavar="TABLE|-")
@click.option("--test", "test_table", required=True, metavar="TEST.csv", help="Held-out table for the Pareto front.")
@click.option("--gammas", default="0.01,0.02,0.05,0.1,0.15,0.2", show_default=True, metavar="G[,G]|auto",
              help="The gamma grid, or auto: gamma 1 first, then 0.95, 0.9, 0.75, 0.5 and 0.25 of the group gap "
                   "its released histograms show (demographic-parity and equalized-odds only).")
@click.option("--seeds", type=Size(min=1, seconds=0.1, what='training runs per gamma'), default=1, show_default=True, help="Runs per gamma.")
@click.option("--iterate", type=click.Choice(["last", "average"]), default="average", show_default=True)
@output_option("--plot", metavar="PNG", help="Also draw test error vs DP gap (needs matplotlib).")
@data_options
@train_options
def sweep(run, table, test_table, gammas, seeds, iterate, plot, **options):
    """Train over a gamma grid at a fixed epsilon -> Pareto table (error vs gap) on a test table."""
    from cortexkit.formats.errors import CortexError
    from cortexkit.tools import dpfair

    _check_stdin(table, test_table)
    grid = dpfair.parse_gammas(gammas)
    if options["constraint"] == "none":
        raise CortexError("sweep varies gamma: give a constraint, not none")
    config = _train_config(**options)
    if grid == dpfair.api.AUTO:
        dpfair.api.check_auto(config)
    if plot is not None:
        require_matplotlib()
    data, test = _read_table(table, options["categorical"]), _read_table(test_table, options["categorical"])
    report = dpfair.sweep(data, test, config, grid, seeds=seeds, iterate=iterate,
                          seed=run.seed or 0, source=_source(table), test_source=test_table, device=run.device,
                          progress=run.progress, warn=run.warn, info=run.info)
    if plot is not None:
        from cortexkit.tools.dpfair.plot import pareto_figure

        run.write_figure(pareto_figure(report["rows"]), plot, dpi=120)
        report["plot"] = plot
    run.write_report(report)


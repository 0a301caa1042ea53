"""cortexkit dp-fairness-train: RaCO-DP, differentially private training under rate constraints."""

from __future__ import annotations

import click

from cortexkit.cli.base import NONNEGATIVE, POSITIVE, Float, option_set, output_option, require_matplotlib, tool_group, verb
from cortexkit.tools.dpfair import schema as _schema  # noqa: F401  (registers the schemas checked on read)

KIND_MODEL = "dpfair-model"
KIND_PREDICTIONS = "dpfair-predictions"
MODEL_VERSION = 1

group = tool_group(
    "dp-fairness-train",
    help="RaCO-DP (ICLR 2026): differentially private training under rate (fairness) constraints, "
         "with PLD privacy accounting.",
)

MAN = {
    "DESCRIPTION": """
Train a classifier on a table with differential privacy (DP) while keeping prediction rates across
groups within bounds: demographic parity, equalized odds, a false-negative-rate cap, or any linear
combination of soft rates given in a YAML file. The method is RaCO-DP (Yaghini, Cebere et al.,
"Private Rate-Constrained Optimization with Applications to Fair Learning", ICLR 2026): private
stochastic gradient descent-ascent on the Lagrangian of the constrained problem.

Every step draws a Poisson batch (each record independently with rate q = batch-size / n), releases
the batch's soft histogram H[cell, class] of softmax(tau * logits) with i.i.d. Laplace noise in every
cell (L1 sensitivity 1), builds the per-example Lagrangian term from the noisy group counts, clips
the per-example gradient of cross-entropy + B * regularizer as a whole to --clip, adds Gaussian
noise of std sigma * clip, divides by the expected batch size B and takes a gradient step; the dual
variables take a projected ascent step (heavy ball, or exponentiated gradient) from the noisy
histogram alone. Cells are the product of the levels of every attribute a constraint uses, so every
record lies in exactly one cell.

Privacy is accounted with Google's dp-accounting PLD accountant (connect-the-dots, add/remove
adjacency): T Poisson-subsampled Gaussian steps composed with T Poisson-subsampled Laplace
releases. By default the histogram reads its own Poisson batch, independent of the gradient's,
so the run is exactly the pair of separately subsampled mechanisms the accountant composes and the
epsilon is a valid bound. --histogram-batch shared reads both from one batch as the paper does;
the paper's accountant then treats a jointly subsampled pair as two independent ones, which
under-states the loss, and the tool warns.
LAPLACE CONVENTION: --laplace-b is the inverse scale; each cell gets
Laplace(0, 1/b) noise, so b is the pure epsilon of one un-subsampled histogram. Given --epsilon and
--delta, train calibrates the number of steps (or sigma when --steps is given) and refuses to run past
the budget; the model stores the ledger (sigma, b, q, T, delta, epsilon spent, accountant).
The budget asked is the budget spent: when the step search stops at --max-steps first, sigma is
lowered to spend epsilon (to within 2 %) in those steps; with an explicit --sigma, or in account, a
warning says why less was spent and which sigma would spend it.

Refused before training: a label value with fewer than 10 rows (a stray value), --gamma below 0, a
constraint set that no classifier meets on the training data (a linear program over per-cell
prediction rates proves it), and a group whose expected batch count is below the std of its
Laplace noise (its rates would be noise; --allow-small-groups trains anyway).

Defaults and what they were tuned on: sigma 10, laplace-b 0.03, batch 4096, clip 3, lr 0.5,
lr-dual 0.3, temperature 8 are the paper's Adult settings, checked on Adult (33,916 training rows)
by benchmarks/dp_fairness_train/tune.py; COMPAS and Parkinsons runs in benchmarks/RESULTS.md use
their own settings. They are not yet chosen from the data size and budget.

Not covered by the guarantee: the encoding statistics (category sets, means and standard deviations
of numeric columns) and the group and label sets are computed from the training table without noise,
as in the paper; hyper-parameter searches (sweep) spend epsilon once per run; torch's random number
generator is not a cryptographic source and floating-point noise is not hardened.

With --constraint none the method is exactly DP-SGD (no histogram, only the Gaussian is accounted);
with --non-private (sigma 0, no Laplace noise, no clipping) it is plain stochastic gradient
descent-ascent.

Verbs: train (table -> model), predict (model + table -> labels and probabilities; no sensitive
column needed), evaluate (model + table -> accuracy, demographic-parity gap (max - min selection
rate), one-vs-rest gaps, equalized-odds gap, soft and hard constraint violations, epsilon spent),
account (epsilon for sigma, b, q, T, delta, or the largest T, or the sigma for a budget; no data),
sweep (a gamma grid at a fixed epsilon -> Pareto table, PNG with --plot).
""",
    "EXAMPLES": """
Train a fair logistic regression at epsilon 1 and look at it on held-out data:

    cortexkit dp-fairness-train train adult_train.csv --label '>50K' \\
        --sensitive sex \\
        --constraint demographic-parity --gamma 0.05 --epsilon 1 --delta 1e-5 \\
        -o model.safetensors
    cortexkit dp-fairness-train evaluate model.safetensors adult_test.csv

Train and evaluate in one pipe:

    cortexkit dp-fairness-train train train.csv --label y --sensitive race -q \\
        | cortexkit dp-fairness-train evaluate - test.csv

How many steps does epsilon 1 allow, and what did the official demo settings really spend?

    cortexkit dp-fairness-train account --sigma 10 --laplace-b 0.03 \\
        --batch-size 4096 --n 33916 --epsilon 1
    cortexkit dp-fairness-train account --sigma 4 --laplace-b 0.5 \\
        --sampling-rate 0.13802 --steps 1000 --delta 1e-4

Plain DP-SGD (no constraints) and an MLP under equalized odds:

    cortexkit dp-fairness-train train train.csv --label y --constraint none \\
        --epsilon 3 -o dpsgd.safetensors
    cortexkit dp-fairness-train train train.csv --label y --sensitive sex \\
        --constraint equalized-odds \\
        --model mlp --hidden 64 --gamma 0.1 -o mlp.safetensors

Predictions as CSV, and a Pareto sweep with a plot:

    cortexkit dp-fairness-train predict model.safetensors test.csv \\
        -o predictions.csv
    cortexkit dp-fairness-train sweep train.csv --test test.csv --label '>50K' \\
        --sensitive sex \\
        --gammas 0.01,0.02,0.05,0.1 --epsilon 1 --plot pareto.png -o pareto.yaml

A custom constraint (YAML): the positive rate of women at least 0.2:

    partition: [sex]
    constraints:
      - name: female-positive-rate
        gamma: -0.2
        terms: [{where: {sex: Female}, class: "Yes", weight: -1.0}]
""",
    "FILES": """
- TABLE (CSV with a header, NPY/NPZ, or a table artifact such as convert writes; - for stdin) :: one
record per row, read by the one table reader of cortexkit. Numeric columns are z-scored, other columns
(text, categorical columns of a table artifact, and those named in --categorical, e.g. EDUCATION
coded 1..6) one-hot encoded (levels seen in training; unseen levels encode as zeros with a warning).
The label and the sensitive columns are not features. Missing values (empty, ?, NA, NaN, null) are
refused; a numeric column with a stray text cell is an error naming line and column.
- dpfair-model artifact (kind dpfair-model, version 1) :: tensors last.NAME and average.NAME (float32):
the parameters of the last and of the uniformly averaged iterate (NAME as in torch, e.g. 0.weight
(classes, features) and 0.bias (classes,) for logistic regression; 0.weight, 0.bias, 2.weight, ...
for the MLP); dual.last and dual.average (float64, (constraints,)): the Lagrange multipliers.
Metadata (JSON): dpfair.model (architecture, label column, classes, temperature), dpfair.encoder
(feature columns, numeric means and standard deviations, categorical levels), dpfair.constraints
(partition attributes and levels, terms, coefficients, gammas, names), dpfair.ledger (sigma, clip,
laplace_b, laplace_scale, sampling_rate, expected batch size, steps, delta, epsilon spent in total,
Gaussian-only and Laplace-only, target, accountant, Laplace convention).
- dpfair-predictions artifact (kind dpfair-predictions) :: labels (int64, (rows,)): predicted class
index; probabilities (float32, (rows, classes)); metadata dpfair.classes (JSON list of class names).
With -o FILE.csv predict writes a CSV with columns label and p_CLASS instead.
- Constraint spec (YAML) :: partition: list of columns (the label column may be one); constraints:
list of {name, gamma, constant, terms: [{where: {column: value or [values]}, class: label value,
weight}]}; each constraint is constant + sum of weight * P(class | union of matching cells) <= gamma.
- evaluate, account and sweep write YAML reports to stdout (or -o).
""",
    "SEE ALSO": "cortexkit(1), cortexkit-inspect(1), cortexkit-convert(1)",
    "REFERENCE": """
M. Yaghini, T. Cebere, M. Menart, A. Bellet, N. Papernot. Private Rate-Constrained Optimization with
Applications to Fair Learning. ICLR 2026. arXiv:2505.22703. Accounting: Doroshenko et al.,
Connect the Dots: Tighter Discrete Approximations of Privacy Loss Distributions, PETS 2022
(Google dp-accounting).
""",
}


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
                 help="Gaussian noise multiplier (std / clip). Default: 10 when --steps is not given, "
                      "else calibrated to the budget."),
    click.option("--steps", type=click.IntRange(min=1), default=None,
                 help="Steps T. Default: the largest T within the budget (at most --max-steps)."),
    click.option("--max-steps", type=click.IntRange(min=1), default=1000, show_default=True,
                 help="Cap on the calibrated number of steps."),
    click.option("--laplace-b", type=POSITIVE, default=0.03, show_default=True,
                 help="Histogram noise as INVERSE scale: Laplace(0, 1/b) per cell."),
    click.option("--batch-size", type=POSITIVE, default=4096, show_default=True,
                 help="Expected Poisson batch size B (rate q = B / n, at most 1)."),
    click.option("--clip", type=POSITIVE, default=3.0, show_default=True,
                 help="Per-example gradient clip norm C."),
    click.option("--lr", type=POSITIVE, default=0.5, show_default=True, help="Primal step size."),
    click.option("--lr-dual", type=POSITIVE, default=0.3, show_default=True, help="Dual step size."),
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
    click.option("--non-private", is_flag=True,
                 help="sigma 0, no Laplace noise, no clipping: non-private SGDA (epsilon infinite)."),
    click.option("--allow-small-groups", is_flag=True,
                 help="Train although a group's expected batch count is below its Laplace noise."),
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


# ---------------------------------------------------------------------------------------------
# verbs

# left out of --help (shown by --help-all and the man page): the paper's hyperparameters
ADVANCED_TRAIN = ("positive_label", "max_steps", "laplace_b", "batch_size", "clip", "lr_dual", "dual_update",
                  "dual_momentum", "dual_max", "temperature", "hidden", "no_standardize", "histogram_batch",
                  "allow_small_groups")


@verb(group, "train", output="artifact", torch_options=True, advanced=ADVANCED_TRAIN)
@click.argument("table", metavar="TABLE|-")
@data_options
@train_options
def train(run, table, **options):
    """Train a classifier with RaCO-DP (or DP-SGD with --constraint none) -> dpfair-model."""
    from cortexkit.tools import dpfair

    data = _read_table(table, options["categorical"])
    config = _train_config(**options)
    plan = dpfair.plan(data, config, source=_source(table), warn=run.warn)
    led = plan.ledger
    histogram = "no histogram" if led.laplace_b is None else f"laplace-b {led.laplace_b:g}"
    run.info(f"privacy: epsilon {led.epsilon_spent:.4g} (delta {led.delta:g}) over {led.steps} steps, sigma "
             f"{led.sigma:.4g}, {histogram}, q {led.sampling_rate:.4g}")
    fitted = dpfair.train(data, config, plan, seed=run.seed or 0, device=run.device, progress=run.progress,
                          warn=run.warn, log=run.detail if run.verbose else None)
    run.write_artifact(fitted.tensors, KIND_MODEL, metadata=fitted.metadata, version=str(MODEL_VERSION))


iterate_option = click.option(
    "--iterate", type=click.Choice(["last", "average"]), default="average", show_default=True,
    help="Which parameters: the last iterate or the average of all iterates.")
categorical_option = click.option(
    "--categorical", default="", metavar="COL[,COL]",
    help="Numerically coded columns to read as categories (as given to train).")


@verb(group, "predict", output="artifact", torch_options=True)
@click.argument("model", metavar="MODEL|-")
@click.argument("table", metavar="TABLE|-")
@iterate_option
@categorical_option
def predict(run, model, table, iterate, categorical):
    """Predict labels and class probabilities (no sensitive column needed) -> dpfair-predictions or CSV."""
    from cortexkit.tools import dpfair

    loaded, data = _model_and_table(run, model, table, iterate, categorical)
    labels, probs = dpfair.predict(loaded, data, run.warn)
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


@verb(group, "account", output="report")
@click.option("--sigma", type=POSITIVE, default=None, help="Gaussian noise multiplier (omit to calibrate it).")
@click.option("--laplace-b", type=POSITIVE, default=None,
              help="Histogram noise as INVERSE scale (Laplace(0, 1/b)); omit for DP-SGD (no histogram).")
@click.option("--sampling-rate", type=Float(0, 1, min_open=True), default=None, help="Poisson rate q.")
@click.option("--batch-size", type=POSITIVE, default=None, help="Expected batch size B (with --n: q = B / n).")
@click.option("--n", "n_records", type=click.IntRange(min=1), default=None, help="Training records n.")
@click.option("--steps", type=click.IntRange(min=0), default=None, help="Steps T (omit to find the largest).")
@click.option("--delta", type=Float(0, 1, min_open=True, max_open=True), default=1e-5, show_default=True)
@click.option("--epsilon", type=POSITIVE, default=None, help="Target epsilon (to find T or sigma).")
@click.option("--max-steps", type=click.IntRange(min=1), default=5000, show_default=True,
              help="Upper end of the step search.")
def account(run, **options):
    """Epsilon of (sigma, b, q, T, delta), or the largest T / smallest sigma within a budget. No data."""
    from cortexkit.tools import dpfair

    run.write_report(dpfair.account(dpfair.AccountConfig(**options), run.warn))


@verb(group, "sweep", output="report", torch_options=True, advanced=ADVANCED_TRAIN)
@click.argument("table", metavar="TABLE|-")
@click.option("--test", "test_table", required=True, metavar="TEST.csv", help="Held-out table for the Pareto front.")
@click.option("--gammas", default="0.01,0.02,0.05,0.1,0.15,0.2", show_default=True, metavar="G[,G]",
              help="The gamma grid.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Runs per gamma.")
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
    if plot is not None:
        require_matplotlib()
    data, test = _read_table(table, options["categorical"]), _read_table(test_table, options["categorical"])
    report = dpfair.sweep(data, test, _train_config(**options), grid, seeds=seeds, iterate=iterate,
                          seed=run.seed or 0, source=_source(table), test_source=test_table, device=run.device,
                          progress=run.progress, warn=run.warn, info=run.info)
    if plot is not None:
        from cortexkit.tools.dpfair.plot import pareto_figure

        run.write_figure(pareto_figure(report["rows"]), plot, dpi=120)
        report["plot"] = plot
    run.write_report(report)


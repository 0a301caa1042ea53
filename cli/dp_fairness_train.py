"""cortexkit dp-fairness-train: RaCO-DP, differentially private training under rate constraints."""

from __future__ import annotations

import click

from cortexkit.cli.base import NONNEGATIVE, POSITIVE, Float, output_option, require_matplotlib, tool_group, verb
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
- TABLE (CSV with a header) :: one record per row. Numeric columns are z-scored, other columns one-hot
encoded (levels seen in training; unseen levels encode as zeros with a warning). The label and the
sensitive columns are not features. Missing values (empty, ?, NA, NaN, null) are refused.
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

BUILTIN_CONSTRAINTS = ("demographic-parity", "equalized-odds", "fnr", "none")
MAX_CELLS = 256


# ---------------------------------------------------------------------------------------------
# option sets

def _options(*decorators):
    def apply(func):
        for decorator in reversed(decorators):
            func = decorator(func)
        return func
    return apply


data_options = _options(
    click.option("--label", required=True, metavar="COL", help="Label column (binary or categorical)."),
    click.option("--sensitive", default="", metavar="COL[,COL]",
                 help="Sensitive column(s); groups are the product of their values. Not used as features."),
    click.option("--drop", default="", metavar="COL[,COL]", help="Columns that are not features."),
)

train_options = _options(
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
)


# ---------------------------------------------------------------------------------------------
# helpers (torch and numpy are imported inside)

def _split_names(text: str) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _read_table(source: str) -> dict[str, list[str]]:
    from cortexkit.formats.stdio import display_name, read_bytes
    from cortexkit.formats.tables import read_csv_columns

    _, columns = read_csv_columns(read_bytes(source), display_name(source))
    return columns


def _need_columns(table: dict, names: list[str], what: str, source: str) -> None:
    from cortexkit.formats.errors import CortexError

    missing = [c for c in names if c not in table]
    if missing:
        raise CortexError(f"{source}: no {what} column(s) {missing} (columns: {', '.join(list(table)[:20])})")


def _check_privacy_args(epsilon: float, delta: float, n: int, run) -> None:
    import math

    from cortexkit.formats.errors import CortexError

    if not (epsilon > 0) or math.isinf(epsilon) or math.isnan(epsilon):
        raise CortexError(f"--epsilon must be a positive finite number, got {epsilon} "
                          "(use --non-private for no privacy)")
    if not (0 < delta < 1):
        raise CortexError(f"--delta must be in (0, 1), got {delta}")
    if n and delta >= 1.0 / n:
        run.warn(f"delta {delta:g} >= 1/n = {1.0 / n:.3g}: such a delta allows releasing a record outright; "
                 "use delta well below 1/n")


class Prepared:
    """A training table encoded for RaCO-DP, with the constraint set and the privacy plan."""


def _prepare(run, table: dict, source: str, label: str, sensitive: str, drop: str, constraint: str,
             gamma: float, positive_label, epsilon, delta, sigma, steps, max_steps, laplace_b,
             batch_size, clip, non_private, no_standardize, model_kind, hidden, histogram_batch,
             **_) -> Prepared:
    """Validate everything and plan the privacy budget before any training."""
    import math
    from pathlib import Path

    import numpy as np
    import yaml

    from cortexkit.formats.errors import CortexError
    from cortexkit.tools.dpfair import accounting, constraints as cons, table as tab

    sens = _split_names(sensitive)
    dropped = _split_names(drop)
    _need_columns(table, [label], "label", source)
    _need_columns(table, sens, "sensitive", source)
    _need_columns(table, dropped, "--drop", source)
    if label in sens:
        raise CortexError(f"--label {label!r} is also named in --sensitive")
    tab.check_missing(table, [label] + sens)
    classes = tab.label_classes(table[label], label)
    n = len(table[label])
    features = [c for c in table if c != label and c not in sens and c not in dropped]
    if not features:
        raise CortexError(f"{source}: no feature columns left after label, sensitive and --drop")
    encoder = tab.TableEncoder.fit(table, features, standardize=not no_standardize)

    # constraints
    if constraint == "none":
        rc = None
    elif constraint in ("demographic-parity", "equalized-odds"):
        if not sens:
            raise CortexError(f"--constraint {constraint} needs --sensitive COL")
        rc = (cons.demographic_parity(sens, table, classes, gamma) if constraint == "demographic-parity"
              else cons.equalized_odds(label, sens, table, classes, gamma))
    elif constraint == "fnr":
        rc = cons.false_negative_rate(label, table, classes, gamma, positive_label)
    else:
        path = Path(constraint)
        if not path.is_file():
            raise CortexError(f"--constraint {constraint!r}: not one of {', '.join(BUILTIN_CONSTRAINTS)} "
                              "and not a YAML file")
        try:
            spec = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise CortexError(f"{constraint}: not valid YAML ({str(exc).splitlines()[0]})") from None
        for attr in (spec or {}).get("partition", []) if isinstance(spec, dict) else []:
            if attr in table:
                tab.check_missing(table, [attr])
        rc = cons.from_spec(spec, label, table, classes, gamma)
        used = set(rc.partition.attributes) - {label}
        overlap = used & set(features)
        if overlap:
            run.warn(f"constraint spec uses {sorted(overlap)} which are also features; add them to --drop or "
                     "--sensitive to keep them out of the model")
    if rc is not None and rc.partition.n_cells > MAX_CELLS:
        sizes = ", ".join(f"{a}: {len(l)}" for a, l in zip(rc.partition.attributes, rc.partition.levels))
        raise CortexError(f"the constraint partition has {rc.partition.n_cells} cells ({sizes}); at most {MAX_CELLS} "
                          "are supported (each needs enough records per batch against the noise): bin continuous "
                          "sensitive columns or merge small groups first")
    cells = rc.partition.cell_index(table) if rc is not None else None

    # privacy plan
    q = min(1.0, float(batch_size) / n)
    lap = None if rc is None else laplace_b
    if non_private:
        sigma_, lap_, clip_ = 0.0, (None if rc is None else math.inf), math.inf
        steps_ = steps or max_steps
        ledger = accounting.make_ledger(sigma_, clip_, lap_, q, n, steps_, delta if 0 < delta < 1 else 1e-5)
    else:
        _check_privacy_args(epsilon, delta, n, run)
        if not (clip > 0) or math.isinf(clip):
            raise CortexError(f"--clip must be a positive finite number, got {clip}")
        if lap is not None and (not (lap > 0) or math.isinf(lap)):
            raise CortexError(f"--laplace-b must be a positive finite number, got {lap}")
        if sigma is not None and not (sigma > 0):
            raise CortexError(f"--sigma must be > 0 for a private run, got {sigma} (or use --non-private)")
        if steps is None:
            sigma_ = 10.0 if sigma is None else sigma
            steps_ = accounting.max_steps(sigma_, lap, q, epsilon, delta, cap=max_steps)
            if steps_ == 0:
                one = accounting.epsilon_spent(sigma_, lap, q, 1, delta)
                raise CortexError(f"the budget epsilon {epsilon:g} (delta {delta:g}) allows zero steps: one step "
                                  f"already spends {one:.3g} with sigma {sigma_:g}, laplace-b {lap}, q {q:.4g}; "
                                  "raise --sigma, lower --laplace-b or --batch-size")
        elif sigma is None:
            try:
                sigma_ = accounting.calibrate_sigma(lap, q, steps, epsilon, delta)
            except ValueError as exc:
                raise CortexError(str(exc)) from None
            steps_ = steps
        else:
            sigma_, steps_ = sigma, steps
        clip_, lap_ = clip, lap
        ledger = accounting.make_ledger(sigma_, clip_, lap_, q, n, steps_, delta, epsilon_target=epsilon)
        if ledger.epsilon_spent > epsilon * (1 + 1e-9):
            raise CortexError(f"sigma {sigma_:g} and {steps_} steps spend epsilon {ledger.epsilon_spent:.4g} > "
                              f"--epsilon {epsilon:g}: refusing to run past the budget (drop --steps or --sigma "
                              "to calibrate)")
    if rc is not None:
        ledger.histogram_batch = histogram_batch
        if histogram_batch == "shared" and math.isfinite(ledger.epsilon_spent):
            run.warn("--histogram-batch shared: the histogram and the gradient read one Poisson batch, "
                     "but the accountant (like the paper's) composes them as separately subsampled; "
                     f"epsilon {ledger.epsilon_spent:.4g} may under-state the loss")
        counts = np.bincount(cells, minlength=rc.partition.n_cells)
        for message in cons.expected_cell_warnings(rc, counts, q, lap_):
            run.warn(message)
    p = Prepared()
    p.classes, p.encoder, p.constraints, p.cells, p.ledger = classes, encoder, rc, cells, ledger
    p.label, p.sensitive, p.n = label, sens, n
    p.hidden = [int(h) for h in _split_names(hidden)] if model_kind == "mlp" else []
    if model_kind == "mlp" and (not p.hidden or min(p.hidden) < 1):
        raise CortexError(f"--hidden {hidden!r}: give positive layer sizes, e.g. 64 or 128,64")
    return p


def _fit(run, table: dict, p: Prepared, *, model_kind, lr, lr_dual, dual_update, dual_momentum, dual_max,
         temperature, histogram_batch, generator_offset: int = 0, **_):
    """Encode, train, and return (tensors, metadata) of a dpfair-model artifact."""
    import math

    import torch

    from cortexkit.tools.dpfair import models, raco

    x, warnings = p.encoder.transform(table)
    for w in warnings:
        run.warn(w)
    device = run.device
    features = torch.as_tensor(x, device=device)
    index = {c: i for i, c in enumerate(p.classes)}
    labels = torch.as_tensor([index[str(v).strip()] for v in table[p.label]], device=device)
    cells = torch.as_tensor(p.cells, device=device) if p.cells is not None else None
    model = models.build_model(model_kind, features.shape[1], len(p.classes), p.hidden)
    if model_kind == "logistic":
        models.init_zero_(model)
    model.to(device)
    ledger = p.ledger
    config = raco.RacoConfig(
        steps=ledger.steps, sampling_rate=ledger.sampling_rate, sigma=ledger.sigma, clip_norm=ledger.clip_norm,
        laplace_b=math.inf if ledger.laplace_b is None else ledger.laplace_b, lr=lr, lr_dual=lr_dual,
        dual_update=dual_update, dual_momentum=dual_momentum, dual_max=dual_max, temperature=temperature,
        record_every=25 if run.verbose else 0, histogram_batch=histogram_batch)
    generator = run.torch_generator(generator_offset)

    def progress(iterable):
        return run.progress(iterable, total=ledger.steps, desc="RaCO-DP" if p.constraints else "DP-SGD")

    def evaluate(params):  # -v only: training-set numbers for the user's eyes, never stored
        with torch.no_grad():
            logits = torch.func.functional_call(model, params, (features,))
            return {"train_accuracy": round(float((logits.argmax(1) == labels).float().mean()), 4)}

    result = raco.train(model, features, labels, cells, p.constraints, config, generator, progress,
                        evaluate if run.verbose else None)
    for row in result.history:
        run.detail(" ".join(f"{k}={v}" for k, v in row.items()))
    tensors = {}
    for name, value in result.params_last.items():
        tensors[f"last.{name}"] = value.detach().float().cpu()
    for name, value in result.params_avg.items():
        tensors[f"average.{name}"] = value.detach().float().cpu()
    tensors["dual.last"] = result.dual_last.detach().cpu()
    tensors["dual.average"] = result.dual_avg.detach().cpu()
    metadata = {
        "dpfair.model": {"kind": model_kind, "hidden": p.hidden, "n_features": int(features.shape[1]),
                         "label": p.label, "classes": p.classes, "sensitive": p.sensitive,
                         "temperature": temperature, "feature_names": p.encoder.feature_names},
        "dpfair.encoder": p.encoder.to_dict(),
        "dpfair.constraints": p.constraints.to_dict() if p.constraints is not None else None,
        "dpfair.ledger": _json_ledger(ledger.to_dict()),
    }
    return tensors, metadata


def _json_ledger(d: dict) -> dict:
    import math

    return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


def _ledger_from_json(d: dict) -> dict:
    return {k: (float("inf") if v == "inf" else v) for k, v in d.items()}


class LoadedModel:
    """A dpfair-model artifact made usable: encoder, torch module with the chosen iterate, constraints."""

    def __init__(self, artifact, iterate: str):
        from cortexkit.formats.errors import CortexError
        from cortexkit.tools.dpfair import constraints as cons, models, table as tab

        self.info = artifact.meta_json("dpfair.model")
        self.encoder = tab.TableEncoder.from_dict(artifact.meta_json("dpfair.encoder"))
        spec = artifact.meta_json("dpfair.constraints")
        self.constraints = cons.RateConstraints.from_dict(spec) if spec else None
        self.ledger = _ledger_from_json(artifact.meta_json("dpfair.ledger"))
        self.classes = list(self.info["classes"])
        self.module = models.build_model(self.info["kind"], self.info["n_features"], len(self.classes),
                                         self.info["hidden"])
        prefix = {"last": "last.", "average": "average."}[iterate]
        state = {k[len(prefix):]: v for k, v in artifact.tensors.items() if k.startswith(prefix)}
        try:
            self.module.load_state_dict(state)
        except RuntimeError as exc:
            raise CortexError(f"{artifact.source}: model tensors do not match its architecture ({exc})") from None
        self.module.eval()

    def logits(self, table: dict, run):
        import torch

        x, warnings = self.encoder.transform(table)
        for w in warnings:
            run.warn(w)
        with torch.no_grad():
            return self.module(torch.as_tensor(x))


def _load_model(run, source: str, iterate: str) -> LoadedModel:
    artifact = run.read_artifact(source, kind=KIND_MODEL, max_version=MODEL_VERSION)
    return LoadedModel(artifact, iterate)


def _check_stdin(*sources: str) -> None:
    from cortexkit.formats.errors import CortexError

    if sum(1 for s in sources if s == "-") > 1:
        raise CortexError("only one input can come from stdin ('-')")


def _model_and_table(run, model: str, table: str, iterate: str):
    """(loaded model, table columns) for predict and evaluate; at most one of them from stdin."""
    _check_stdin(model, table)
    return _load_model(run, model, iterate), _read_table(table)


def _evaluate_table(model: LoadedModel, table: dict, source: str, run) -> dict:
    """Metrics of a model on a labelled table (sensitive columns needed for gaps and constraints)."""
    import numpy as np
    import torch

    from cortexkit.formats.errors import CortexError
    from cortexkit.tools.dpfair import metrics, table as tab

    label = model.info["label"]
    sens = list(model.info.get("sensitive") or [])
    _need_columns(table, [label], "label", source)
    tab.check_missing(table, [label])
    index = {c: i for i, c in enumerate(model.classes)}
    unknown = sorted(set(v for v in table[label] if v not in index))
    if unknown:
        raise CortexError(f"{source}: label values {unknown[:5]} are not classes of the model {model.classes}")
    y = np.array([index[v] for v in table[label]])
    logits = model.logits(table, run)
    pred = logits.argmax(1).numpy()
    report = {"rows": int(len(y)), "accuracy": float((pred == y).mean()), "error": float((pred != y).mean())}
    if sens:
        _need_columns(table, sens, "sensitive", source)
        tab.check_missing(table, sens)
        groups = np.array(["&".join(vals) for vals in zip(*[table[c] for c in sens])])
        report.update(metrics.fairness_gaps(pred, y, groups, len(model.classes)))
    if model.constraints is not None:
        attrs = [a for a in model.constraints.partition.attributes]
        _need_columns(table, attrs, "constraint", source)
        cells = torch.as_tensor(model.constraints.partition.cell_index(table))
        report["constraint_violation"] = metrics.constraint_report(
            model.constraints, logits, cells, float(model.info["temperature"]))
    led = model.ledger
    report["privacy"] = {"epsilon_spent": led["epsilon_spent"], "delta": led["delta"], "steps": led["steps"],
                         "sigma": led["sigma"], "laplace_b": led["laplace_b"], "laplace_scale": led.get("laplace_scale"),
                         "sampling_rate": led["sampling_rate"], "accountant": led["accountant"]}
    return report


# ---------------------------------------------------------------------------------------------
# verbs

# left out of --help (shown by --help-all and the man page): the paper's hyperparameters
ADVANCED_TRAIN = ("positive_label", "max_steps", "laplace_b", "batch_size", "clip", "lr_dual", "dual_update",
                  "dual_momentum", "dual_max", "temperature", "hidden", "no_standardize", "histogram_batch")


@verb(group, "train", output="artifact", torch_options=True, advanced=ADVANCED_TRAIN)
@click.argument("table", metavar="TABLE.csv|-")
@data_options
@train_options
def train(run, table, **options):
    """Train a classifier with RaCO-DP (or DP-SGD with --constraint none) -> dpfair-model."""
    data = _read_table(table)
    prepared = _prepare(run, data, "<stdin>" if table == "-" else table, **options)
    led = prepared.ledger
    run.info(f"privacy: epsilon {led.epsilon_spent:.4g} (delta {led.delta:g}) over {led.steps} steps, sigma "
             f"{led.sigma:.4g}, laplace-b {led.laplace_b}, q {led.sampling_rate:.4g}")
    tensors, metadata = _fit(run, data, prepared, **options)
    run.write_artifact(tensors, KIND_MODEL, metadata=metadata, version=str(MODEL_VERSION))


iterate_option = click.option(
    "--iterate", type=click.Choice(["last", "average"]), default="average", show_default=True,
    help="Which parameters: the last iterate or the average of all iterates.")


@verb(group, "predict", output="artifact", torch_options=True)
@click.argument("model", metavar="MODEL|-")
@click.argument("table", metavar="TABLE.csv|-")
@iterate_option
def predict(run, model, table, iterate):
    """Predict labels and class probabilities (no sensitive column needed) -> dpfair-predictions or CSV."""
    import torch

    from cortexkit.formats.stdio import write_bytes
    from cortexkit.formats.tables import write_csv

    loaded, data = _model_and_table(run, model, table, iterate)
    probs = torch.softmax(loaded.logits(data, run), dim=1)
    labels = probs.argmax(1)
    if str(run.output).lower().endswith(".csv"):
        import numpy as np

        names = np.array(loaded.classes, dtype=object)[labels.numpy()]
        rows = np.column_stack([names, probs.numpy().astype(object)])
        write_bytes(run.output, write_csv(rows, ["label"] + [f"p_{c}" for c in loaded.classes]), binary=False)
        return
    run.write_artifact({"labels": labels.to(torch.int64), "probabilities": probs.float()}, KIND_PREDICTIONS,
                       metadata={"dpfair.classes": loaded.classes})


@verb(group, "evaluate", output="report", torch_options=True)
@click.argument("model", metavar="MODEL|-")
@click.argument("table", metavar="TABLE.csv|-")
@iterate_option
def evaluate(run, model, table, iterate):
    """Accuracy, fairness gaps, constraint violations and epsilon spent, as YAML."""
    loaded, data = _model_and_table(run, model, table, iterate)
    report = _evaluate_table(loaded, data, "<stdin>" if table == "-" else table, run)
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
def account(run, sigma, laplace_b, sampling_rate, batch_size, n_records, steps, delta, epsilon, max_steps):
    """Epsilon of (sigma, b, q, T, delta), or the largest T / smallest sigma within a budget. No data."""
    import math

    from cortexkit.formats.errors import CortexError
    from cortexkit.tools.dpfair import accounting

    if sampling_rate is None:
        if batch_size is None or n_records is None:
            raise CortexError("give --sampling-rate q, or --batch-size B with --n records")
        sampling_rate = min(1.0, batch_size / n_records)
    if not (0 < sampling_rate <= 1):
        raise CortexError(f"the sampling rate must be in (0, 1], got {sampling_rate}")
    if not (0 < delta < 1):
        raise CortexError(f"--delta must be in (0, 1), got {delta}")
    if laplace_b is not None and not (laplace_b > 0 and math.isfinite(laplace_b)):
        raise CortexError(f"--laplace-b must be a positive finite number, got {laplace_b}")
    if sigma is not None and not (sigma > 0 and math.isfinite(sigma)):
        raise CortexError(f"--sigma must be a positive finite number, got {sigma}")
    if epsilon is not None and not (epsilon > 0 and math.isfinite(epsilon)):
        raise CortexError(f"--epsilon must be a positive finite number, got {epsilon}")
    report = {"mechanism": "Poisson-subsampled Gaussian" + (" + Poisson-subsampled Laplace histogram"
                                                             if laplace_b is not None else " (DP-SGD)")}
    if sigma is None:
        if epsilon is None or steps is None:
            raise CortexError("without --sigma give --epsilon and --steps to calibrate sigma")
        try:
            sigma = accounting.calibrate_sigma(laplace_b, sampling_rate, steps, epsilon, delta)
        except ValueError as exc:
            raise CortexError(str(exc)) from None
        report["solved_for"] = "sigma"
    elif steps is None:
        if epsilon is None:
            raise CortexError("give --steps (to get epsilon) or --epsilon (to get the largest number of steps)")
        steps = accounting.max_steps(sigma, laplace_b, sampling_rate, epsilon, delta, cap=max_steps)
        report["solved_for"] = "steps"
        if steps == max_steps:
            report["note"] = f"the step search stopped at --max-steps {max_steps}"
    else:
        report["solved_for"] = "epsilon"
    parts = accounting.epsilon_parts(sigma, laplace_b, sampling_rate, steps, delta)
    report.update({
        "sigma": sigma, "laplace_b": laplace_b,
        "laplace_scale": None if laplace_b is None else 1.0 / laplace_b,
        "sampling_rate": sampling_rate, "steps": steps, "delta": delta, "epsilon_target": epsilon,
        "epsilon": parts["total"], "epsilon_gaussian_only": parts["gaussian_only"],
        "epsilon_laplace_only": parts.get("laplace_only"),
        "within_budget": None if epsilon is None else bool(parts["total"] <= epsilon),
        "accountant": accounting.ACCOUNTANT_NAME,
        "laplace_convention": accounting.LAPLACE_CONVENTION,
    })
    run.write_report(report)


@verb(group, "sweep", output="report", torch_options=True, advanced=ADVANCED_TRAIN)
@click.argument("table", metavar="TABLE.csv|-")
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
    import statistics

    from cortexkit.formats.artifact import decode, encode, build_metadata
    from cortexkit.formats.errors import CortexError

    _check_stdin(table, test_table)
    grid = []
    for g in _split_names(gammas):
        try:
            grid.append(float(g))
        except ValueError:
            raise CortexError(f"--gammas: {g!r} is not a number") from None
    if not grid:
        raise CortexError("--gammas is empty")
    if options["constraint"] == "none":
        raise CortexError("sweep varies gamma: give a constraint, not none")
    if plot is not None:
        require_matplotlib()
    data = _read_table(table)
    test = _read_table(test_table)
    source = "<stdin>" if table == "-" else table
    plans = [_prepare(run, data, source, **{**options, "gamma": g}) for g in grid]   # all checks first
    rows = []
    for g, p in zip(grid, plans):
        runs = []
        for s in range(seeds):
            tensors, metadata = _fit(run, data, p, generator_offset=1000 * s, **options)
            artifact = decode(encode(tensors, build_metadata(KIND_MODEL, extra=metadata)), "<sweep>", "pt")
            runs.append(_evaluate_table(LoadedModel(artifact, iterate), test, test_table, run))
        row = {"gamma": g, "epsilon": p.ledger.epsilon_spent, "steps": p.ledger.steps, "sigma": p.ledger.sigma}
        for key in ("error", "accuracy", "dp_gap", "ovr_gap", "eo_gap"):
            vals = [r[key] for r in runs if key in r]
            if vals:
                row[key] = statistics.fmean(vals)
                row[f"{key}_sd"] = statistics.stdev(vals) if len(vals) > 1 else 0.0
        hard = [r["constraint_violation"]["max_violation_hard"] for r in runs]
        row["max_violation_hard"] = statistics.fmean(hard)
        rows.append(row)
        run.info(f"gamma {g:g}: error {row['error']:.4f} dp_gap {row.get('dp_gap', float('nan')):.4f}")
    report = {"constraint": options["constraint"], "epsilon_per_run": rows[0]["epsilon"],
              "delta": plans[0].ledger.delta, "runs": len(grid) * seeds,
              "privacy_note": "each run spends epsilon_per_run; releasing all of them composes "
                              "(at most runs x epsilon_per_run by basic composition)",
              "iterate": iterate, "rows": rows}
    if plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(4.5, 3.5))
        gap = "dp_gap" if "dp_gap" in rows[0] else "max_violation_hard"
        ax.plot([r[gap] for r in rows], [r["error"] for r in rows], "o-", label="RaCO-DP")
        for r in rows:
            ax.annotate(f"{r['gamma']:g}", (r[gap], r["error"]), fontsize=7)
        ax.set_xlabel(gap.replace("_", " ") + " (test)")
        ax.set_ylabel("misclassification (test)")
        ax.set_title(f"epsilon {rows[0]['epsilon']:.3g}")
        ax.legend()
        fig.tight_layout()
        run.write_figure(fig, plot, dpi=120)
        report["plot"] = plot
    run.write_report(report)

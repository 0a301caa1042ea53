"""The whole RaCO-DP method from Python: plan, train, predict, evaluate, account, sweep.

These are what ``cortexkit dp-fairness-train`` calls, one per verb; they take a table of columns
(name -> list of cell strings, as the encoder reads them) and typed configs, and raise
:class:`~cortexkit.formats.errors.CortexError` (or ``ValueError``) for anything the user must fix.
No click and no paths here: the command line reads files and writes artifacts.

    config = TrainConfig(label=">50K", sensitive=("sex",), epsilon=1.0)
    plan = dpfair.plan(table, config)                   # encoding, constraints, privacy ledger
    fitted = dpfair.train(table, config, plan, seed=0)  # -> tensors + metadata of a dpfair-model
    model = dpfair.Model(fitted.tensors, fitted.metadata)
    report = dpfair.evaluate(model, test_table)
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

from cortexkit.formats.errors import CortexError

from . import accounting, baseline, constraints as cons, metrics, models, raco, table as tab

KIND_MODEL = "dpfair-model"
KIND_PREDICTIONS = "dpfair-predictions"
MODEL_VERSION = 1
from .io import BUILTIN_CONSTRAINTS  # noqa: E402,F401
MAX_CELLS = 256
BUDGET_TOLERANCE = 0.02   # a run spends the budget asked for to within 2 %, or says why not
# Defaults chosen from n and the budget (see man/src/dp-fairness-train.yaml, "Defaults"):
SIGMA_TARGET = 10.0       # the noise multiplier the planner aims for at T = --max-steps
Q_MAX = 0.5               # largest default Poisson rate (above it subsampling amplifies little)
GROUP_MARGIN = 10 / math.sqrt(2.0)  # default q keeps each rate denominator's batch count >= 7.07 x its
                          # Laplace std (the expected_cell_warnings threshold), at most Q_MAX
STEP_LENGTH = 2.0         # default --lr = STEP_LENGTH / clip: the mean clipped gradient moves theta <= 2
CLIP_CONSTRAINED = 2.0    # default --clip with rate constraints (the paper's Adult setting is 3): chosen on
                          # Parkinsons and synthetic after COMPAS and Adult (clip 1 broke item 1), checked on German
CLIP_UNCONSTRAINED = 1.0  # default --clip without (--constraint none: DP-SGD); chosen on Adult and COMPAS,
                          # checked on German, Parkinsons and the synthetic table (issue 35, RESULTS.md)
COUNT_SHARE = 0.05        # default --count-epsilon = COUNT_SHARE x epsilon: the planner's noisy cell sizes
COUNT_STREAM = 0xC0      # seeds the count noise apart from the training loop's generator
VALIDATION_FRACTION = 0.1  # default --validation: rows held out to score the baselines on
VALIDATION_SHARE = 0.05   # default --validation-epsilon = VALIDATION_SHARE x epsilon (their Laplace histogram)
NONPRIVATE_TOL = 1e-5     # --non-private stops when the full gradient norm (and dual move) fall below this
DUAL_STEP = 0.03          # default --lr-dual = DUAL_STEP / gamma * sqrt(1000 / T) (0.6 at gamma 0.05, T 1000)
META_KEYS = ("dpfair.model", "dpfair.encoder", "dpfair.constraints", "dpfair.ledger")

from .io import Columns, as_columns  # noqa: E402  column name -> (n,) cell strings
Warn = Callable[[str], None]


def _no_warn(message: str) -> None:
    pass


@dataclass
class TrainConfig:
    """Everything ``train`` takes besides the table: the data roles, constraints, budget, optimiser.

    ``constraint`` is a built-in name (``BUILTIN_CONSTRAINTS``) or, with the parsed YAML mapping in
    ``constraint_spec``, the spec's name (its file, for reports). ``sigma``/``steps`` None: planned from the budget.
    """
    label: str
    sensitive: Sequence[str] = ()
    drop: Sequence[str] = ()
    categorical: Sequence[str] = ()     # numerically coded columns to one-hot encode
    constraint: str = "demographic-parity"
    constraint_spec: Any = None
    gamma: float = 0.05
    positive_label: str | None = None
    epsilon: float = 1.0
    delta: float = 1e-5
    sigma: float | None = None
    steps: int | None = None
    max_steps: int = 1000
    laplace_b: float = 0.03
    count_epsilon: float | None = None  # None: COUNT_SHARE x epsilon, spent on the constraint cells' sizes
    batch_size: float | None = None     # None: planned from n and the budget (default_sampling_rate)
    clip: float | None = None           # None: CLIP_CONSTRAINED, or CLIP_UNCONSTRAINED with constraint "none"
    lr: float | None = None             # None: STEP_LENGTH / clip
    lr_dual: float | None = None        # None: DUAL_STEP / gamma
    dual_update: str = "heavy-ball"
    dual_momentum: float = 0.0
    dual_max: float = math.inf
    temperature: float = 8.0
    model_kind: str = "logistic"
    hidden: Sequence[int] = (64,)
    standardize: bool = True
    histogram_batch: str = "independent"
    dual_rates: str = "hard"            # the released histogram (dual step, denominators) counts argmax predictions
    clip_split: str = "joint"           # clip CE + rate term as a whole to C, or each part to C / 2 ("separate")
    average_from: float = 0.0           # the averaged iterate: the mean of the last (1 - average_from) of the
                                        # iterates (0: all of them, the paper's uniform average)
    non_private: bool = False
    allow_small_groups: bool = False    # train although a group's noisy count is mostly noise
    validation: float = VALIDATION_FRACTION   # share of rows held out to score the baselines (0: none)
    validation_epsilon: float | None = None   # None: VALIDATION_SHARE x epsilon (inf when non-private)
    min_class_rows: int = 10            # a label value with fewer rows is an error (a stray value)


@dataclass
class Plan:
    """A training table encoded for RaCO-DP, with the constraint set and the privacy plan."""
    classes: list[str]
    encoder: tab.TableEncoder
    constraints: cons.RateConstraints | None
    cells: np.ndarray | None            # (n,) int64 partition cell of each record
    ledger: accounting.PrivacyLedger
    label: str
    sensitive: list[str]
    n: int
    hidden: list[int]
    lr: float                           # the primal and dual steps used (the defaults resolved)
    lr_dual: float
    holdout: np.ndarray | None = None   # (rows of the table,) bool: held out of training for the baseline check
    validation_epsilon: float = 0.0     # pure epsilon of the held-out histogram (inf: exact, non-private)


@dataclass
class Fitted:
    """A trained model as the tensors and (JSON-able) metadata of a dpfair-model artifact."""
    tensors: dict[str, torch.Tensor]
    metadata: dict[str, Any]
    history: list[dict] = field(default_factory=list)
    stop: dict = field(default_factory=dict)   # ran, planned, reason[, train_violation: the released
                                               # histograms' mean max(Gamma - gamma) over the last quarter]


def need_columns(table: Columns, names: Iterable[str], what: str, source: str) -> None:
    missing = [c for c in names if c not in table]
    if missing:
        raise CortexError(f"{source}: no {what} column(s) {missing} (columns: {', '.join(list(table)[:20])})")


def check_privacy_args(epsilon: float, delta: float, n: int, warn: Warn = _no_warn) -> None:
    if not (epsilon > 0) or math.isinf(epsilon) or math.isnan(epsilon):
        raise CortexError(f"--epsilon must be a positive finite number, got {epsilon} "
                          "(use --non-private for no privacy)")
    if not (0 < delta < 1):
        raise CortexError(f"--delta must be in (0, 1), got {delta}")
    if n and delta >= 1.0 / n:
        warn(f"delta {delta:g} >= 1/n = {1.0 / n:.3g}: such a delta allows releasing a record outright; "
             "use delta well below 1/n")


def _check_classes(values: list[str], classes: list[str], label: str, threshold: int, source: str) -> None:
    """A label value with fewer than ``threshold`` rows (a stray value) is an error naming it."""
    counts = {c: 0 for c in classes}
    for v in values:
        counts[str(v).strip()] = counts.get(str(v).strip(), 0) + 1
    rare = sorted(((c, k) for c, k in counts.items() if k < threshold), key=lambda ck: ck[1])
    if rare:
        shown = ", ".join(f"{c!r} ({k} row{'s' if k != 1 else ''})" for c, k in rare[:5])
        raise CortexError(f"{source}: label column {label!r} has value(s) {shown} with fewer than {threshold} "
                          "rows: a stray value? fix or drop those rows")


def _constraints(table: Columns, config: TrainConfig, classes: list[str], features: list[str],
                 warn: Warn) -> cons.RateConstraints | None:
    sens, label, gamma = list(config.sensitive), config.label, config.gamma
    kind = config.constraint
    if kind == "none":
        return None
    if not (gamma >= 0) or math.isinf(gamma):
        raise CortexError(f"--gamma must be a finite number >= 0, got {gamma} (a constraint spec may give "
                          "negative per-constraint gammas)")
    if kind in ("demographic-parity", "equalized-odds"):
        if not sens:
            raise CortexError(f"--constraint {kind} needs --sensitive COL")
        return (cons.demographic_parity(sens, table, classes, gamma) if kind == "demographic-parity"
                else cons.equalized_odds(label, sens, table, classes, gamma))
    if kind == "fnr":
        return cons.false_negative_rate(label, table, classes, gamma, config.positive_label)
    spec = config.constraint_spec
    if spec is None:
        raise CortexError(f"--constraint {kind!r}: not one of {', '.join(BUILTIN_CONSTRAINTS)} "
                          "and not a YAML file")
    for attr in (spec or {}).get("partition", []) if isinstance(spec, dict) else []:
        if attr in table:
            tab.check_missing(table, [attr])
    rc = cons.from_spec(spec, label, table, classes, gamma)
    overlap = (set(rc.partition.attributes) - {label}) & set(features)
    if overlap:
        warn(f"constraint spec uses {sorted(overlap)} which are also features; add them to --drop or "
             "--sensitive to keep them out of the model")
    return rc


def default_sampling_rate(config: TrainConfig, n: int, laplace_b: float | None, group_rate: float = 0.0,
                          count_epsilon: float = 0.0) -> float:
    """The Poisson rate q when --batch-size is not given, from n, the budget and the groups.

    The accountant's trade-off: at T = --max-steps steps (or --steps) and noise multiplier
    SIGMA_TARGET (or --sigma), the largest q within (epsilon, delta); raised to GROUP_MARGIN x
    ``group_rate`` (the rate at which the smallest constraint group's batch count equals its Laplace
    noise) so the histogram's rates are not mostly noise, and at most Q_MAX and 1 batch-of-n. When q is
    raised, the step search then fits fewer steps at SIGMA_TARGET (small data: few, large batches).
    ``group_rate`` comes from the noisy cell counts (``count_epsilon`` of the budget), so q is private.
    """
    steps = config.steps or config.max_steps
    sigma = config.sigma or SIGMA_TARGET
    q_max = Q_MAX if n >= 2 else 1.0
    if config.non_private:
        return 1.0     # exact full-batch gradient descent-ascent: nothing to amplify, nothing to average out
    if not (config.epsilon > 0 and math.isfinite(config.epsilon)) or not (0 < config.delta < 1):
        q = min(q_max, 0.1)
    else:
        try:
            q = accounting.sampling_rate_for(sigma, laplace_b, steps, config.epsilon, config.delta, q_max=q_max,
                                             count_epsilon=count_epsilon)
        except ValueError:
            q = 1e-6   # nothing fits: the checks below say so with the numbers
    return float(min(q_max, max(q, GROUP_MARGIN * group_rate), 1.0))


def _ledger(config: TrainConfig, n: int, laplace_b: float | None, warn: Warn,
            group_rate: float = 0.0, count_epsilon: float = 0.0,
            validation_epsilon: float = 0.0) -> accounting.PrivacyLedger:
    """The privacy plan: q from the batch size (or planned), then T (or sigma) from the budget,
    with the cell-count release (``count_epsilon``, 0: none) and the held-out rows' histogram
    (``validation_epsilon``, 0: none) composed in."""
    ce = (count_epsilon, validation_epsilon)
    if config.batch_size is None:
        q = default_sampling_rate(config, n, laplace_b, group_rate, ce)
    else:
        if not (config.batch_size > 0) or math.isinf(config.batch_size):
            raise CortexError(f"--batch-size must be a positive finite number, got {config.batch_size}")
        q = min(1.0, float(config.batch_size) / n)
    epsilon, delta, sigma, steps, clip = config.epsilon, config.delta, config.sigma, config.steps, resolved_clip(config)
    if config.non_private:
        return accounting.make_ledger(0.0, math.inf, None if laplace_b is None else math.inf, q, n,
                                      steps or config.max_steps, delta if 0 < delta < 1 else 1e-5)
    check_privacy_args(epsilon, delta, n, warn)
    if not (clip > 0) or math.isinf(clip):
        raise CortexError(f"--clip must be a positive finite number, got {clip}")
    if laplace_b is not None and (not (laplace_b > 0) or math.isinf(laplace_b)):
        raise CortexError(f"--laplace-b must be a positive finite number, got {laplace_b}")
    if sigma is not None and not (sigma > 0):
        raise CortexError(f"--sigma must be > 0 for a private run, got {sigma} (or use --non-private)")
    if steps is None:
        sigma_ = SIGMA_TARGET if sigma is None else sigma
        steps_ = accounting.max_steps(sigma_, laplace_b, q, epsilon, delta, cap=config.max_steps, count_epsilon=ce)
        if steps_ == 0:
            one = accounting.epsilon_spent(sigma_, laplace_b, q, 1, delta, ce)
            raise CortexError(f"the budget epsilon {epsilon:g} (delta {delta:g}) allows zero steps: one step "
                              f"already spends {one:.3g} with sigma {sigma_:g}, laplace-b {laplace_b}, q {q:.4g}"
                              + (f", count-epsilon {count_epsilon:.3g}" if count_epsilon else "")
                              + (f", validation-epsilon {validation_epsilon:.3g}" if validation_epsilon else "") + "; "
                              "raise --sigma, lower --laplace-b or --batch-size")
        if sigma is None and (accounting.epsilon_spent(sigma_, laplace_b, q, steps_, delta, ce)
                              < (1 - BUDGET_TOLERANCE) * epsilon):
            # T hit the cap (or is too coarse): spend the rest of the budget on less noise at this T
            sigma_ = accounting.calibrate_sigma(laplace_b, q, steps_, epsilon, delta, count_epsilon=ce)
    elif sigma is None:
        try:
            sigma_ = accounting.calibrate_sigma(laplace_b, q, steps, epsilon, delta, count_epsilon=ce)
        except ValueError as exc:
            raise CortexError(str(exc)) from None
        steps_ = steps
    else:
        sigma_, steps_ = sigma, steps
    ledger = accounting.make_ledger(sigma_, clip, laplace_b, q, n, steps_, delta, epsilon_target=epsilon,
                                    count_epsilon=count_epsilon, validation_epsilon=validation_epsilon)
    if ledger.epsilon_spent > epsilon * (1 + 1e-9):
        raise CortexError(f"sigma {sigma_:g} and {steps_} steps spend epsilon {ledger.epsilon_spent:.4g} > "
                          f"--epsilon {epsilon:g}: refusing to run past the budget (drop --steps or --sigma "
                          "to calibrate)")
    message = budget_shortfall(ledger.epsilon_spent, epsilon, sigma_, laplace_b, q, steps_, delta,
                               capped=config.steps is None and steps_ == config.max_steps,
                               fixed=config.steps is not None, count_epsilon=ce)
    if message:
        warn(message)
    return ledger


def resolved_clip(config: TrainConfig) -> float:
    """--clip, else its default: CLIP_UNCONSTRAINED without constraints (plain DP-SGD, where only the
    cross-entropy gradient is clipped), CLIP_CONSTRAINED with them (the rate term needs more room: at clip 1
    tight gammas stop holding on test rows)."""
    if config.clip is not None:
        return config.clip
    return CLIP_UNCONSTRAINED if config.constraint == "none" else CLIP_CONSTRAINED


def budget_shortfall(spent: float, epsilon: float, sigma: float, laplace_b: float | None, q: float, steps: int,
                     delta: float, *, capped: bool, fixed: bool, count_epsilon: float = 0.0) -> str | None:
    """None when ``spent`` is within BUDGET_TOLERANCE of ``epsilon``; else a sentence saying why it is
    lower and the sigma that would spend the budget in the same ``steps``."""
    if not (spent < (1 - BUDGET_TOLERANCE) * epsilon):
        return None
    if capped:
        why = f"the step search stopped at --max-steps {steps}"
    elif fixed:
        why = f"--sigma {sigma:g} with --steps {steps} was asked for"
    else:
        why = f"{steps} whole steps at sigma {sigma:g} fit, {steps + 1} do not"
    try:
        wanted = accounting.calibrate_sigma(laplace_b, q, steps, epsilon, delta, count_epsilon=count_epsilon)
        shown = 10 ** (math.floor(math.log10(wanted)) - 3)       # 4 significant digits, rounded up (within budget)
        fix = (f"sigma {math.ceil(wanted / shown - 1e-9) * shown:.4g} would spend it in "
               f"{steps} steps")
    except ValueError as exc:
        fix = f"no sigma spends it in {steps} steps ({exc})"
    return (f"epsilon spent {spent:.4g} is {100 * (1 - spent / epsilon):.1f} % below the target {epsilon:g}: {why}; "
            f"{fix}")


def count_epsilon(config: TrainConfig, constrained: bool) -> float:
    """The pure epsilon the planner spends on the constraint cells' sizes; 0 when none are released
    (no constraints, or --non-private, whose exact counts cost nothing)."""
    if not constrained or config.non_private:
        return 0.0
    return _epsilon_share(config.count_epsilon, COUNT_SHARE, config.epsilon, "--count-epsilon")


def _epsilon_share(given: float | None, share: float, epsilon: float, option: str) -> float:
    """The part of --epsilon an extra release spends: ``given``, else ``share`` of epsilon (0 when
    epsilon is 0 or infinite); a given part must lie strictly between 0 and epsilon."""
    if given is None:
        return share * epsilon if epsilon > 0 and math.isfinite(epsilon) else 0.0
    if not (0 < given < epsilon):
        raise CortexError(f"{option} must be above 0 and below --epsilon {epsilon:g}, got {given}")
    return float(given)


def noisy_cell_counts(cells: np.ndarray, n_cells: int, count_epsilon: float, seed: int = 0) -> np.ndarray:
    """(n_cells,) record counts of the constraint cells, each plus Laplace(1 / count_epsilon) noise and
    floored at 0 (one record moves one count by 1: pure count_epsilon-DP); exact when count_epsilon is 0."""
    counts = np.bincount(cells, minlength=n_cells).astype(np.float64)
    if count_epsilon > 0:
        rng = np.random.default_rng([COUNT_STREAM, int(seed) % 2 ** 63])
        counts = np.maximum(counts + rng.laplace(0.0, 1.0 / count_epsilon, n_cells), 0.0)
    return counts


def plan(table: Columns, config: TrainConfig, *, source: str = "<table>", warn: Warn = _no_warn,
         seed: int = 0) -> Plan:
    """Validate everything and plan the privacy budget before any training.

    table: column -> (n,) cell strings. Encodes the features, builds the constraint partition and
    its (n,) cells, and fixes (sigma, laplace_b, q, T) within (epsilon, delta). The default q, the
    feasibility and small-group checks read the cells' sizes only through ``noisy_cell_counts``
    (``seed`` seeds that noise), whose epsilon the ledger composes in.
    """
    table = as_columns(table)
    label, sens, dropped = config.label, list(config.sensitive), list(config.drop)
    need_columns(table, list(config.categorical), "--categorical", source)
    need_columns(table, [label], "label", source)
    need_columns(table, sens, "sensitive", source)
    need_columns(table, dropped, "--drop", source)
    if label in sens:
        raise CortexError(f"--label {label!r} is also named in --sensitive")
    if label in dropped:
        raise CortexError(f"--drop names the label column {label!r}; the label is never a feature, so drop "
                          "only feature columns (or choose another --label)")
    tab.check_missing(table, [label] + sens, source)
    classes = tab.label_classes(table[label], label)
    n = len(table[label])
    _check_classes(table[label], classes, label, config.min_class_rows, source)
    if not (0 <= config.validation < 1):
        raise CortexError(f"--validation must be a share in [0, 1), got {config.validation}")
    holdout = baseline.holdout_mask(n, config.validation, seed)
    if holdout is not None:
        table, n = take_rows(table, ~holdout), int((~holdout).sum())
    features = [c for c in table if c != label and c not in sens and c not in dropped]
    if not features:
        raise CortexError(f"{source}: no feature columns left after label, sensitive and --drop")
    tab.check_missing(table, features, source)
    encoder = tab.TableEncoder.fit(table, features, standardize=config.standardize,
                                   categorical=set(config.categorical) | table.categorical, source=source)
    rc = _constraints(table, config, classes, features, warn)
    if rc is not None and rc.partition.n_cells > MAX_CELLS:
        sizes = ", ".join(f"{a}: {len(l)}" for a, l in zip(rc.partition.attributes, rc.partition.levels))
        raise CortexError(f"the constraint partition has {rc.partition.n_cells} cells ({sizes}); at most {MAX_CELLS} "
                          "are supported (each needs enough records per batch against the noise): bin continuous "
                          "sensitive columns or merge small groups first")
    cells = rc.partition.cell_index(table) if rc is not None else None
    ce = count_epsilon(config, rc is not None)
    counts = None if rc is None else noisy_cell_counts(cells, rc.partition.n_cells, ce, seed)
    if rc is not None and not cons.feasible(rc, counts):
        raise CortexError(f"the constraints {rc.names[:4]}{'...' if len(rc.names) > 4 else ''} cannot all hold "
                          f"on {source}: no classifier (not even one that sees every cell) meets them"
                          + (" on its noisy cell counts" if ce else "") + "; loosen the gammas")
    group_rate = 0.0 if rc is None else cons.group_noise_rate(rc, counts, config.laplace_b)
    ve = validation_epsilon(config) if holdout is not None else 0.0
    ledger = _ledger(config, n, None if rc is None else config.laplace_b, warn, group_rate, ce,
                     0.0 if math.isinf(ve) else ve)
    if rc is not None:
        ledger.histogram_batch = config.histogram_batch
        ledger.clip_split = config.clip_split
        if config.histogram_batch == "shared" and math.isfinite(ledger.epsilon_spent):
            warn("--histogram-batch shared: the histogram and the gradient read one Poisson batch, "
                 "but the accountant (like the paper's) composes them as separately subsampled; "
                 f"epsilon {ledger.epsilon_spent:.4g} may under-state the loss")
        laplace = ledger.laplace_b
        small = cons.small_groups(rc, counts, ledger.sampling_rate, laplace)
        if small and not config.allow_small_groups:
            names, expected, noise = small[0]
            raise CortexError(f"group {names} has an expected count of {expected:.1f} per batch (noisy size), below the "
                              f"{noise:.1f} std of its Laplace noise ({len(small)} such group(s)): its rates would "
                              "be noise; merge small groups, raise --batch-size or --laplace-b, or give "
                              "--allow-small-groups")
        for message in cons.expected_cell_warnings(rc, counts, ledger.sampling_rate, laplace):
            warn(message)
    hidden = [int(h) for h in config.hidden] if config.model_kind == "mlp" else []
    if config.model_kind == "mlp" and (not hidden or min(hidden) < 1):
        raise CortexError(f"--hidden {','.join(map(str, config.hidden))!r}: give positive layer sizes, "
                          "e.g. 64 or 128,64")
    if config.lr is not None:
        lr = config.lr
    elif config.non_private and config.model_kind == "logistic":
        lr = nonprivate_step(encoder.transform(table)[0])
    else:
        clip = resolved_clip(config)
        lr = STEP_LENGTH / (clip if math.isfinite(clip) else 4.0)
    lr_dual = (config.lr_dual if config.lr_dual is not None
               else DUAL_STEP / max(config.gamma, 0.005) * math.sqrt(1000.0 / max(ledger.steps, 1)))
    for name, value in (("--lr", lr), ("--lr-dual", lr_dual)):
        if not (value > 0) or math.isinf(value):
            raise CortexError(f"{name} must be a positive finite number, got {value}")
    return Plan(classes, encoder, rc, cells, ledger, label, sens, n, hidden, float(lr), float(lr_dual),
                holdout, ve)


def take_rows(table: Columns, keep: np.ndarray) -> Columns:
    """The rows of ``table`` where ``keep`` (rows,) is true, as Columns (declared categoricals kept)."""
    index = np.flatnonzero(keep)
    return Columns({c: [v[i] for i in index] for c, v in table.items()}, getattr(table, "categorical", ()),
                   getattr(table, "source", "<table>"))


def validation_epsilon(config: TrainConfig) -> float:
    """Pure epsilon of the held-out rows' Laplace histogram: --validation-epsilon, else VALIDATION_SHARE x
    epsilon; inf (the exact histogram) for --non-private."""
    if config.non_private:
        return math.inf
    return _epsilon_share(config.validation_epsilon, VALIDATION_SHARE, config.epsilon, "--validation-epsilon")


def nonprivate_step(x: np.ndarray) -> float:
    """Step size 1 / L of full-batch gradient descent on the softmax cross-entropy of a linear model:
    its Hessian is at most 1/2 lambda_max([x, 1]^T [x, 1] / n) (the softmax Jacobian's norm is <= 1/2).
    x (n, d). Non-private only: it reads the data exactly."""
    xa = np.concatenate([np.asarray(x, dtype=np.float64), np.ones((len(x), 1))], axis=1)
    top = float(np.linalg.eigvalsh(xa.T @ xa / max(len(xa), 1))[-1])
    return 1.0 / (0.5 * max(top, 1e-12))


def _json_ledger(d: dict) -> dict:
    return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


def _ledger_from_json(d: dict) -> dict:
    return {k: (float("inf") if v == "inf" else v) for k, v in d.items()}


def train(table: Columns, config: TrainConfig, plan_: Plan | None = None, *, seed: int = 0,
          generator_offset: int = 0, device: str | torch.device = "cpu",
          progress: Callable[..., Iterable] | None = None, warn: Warn = _no_warn,
          log: Callable[[str], None] | None = None) -> Fitted:
    """Encode, train with RaCO-DP (DP-SGD without constraints) and return the model's artifact parts.

    The loop's randomness (batches, Laplace and Gaussian noise) comes from a torch.Generator seeded
    with ``seed + generator_offset``; an MLP's initial weights come from torch's global generator
    (``torch.manual_seed``), as the command line seeds it. ``log``: a line every 25 steps with the
    dual and training accuracy (for the user's eyes only, never stored).
    """
    table = as_columns(table)
    p = plan_ if plan_ is not None else plan(table, config, warn=warn, seed=seed)
    if p.holdout is not None:
        table = take_rows(table, ~p.holdout)      # the held-out rows only ever meet the baseline check
    x, warnings = p.encoder.transform(table)
    for w in warnings:
        warn(w)
    features = torch.as_tensor(x, device=device)
    index = {c: i for i, c in enumerate(p.classes)}
    labels = torch.as_tensor([index[str(v).strip()] for v in table[p.label]], device=device)
    cells = torch.as_tensor(p.cells, device=device) if p.cells is not None else None
    model = models.build_model(config.model_kind, features.shape[1], len(p.classes), p.hidden)
    if config.model_kind == "logistic":
        models.init_zero_(model)
    model.to(device)
    ledger = p.ledger
    rconfig = raco.RacoConfig(
        steps=ledger.steps, sampling_rate=ledger.sampling_rate, sigma=ledger.sigma, clip_norm=ledger.clip_norm,
        laplace_b=math.inf if ledger.laplace_b is None else ledger.laplace_b, lr=p.lr,
        lr_dual=p.lr_dual, dual_update=config.dual_update, dual_momentum=config.dual_momentum,
        dual_max=config.dual_max, temperature=config.temperature, record_every=25 if log else 0,
        histogram_batch=config.histogram_batch, dual_rates=config.dual_rates, clip_split=config.clip_split,
        tol=NONPRIVATE_TOL if config.non_private and ledger.sampling_rate >= 1 else 0.0,
        average_from=config.average_from)
    generator = torch.Generator()
    generator.manual_seed(seed + generator_offset)

    def steps(iterable):
        if progress is None:
            return iterable
        return progress(iterable, total=ledger.steps, desc="RaCO-DP" if p.constraints else "DP-SGD")

    def evaluate_train(params):  # log only: training-set numbers for the user's eyes, never stored
        with torch.no_grad():
            logits = torch.func.functional_call(model, params, (features,))
            return {"train_accuracy": round(float((logits.argmax(1) == labels).float().mean()), 4)}

    result = raco.train(model, features, labels, cells, p.constraints, rconfig, generator, steps,
                        evaluate_train if log else None)
    if log:
        for row in result.history:
            log(" ".join(f"{k}={v}" for k, v in row.items()))
    tensors = {}
    for name, value in result.params_last.items():
        tensors[f"last.{name}"] = value.detach().float().cpu()
    for name, value in result.params_avg.items():
        tensors[f"average.{name}"] = value.detach().float().cpu()
    tensors["dual.last"] = result.dual_last.detach().cpu()
    tensors["dual.average"] = result.dual_avg.detach().cpu()
    metadata = {
        "dpfair.model": {"kind": config.model_kind, "hidden": p.hidden, "n_features": int(features.shape[1]),
                         "label": p.label, "classes": p.classes, "sensitive": p.sensitive,
                         "temperature": config.temperature, "feature_names": p.encoder.feature_names,
                         "lr": p.lr, "lr_dual": p.lr_dual if p.constraints is not None else None,
                         "average_from": config.average_from},
        "dpfair.encoder": p.encoder.to_dict(),
        "dpfair.constraints": p.constraints.to_dict() if p.constraints is not None else None,
        "dpfair.ledger": _json_ledger(ledger.to_dict()),
    }
    reason = result.stop_reason
    if reason == "completed" and rconfig.tol > 0:
        reason = "step-cap"     # non-private: the planned steps ran out before the gradient vanished
    stop = {"ran": result.steps_run, "planned": ledger.steps, "reason": reason}
    if result.violation_tail is not None:
        j = int(result.violation_tail.argmax())
        stop["train_violation"] = round(float(result.violation_tail[j]), 4)
        stop["train_violation_se"] = round(float(result.violation_tail_se[j]), 5)
        # the constraint values themselves (violation + gamma) of the most violated constraint
        stop["train_value"] = round(float(result.violation_tail[j]) + float(p.constraints.gamma[j]), 5)
    return Fitted(tensors, metadata, result.history, stop)


class Model:
    """A dpfair-model made usable: encoder, torch module with the chosen iterate, constraints.

    tensors: the artifact's tensors; metadata: its dpfair.* values, JSON-decoded.
    """

    def __init__(self, tensors: dict, metadata: dict, iterate: str = "average", source: str = "<model>"):
        self.info = metadata["dpfair.model"]
        self.encoder = tab.TableEncoder.from_dict(metadata["dpfair.encoder"])
        spec = metadata.get("dpfair.constraints")
        self.constraints = cons.RateConstraints.from_dict(spec) if spec else None
        self.ledger = _ledger_from_json(metadata["dpfair.ledger"])
        self.classes = list(self.info["classes"])
        self.module = models.build_model(self.info["kind"], self.info["n_features"], len(self.classes),
                                         self.info["hidden"])
        prefix = {"last": "last.", "average": "average."}[iterate]
        state = {k[len(prefix):]: torch.as_tensor(v) for k, v in tensors.items() if k.startswith(prefix)}
        try:
            self.module.load_state_dict(state)
        except RuntimeError as exc:
            raise CortexError(f"{source}: model tensors do not match its architecture ({exc})") from None
        self.module.eval()

    @classmethod
    def from_artifact(cls, artifact, iterate: str = "average") -> "Model":
        return cls(artifact.tensors, {k: artifact.meta_json(k) for k in META_KEYS}, iterate, artifact.source)

    @classmethod
    def from_fitted(cls, fitted: Fitted, iterate: str = "average") -> "Model":
        """As if written and read back (metadata through JSON, as an artifact stores it)."""
        return cls(fitted.tensors, json.loads(json.dumps(fitted.metadata)), iterate, "<sweep>")

    def logits(self, table: Columns, warn: Warn = _no_warn) -> torch.Tensor:
        """(rows, classes) logits of the table's rows."""
        x, warnings = self.encoder.transform(as_columns(table))
        for w in warnings:
            warn(w)
        with torch.no_grad():
            return self.module(torch.as_tensor(x))


def _check_features(model: Model, table: Columns, source: str) -> None:
    """The model's feature columns are present and complete, errors naming the table's file."""
    missing = [c for c in model.encoder.columns if c not in table]
    if missing:
        raise CortexError(f"{source}: table lacks the feature column(s) {missing} the model was trained on")
    tab.check_missing(table, model.encoder.columns, source)


def predict(model: Model, table: Columns, warn: Warn = _no_warn,
            source: str = "<table>") -> tuple[torch.Tensor, torch.Tensor]:
    """(labels (rows,) int64 class indices, probabilities (rows, classes) float32)."""
    table = as_columns(table)
    _check_features(model, table, source)
    probs = torch.softmax(model.logits(table, warn), dim=1)
    return probs.argmax(1).to(torch.int64), probs.float()


def evaluate(model: Model, table: Columns, source: str = "<table>", warn: Warn = _no_warn) -> dict:
    """Metrics of a model on a labelled table (sensitive columns needed for gaps and constraints)."""
    table = as_columns(table)
    label = model.info["label"]
    sens = list(model.info.get("sensitive") or [])
    need_columns(table, [label], "label", source)
    tab.check_missing(table, [label], source)
    _check_features(model, table, source)
    index = {c: i for i, c in enumerate(model.classes)}
    unknown = sorted(set(v for v in table[label] if v not in index))
    if unknown:
        raise CortexError(f"{source}: label values {unknown[:5]} are not classes of the model {model.classes}")
    y = np.array([index[v] for v in table[label]])
    logits = model.logits(table, warn)
    pred = logits.argmax(1).numpy()
    report = {"rows": int(len(y)), "accuracy": float((pred == y).mean()), "error": float((pred != y).mean())}
    if sens:
        need_columns(table, sens, "sensitive", source)
        tab.check_missing(table, sens, source)
        groups = np.array(["&".join(vals) for vals in zip(*[table[c] for c in sens])])
        report.update(metrics.fairness_gaps(pred, y, groups, len(model.classes)))
    if model.constraints is not None:
        need_columns(table, model.constraints.partition.attributes, "constraint", source)
        cells = torch.as_tensor(model.constraints.partition.cell_index(table))
        report["constraint_violation"] = metrics.constraint_report(
            model.constraints, logits, cells, float(model.info["temperature"]))
    led = model.ledger
    report["privacy"] = {"epsilon_spent": led["epsilon_spent"], "delta": led["delta"], "steps": led["steps"],
                         "sigma": led["sigma"], "laplace_b": led["laplace_b"], "laplace_scale": led.get("laplace_scale"),
                         "sampling_rate": led["sampling_rate"], "accountant": led["accountant"]}
    return report


@dataclass
class AccountConfig:
    """A mechanism to account: give three of (sigma, steps, epsilon) minus one, plus q or (B, n)."""
    sigma: float | None = None
    laplace_b: float | None = None
    sampling_rate: float | None = None
    batch_size: float | None = None
    n_records: int | None = None
    steps: int | None = None
    delta: float = 1e-5
    epsilon: float | None = None
    max_steps: int = 5000
    count_epsilon: float | None = None  # train's one-off Laplace release of the constraint cells' sizes
    validation_epsilon: float | None = None  # train's Laplace histogram of the held-out rows


def account(config: AccountConfig, warn: Warn = _no_warn) -> dict:
    """Epsilon of (sigma, b, q, T, delta), or the largest T / smallest sigma within a budget."""
    sigma, laplace_b, steps, delta, epsilon = (config.sigma, config.laplace_b, config.steps, config.delta,
                                               config.epsilon)
    ce = config.count_epsilon or 0.0
    if not (ce >= 0 and math.isfinite(ce)):
        raise CortexError(f"--count-epsilon must be a positive finite number, got {ce}")
    ve = config.validation_epsilon or 0.0
    if not (ve >= 0 and math.isfinite(ve)):
        raise CortexError(f"--validation-epsilon must be a positive finite number, got {ve}")
    one_off = (ce, ve)
    sampling_rate = config.sampling_rate
    if sampling_rate is None:
        if config.batch_size is None or config.n_records is None:
            raise CortexError("give --sampling-rate q, or --batch-size B with --n records")
        if config.batch_size > config.n_records:  # q = B / n would pass 1: not what was meant
            raise CortexError(f"--batch-size {config.batch_size:g} is more than the {config.n_records} "
                              "records of --n; the expected batch is at most n (q = B / n <= 1)")
        sampling_rate = config.batch_size / config.n_records
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
                                                             if laplace_b is not None else " (DP-SGD)")
              + (" + one Laplace count of the cells" if ce else "")
              + (" + one Laplace histogram of the held-out rows" if ve else "")}
    if sigma is None:
        if epsilon is None or steps is None:
            raise CortexError("without --sigma give --epsilon and --steps to calibrate sigma")
        try:
            sigma = accounting.calibrate_sigma(laplace_b, sampling_rate, steps, epsilon, delta, count_epsilon=one_off)
        except ValueError as exc:
            raise CortexError(str(exc)) from None
        report["solved_for"] = "sigma"
    elif steps is None:
        if epsilon is None:
            raise CortexError("give --steps (to get epsilon) or --epsilon (to get the largest number of steps)")
        steps = accounting.max_steps(sigma, laplace_b, sampling_rate, epsilon, delta, cap=config.max_steps,
                                     count_epsilon=one_off)
        report["solved_for"] = "steps"
        if steps == config.max_steps:
            report["note"] = f"the step search stopped at --max-steps {config.max_steps}"
    else:
        report["solved_for"] = "epsilon"
    parts = accounting.epsilon_parts(sigma, laplace_b, sampling_rate, steps, delta, one_off)
    report.update({
        "sigma": sigma, "laplace_b": laplace_b,
        "laplace_scale": None if laplace_b is None else 1.0 / laplace_b,
        "sampling_rate": sampling_rate, "steps": steps, "delta": delta, "epsilon_target": epsilon,
        "epsilon": parts["total"], "epsilon_gaussian_only": parts["gaussian_only"],
        "epsilon_laplace_only": parts.get("laplace_only"), "epsilon_counts": ce,
        "epsilon_validation": ve,
        "within_budget": None if epsilon is None else bool(parts["total"] <= epsilon),
        "accountant": accounting.ACCOUNTANT_NAME,
        "laplace_convention": accounting.LAPLACE_CONVENTION,
    })
    if epsilon is not None and report["solved_for"] == "steps" and steps > 0:
        message = budget_shortfall(parts["total"], epsilon, sigma, laplace_b, sampling_rate, steps, delta,
                                   capped=steps == config.max_steps, fixed=False, count_epsilon=one_off)
        if message:
            report["budget_warning"] = message
            warn(message)
    return report


AUTO = "auto"
AUTO_FRACTIONS = (0.95, 0.9, 0.75, 0.5, 0.25)   # --gammas auto: these shares of the gamma-1 run's group gap
AUTO_NOISE_SE = 2.0       # warn when that gap is within this many standard errors of zero


def parse_gammas(text: str) -> list[float] | str:
    """The --gammas grid: numbers, or AUTO."""
    if (text or "").strip().lower() == AUTO:
        return AUTO
    grid = []
    for g in [t.strip() for t in (text or "").split(",") if t.strip()]:
        try:
            grid.append(float(g))
        except ValueError:
            raise CortexError(f"--gammas: {g!r} is not a number (or give --gammas auto)") from None
    if not grid:
        raise CortexError("--gammas is empty")
    return grid


def check_auto(config: TrainConfig) -> None:
    """--gammas auto needs one built-in group-gap constraint whose gammas --gamma sets (constraint
    "none" is refused before, by every sweep)."""
    if config.constraint_spec is not None:
        raise CortexError(f"--gammas auto cannot be combined with a constraint spec file ({config.constraint}): "
                          "its per-constraint gammas win over --gamma, so there is no single gamma to place; "
                          "give --gammas G[,G]")
    if config.constraint == "fnr":
        raise CortexError("--gammas auto cannot be combined with --constraint fnr: it places gammas below the "
                          "gap between groups, and fnr bounds one rate (the false-negative rate), not a gap; "
                          "give --gammas G[,G]")


def auto_gammas(gap: float, fractions: Sequence[float] = AUTO_FRACTIONS) -> list[float]:
    """The auto grid: each fraction of ``gap`` (floored at 0), rounded to 4 decimals, duplicates dropped."""
    return list(dict.fromkeys(round(max(gap, 0.0) * f, 4) for f in fractions))


def sweep(table: Columns, test: Columns, config: TrainConfig, gammas: Sequence[float] | str, *, seeds: int = 1,
          iterate: str = "average", seed: int = 0, source: str = "<table>", test_source: str = "<test>",
          device="cpu", progress=None, warn: Warn = _no_warn, info: Warn = _no_warn) -> dict:
    """Train over a gamma grid at a fixed epsilon -> Pareto report (error vs gap on ``test``).

    ``gammas`` AUTO: gamma 1 first (every group gap allowed: unconstrained, but its histograms are
    released), then AUTO_FRACTIONS of the group gap those released histograms show over the last quarter
    of the steps (free post-processing); the report's ``auto`` says the gap, its standard error and the grid.
    """
    if config.constraint == "none":
        raise CortexError("sweep varies gamma: give a constraint, not none")
    auto = gammas == AUTO
    if auto:
        check_auto(config)
        gammas = [1.0]
    table, test = as_columns(table), as_columns(test)
    warn = once(warn)     # a sweep plans and trains many times: each cause is said once
    configs = [_with_gamma(config, g) for g in gammas]
    plans = [plan(table, c, source=source, warn=warn, seed=seed) for c in configs]   # all checks first
    free = replace(config, constraint="none", constraint_spec=None)
    free_plan = plan(table, free, source=source, warn=warn, seed=seed)
    rows, losers, dominated, unmet = [], [], [], []
    free_models, free_runs = [], []
    for s in range(seeds):      # the unconstrained private model: the sweep's other baseline
        fitted = train(table, free, free_plan, seed=seed, generator_offset=1000 * s, device=device,
                       progress=progress, warn=warn)
        free_models.append(Model.from_fitted(fitted, iterate))
        free_runs.append(evaluate(free_models[-1], test, test_source, warn))
    auto_report = None
    todo = list(zip(gammas, configs, plans))
    while todo:
        g, c, p = todo.pop(0)
        runs, checks = [], []
        for s in range(seeds):
            fitted = train(table, c, p, seed=seed, generator_offset=1000 * s, device=device,
                           progress=progress, warn=warn)
            model = Model.from_fitted(fitted, iterate)
            runs.append(evaluate(model, test, test_source, warn))
            report, found = check_baselines(table, p, {"model": model, "unconstrained": free_models[s]},
                                            seed=seed + 1000 * s, gamma=g,
                                            train_violation=fitted.stop.get("train_violation"))
            checks.append((report, found, fitted.stop))
        row = {"gamma": g, "epsilon": p.ledger.epsilon_spent, "steps": p.ledger.steps, "sigma": p.ledger.sigma}
        row.update(_mean_metrics(runs))
        row["max_violation_hard"] = statistics.fmean(r["constraint_violation"]["max_violation_hard"] for r in runs)
        row["held_out"] = [r for r, _, _ in checks]
        violations = [st["train_violation"] for _, _, st in checks if "train_violation" in st]
        if violations:
            row["train_violation"] = statistics.fmean(violations)
        for report, found, _ in checks:
            if any("below the majority class" in w for w in found):
                losers.append((g, report["model"]["accuracy"], report["majority"]))
            if any("neither more accurate nor fairer" in w for w in found):
                dominated.append((g, report["model"], report["unconstrained"]))
            if any("is not met on the training rows" in w for w in found):
                unmet.append(g)
        rows.append(row)
        info(f"gamma {g:g}: error {row['error']:.4f} dp_gap {row.get('dp_gap', float('nan')):.4f}")
        if auto and auto_report is None:
            auto_report = _auto_grid([st for _, _, st in checks], warn, info)
            grid = auto_report["gammas"]
            more = [_with_gamma(config, x) for x in grid]
            todo = list(zip(grid, more, [plan(table, m, source=source, warn=warn, seed=seed) for m in more]))
            gammas = [1.0] + grid
    _sweep_warnings(warn, losers, dominated, unmet, checks[0][0] if rows else {})
    out = {"constraint": config.constraint,
           "epsilon_per_run": rows[0]["epsilon"], "delta": plans[0].ledger.delta,
           "runs": (len(gammas) + 1) * seeds,
           "privacy_note": "each run (every gamma, and the unconstrained baseline) spends epsilon_per_run; "
                           "releasing all of them composes (at most runs x epsilon_per_run by basic composition)",
           "iterate": iterate}
    if auto_report is not None:
        out["auto"] = auto_report
    out["unconstrained"] = {"clip": free_plan.ledger.clip_norm, "steps": free_plan.ledger.steps,
                            **_mean_metrics(free_runs)}
    out["rows"] = rows
    return out


def _mean_metrics(runs: list[dict]) -> dict:
    row = {}
    for key in ("error", "accuracy", "dp_gap", "ovr_gap", "eo_gap"):
        vals = [r[key] for r in runs if key in r]
        if vals:
            row[key] = statistics.fmean(vals)
            row[f"{key}_sd"] = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return row


def _auto_grid(stops: list[dict], warn: Warn, info: Warn) -> dict:
    """The --gammas auto grid from the gamma-1 runs' released histograms (one stop record per seed): the
    mean over seeds of the largest constraint value over the last quarter of the steps, its standard error,
    and AUTO_FRACTIONS of it. Warns when the gap is within AUTO_NOISE_SE standard errors of zero."""
    values = [st["train_value"] for st in stops]
    gap = statistics.fmean(values)
    se = math.sqrt(sum(st["train_violation_se"] ** 2 for st in stops)) / len(stops)
    grid = auto_gammas(gap)
    info(f"--gammas auto: the gamma 1 run's released group gap is {gap:.4f} (standard error {se:.4f}); "
         f"gammas {', '.join(f'{x:g}' for x in grid)}")
    if not gap > AUTO_NOISE_SE * se:
        warn(f"--gammas auto: the group gap {gap:.4f} read from the released histograms is within "
             f"{AUTO_NOISE_SE:g} standard errors ({se:.4f}) of zero: the gammas it places are noise; "
             "give --gammas G[,G] or raise --epsilon")
    return {"from": "released histograms of the gamma 1 run(s), mean over the last quarter of the steps",
            "gap": gap, "gap_se": se, "fractions": list(AUTO_FRACTIONS), "gammas": grid}


def _sweep_warnings(warn: Warn, losers, dominated, unmet, report: dict) -> None:
    """One warning per cause over the whole sweep, naming the gammas and their held-out figures."""
    sd = report.get("accuracy_noise_sd", 0.0)
    noise = f"; noise sd {sd:.3f}" if sd else ""
    if losers:
        maj = losers[0][2]
        shown = ", ".join(f"gamma {g:g}: {a:.3f}" for g, a, _ in losers)
        warn(f"{len(losers)} run(s) score below the majority class {maj['class']!r} ({maj['accuracy']:.3f}) on the "
             f"held-out rows ({shown}{noise}): predicting {maj['class']!r} for every row does better")
    if dominated:
        shown = ", ".join(f"gamma {g:g}: accuracy {m['accuracy']:.3f} gap {m['dp_gap']:.3f} vs {u['accuracy']:.3f} "
                          f"gap {u['dp_gap']:.3f}" for g, m, u in dominated)
        warn(f"{len(dominated)} run(s) are neither more accurate nor fairer than the unconstrained private model "
             f"on the held-out rows ({shown}{noise})")
    if unmet:
        shown = ", ".join(f"{g:g}" for g in dict.fromkeys(unmet))
        warn(f"gamma {shown}: not met on the training rows (their released rates stay more than "
             f"{VIOLATION_TOLERANCE:g} above gamma over the last quarter of the steps); the training rows cannot "
             "meet it at this budget")


def once(warn: Warn) -> Warn:
    """``warn`` that drops a message it has already said (one line per cause in a command)."""
    said: set[str] = set()

    def say(message: str) -> None:
        if message not in said:
            said.add(message)
            warn(message)
    return say


def _with_gamma(config: TrainConfig, gamma: float) -> TrainConfig:
    return replace(config, gamma=gamma)


VIOLATION_TOLERANCE = 0.01   # a run whose released rates stay this far above gamma did not meet it


def check_baselines(table: Columns, plan_: Plan, scored: dict[str, "Model"], *, seed: int = 0,
                    gamma: float | None = None, train_violation: float | None = None,
                    label: str = "the model") -> tuple[dict, list[str]]:
    """Score the model(s) and the majority class on the plan's held-out rows through one Laplace histogram.

    ``scored``: name -> Model, "model" first (a sweep adds "unconstrained", the private model without
    constraints). Returns (report, warnings): the warnings say, with the figures, when the model loses to
    the majority class, when a constrained model is neither more accurate nor fairer than the
    unconstrained one, and when the training rows' released rates did not meet gamma
    (``train_violation``, from the run's own noisy histograms, free post-processing).
    """
    warnings = []
    if train_violation is not None and train_violation > VIOLATION_TOLERANCE:
        what = f"gamma {gamma:g}" if gamma is not None else "the constraint spec's gammas"
        warnings.append(f"{what} is not met on the training rows: their released rates stay "
                        f"{train_violation:.3f} above it over the last quarter of the steps (the training rows "
                        "cannot meet it at this budget); loosen --gamma or raise --epsilon")
    if plan_.holdout is None:
        return {"rows": 0, "note": "no rows held out (--validation 0 or a small table): baselines not scored"}, warnings
    table = as_columns(table)
    held = take_rows(table, plan_.holdout)
    m = len(held[plan_.label])
    index = {c: i for i, c in enumerate(plan_.classes)}
    y = np.array([index[str(v).strip()] for v in held[plan_.label]], dtype=np.int64)
    if plan_.sensitive:
        keys = ["&".join(vals) for vals in zip(*[held[c] for c in plan_.sensitive])]
    else:
        keys = ["all"] * m
    names = sorted(set(keys))
    groups = np.array([names.index(k) for k in keys], dtype=np.int64)
    preds = [predict(model, held)[0].numpy().astype(np.int64) for model in scored.values()]
    ve = plan_.validation_epsilon
    hist = baseline.noisy_histogram(groups, y, preds, len(names), len(plan_.classes), ve, seed)
    sd = baseline.accuracy_sd(hist, ve, m)
    k, maj_acc = baseline.majority(hist)
    report = {"rows": m, "epsilon": "exact (non-private)" if math.isinf(ve) else ve,
              "accuracy_noise_sd": round(sd, 4),
              "majority": {"class": plan_.classes[k], "accuracy": round(maj_acc, 4)}}
    for axis, name in enumerate(scored):
        s = baseline.score(hist, axis, names)
        report[name] = {"accuracy": round(s.accuracy, 4), "dp_gap": round(s.dp_gap, 4)}
    noise = f", noise sd {sd:.3f}" if sd > 0 else ""
    acc = report["model"]["accuracy"]
    if acc < maj_acc - sd:     # beyond the release's own noise (sd 0 when exact)
        warnings.append(f"{label} scores accuracy {acc:.3f} on the {m} held-out rows, below the majority class "
                        f"{plan_.classes[k]!r} ({maj_acc:.3f}{noise}): predicting {plan_.classes[k]!r} for every row "
                        "does better; raise --epsilon, loosen --gamma or give more rows")
    if "unconstrained" in report:
        u = report["unconstrained"]
        if acc < u["accuracy"] - sd and report["model"]["dp_gap"] >= u["dp_gap"]:
            warnings.append(f"{label} (accuracy {acc:.3f}, DP gap {report['model']['dp_gap']:.3f} on the {m} "
                            f"held-out rows{noise}) is neither more accurate nor fairer than the unconstrained "
                            f"private model ({u['accuracy']:.3f}, {u['dp_gap']:.3f})")
    return report, warnings

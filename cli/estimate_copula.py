"""cortexkit estimate-copula: copulas from diffusions and flows, with honest likelihoods."""

from __future__ import annotations

import click

from cortexkit.cli.base import tool_group, verb
from cortexkit.cli.options import Count, Size
from cortexkit.formats.errors import CortexError
from cortexkit.tools.copula import schema as _schema  # noqa: F401  (registers the schemas checked on read)

group = tool_group(
    "estimate-copula",
    help="Copulas from diffusions and flows (CDC density + sampling, reflection sampling, Gaussian "
         "and independence baselines): fit, score, sample, transform, evaluate, simulate.",
)

KIND_MODEL = "copula-model"
MODEL_VERSION = 2      # 2: discrete margins (marginals.discrete), column types and levels
COPULAS = ("auto", "cdc", "reflection", "gaussian", "independence")
SPACES = ("data", "cube", "gaussian")

# ----------------------------------------------------------------------------------------------
# helpers (file names and formats only; the method lives in cortexkit.tools.copula)

def _names(text: str | None) -> list[str]:
    names = [c.strip() for c in (text or "").split(",") if c.strip()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # one column twice is a singular copula, never a model
        raise CortexError(f"column {', '.join(twice)} named twice in {text!r}; name each column once")
    return names


def _read_matrix(source: str, columns: list[str] | None = None, drop: str | None = None):
    """(matrix (rows, d) float64, column names) of a numeric table, selecting/dropping columns by name."""
    from cortexkit.formats.table import read_table

    table = read_table(source)
    if table.n_rows == 0:
        raise CortexError(f"{table.source}: the table has no rows")
    table.require(_names(drop))
    dropped = set(_names(drop))   # applies to --columns too: "--columns a,b --drop b" keeps only a
    names = [n for n in (columns or table.names) if n not in dropped]
    return table.matrix(names), list(names)


def _read_typed(source: str, columns: list[str] | None, drop: str | None, discrete: list[str],
                max_levels: int):
    """A training table as (matrix (rows, d), names, discrete flags, column types, levels):
    categorical columns as their codes (discrete), integer columns discrete when declared or
    with at most ``max_levels`` distinct values, float columns discrete only when declared."""
    import numpy as np

    from cortexkit.formats.table import read_table

    table = read_table(source)
    if table.n_rows == 0:
        raise CortexError(f"{table.source}: the table has no rows")
    table.require(_names(drop))
    table.require(discrete, "--discrete column")
    dropped = set(_names(drop))
    names = [n for n in (columns or table.names) if n not in dropped]
    table.require(names)
    numeric = [n for n in names if not table.is_categorical(n)]
    table.check_finite(numeric)
    cols, flags, types, levels = [], [], [], {}
    for name in names:
        col = np.asarray(table.columns[name])
        if table.is_categorical(name):
            kind, is_discrete = "categorical", True
            levels[name] = list(table.levels[name])
        elif col.dtype.kind in "iub":
            kind = "int"
            is_discrete = name in discrete or len(np.unique(col)) <= max_levels
        else:
            kind, is_discrete = "float", name in discrete
        cols.append(col.astype(np.float64))
        flags.append(is_discrete)
        types.append(kind)
    return np.stack(cols, axis=1), names, flags, types, levels


def _model_matrix(source: str, loaded, columns: list[str] | None = None):
    """(rows, d) float64 of the model's columns (or ``columns``, read as the model's, in order) of a
    table; categorical columns are mapped to the model's codes by level name."""
    import numpy as np

    from cortexkit.formats.table import read_table

    table = read_table(source)
    if table.n_rows == 0:
        raise CortexError(f"{table.source}: the table has no rows")
    names = columns or loaded.columns
    table.require(names)
    if len(names) != loaded.dim:
        raise CortexError(f"--columns names {len(names)} columns, the model has {loaded.dim}")
    out = []
    for name, own, kind in zip(names, loaded.columns, loaded.column_types):
        if kind == "categorical":
            index = {level: i for i, level in enumerate(loaded.levels[own])}
            cells = table.strings(name)
            unknown = sorted({c for c in cells if c not in index})
            if unknown:
                raise CortexError(f"{table.source}: column '{name}' holds level(s) {unknown[:5]} the model "
                                  f"never saw (it knows {loaded.levels[own][:10]})")
            out.append(np.array([index[c] for c in cells], dtype=np.float64))
        else:
            out.append(table.matrix([name])[:, 0])
    return np.stack(out, axis=1)


def _load(run, model: str):
    from cortexkit.tools.copula.model import CopulaModel

    art = run.read_artifact(model, KIND_MODEL, max_version=MODEL_VERSION)
    try:
        return CopulaModel.from_tensors(art.tensors, art.meta_json, device=run.device)
    except (KeyError, TypeError) as exc:
        raise CortexError(f"{model}: malformed copula-model artifact ({exc})") from None


def _threads(run, loaded) -> None:
    """Without --threads, run a CDC's forward passes on one thread when that is faster here."""
    if loaded.copula != "cdc" or run.threads_why == "--threads" or loaded.cdc.device.type != "cpu":
        return
    import numpy as np

    from cortexkit.tools.copula.cdc import keep_faster_threads

    z = np.random.default_rng(0).standard_normal((16384, loaded.dim))
    kept = keep_faster_threads(lambda: loaded.cdc.log_density_z(z))
    run.detail(f"torch threads: {kept}")


def _model_rows(run, model: str, table: str, columns: list[str] | None = None, space: str = "data"):
    loaded = _load(run, model)
    _threads(run, loaded)
    if space != "data":   # pseudo-observations or z: plain numbers, whatever the column types
        names = columns or loaded.columns
        if len(names) != loaded.dim:
            raise CortexError(f"--columns names {len(names)} columns, the model has {loaded.dim}")
        return loaded, _read_matrix(table, names)[0]
    return loaded, _model_matrix(table, loaded, columns)


def _write_columns(run, columns: dict, metadata: dict | None = None, types: list[str] | None = None,
                   levels: dict | None = None) -> None:
    """Write named columns as a table; ``types`` int / categorical give int64 columns (categorical:
    codes with ``levels``), the rest float64."""
    import numpy as np

    from cortexkit.formats.table import Table, write_table

    out, kept = {}, {}
    for j, (name, values) in enumerate(columns.items()):
        kind = types[j] if types else "float"
        if kind in ("int", "categorical"):
            out[name] = np.ascontiguousarray(np.rint(values), dtype=np.int64)
            if kind == "categorical":
                kept[name] = list(levels[name])
        else:
            out[name] = np.ascontiguousarray(values, dtype=np.float64)
    table = Table(out, kept, "<out>")
    if str(run.output).lower().endswith(".csv"):   # the suffix is a promise (DESIGN: the artifact contract)
        from cortexkit.formats.stdio import write_bytes
        from cortexkit.formats.table import to_csv

        write_bytes(run.output, to_csv(table), binary=False)
        return
    write_table(run.output, table, producer=run.producer, config=run.config, metadata=metadata)


def _fit_config(copula, marginals, ties, ridge, steps, time_limit, guide, classes, hidden, depth,
                alpha, lr, batch_size, clip, ema):
    from cortexkit.tools.copula.cdc import CDCConfig
    from cortexkit.tools.copula.model import FitConfig
    from cortexkit.tools.copula.reflection import ReflectionConfig

    common = {"steps": steps or 20000, "time_limit": time_limit, "clip": clip, "ema": ema}
    given = {k: v for k, v in {"hidden": hidden, "lr": lr, "batch_size": batch_size}.items() if v}
    cdc = CDCConfig(classes=classes, alpha=alpha, guide=guide, ridge=ridge, **common, **given,
                    **({"depth": depth} if depth else {}))
    refl = ReflectionConfig(**common, **given, **({"layers": depth} if depth else {}))
    return FitConfig(copula=copula, marginals=marginals, ties=ties, ridge=ridge, cdc=cdc, reflection=refl)


ADVANCED_FIT = ("classes", "alpha", "batch_size", "clip", "ema", "ridge", "ties", "validation", "max_levels",
                "hidden", "depth", "lr", "guide")
positive = click.FloatRange(min=0, min_open=True)


# ----------------------------------------------------------------------------------------------
# verbs

@verb(group, "fit", output="artifact", torch_options=True, advanced=ADVANCED_FIT)
@click.argument("table", metavar="TABLE|-")
@click.option("--copula", type=click.Choice(COPULAS), default="auto", show_default=True,
              help="auto: the CDC, the Gaussian-guided CDC and the Gaussian copula, the best on validation.")
@click.option("--budget", type=positive, default=240.0, show_default=True,
              help="Seconds of training (all candidates); sizes steps, width and batch.")
@click.option("--input", "space", type=click.Choice(["data", "cube"]), default="data", show_default=True,
              help="data, or pseudo-observations in [0, 1] used as they are.")
@click.option("--columns", default=None, help="Comma-separated columns to use (default: all).")
@click.option("--drop", default=None, help="Comma-separated columns to leave out.")
@click.option("--discrete", default=None, help="Comma-separated columns to model as discrete "
              "(integer columns with few levels and categorical ones are detected).")
@click.option("--marginals", type=click.Choice(["ecdf", "kde"]), default="ecdf", show_default=True)
@click.option("--steps", type=Size(min=1, seconds=1e-4, what='steps'), default=None,
              help="Training steps per network (default: planned from --budget).")
@click.option("--time-limit", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Stop each network after this many seconds (0 = its share of --budget; none with --steps).")
@click.option("--guide", type=click.Choice(["none", "gaussian"]), default="none", show_default=True,
              help="--copula cdc noise: N(0, I), or N(0, Sigma) of the training correlation.")
@click.option("--hidden", type=Size(min=1, bytes=lambda h, p: 16.0 * h * h * (p.get("depth") or 1),
                                    what="units per layer"), default=None,
              help="Network width [planned].")
@click.option("--depth", type=Size(min=1, bytes=lambda d, p: 16.0 * (p.get("hidden") or 1) ** 2 * d,
                                   what="layers"), default=None,
              help="Residual blocks (cdc) or hidden layers (reflection) [planned].")
@click.option("--lr", type=positive, default=None, help="Adam learning rate [planned].")
@click.option("--ties", type=click.Choice(["random", "average"]), default="random", show_default=True,
              help="Tied values in the pseudo-observations.")
@click.option("--ridge", type=click.FloatRange(min=0), default=1e-5, show_default=True,
              help="Added to the correlation (Gaussian copula, guide, log Z proposal).")
@click.option("--validation", type=click.FloatRange(0, 0.5), default=0.15, show_default=True,
              help="Share of the training rows held out to choose the checkpoint and the candidate.")
@click.option("--max-levels", type=click.IntRange(min=1), default=32, show_default=True,
              help="Integer columns with at most this many distinct values are discrete.")
@click.option("--classes", type=Size(min=2, bytes=lambda k, p: 4.0 * k * (p.get('hidden') or 1), what='classes'), default=10, show_default=True)
@click.option("--alpha", type=click.FloatRange(min=0), default=0.2, show_default=True,
              help="Weight of the cross-entropy against the denoising MSE.")
@click.option("--batch-size", type=Size(min=1, bytes=16, what='rows per batch'), default=None, help="[planned; reflection 512]")
@click.option("--clip", type=positive, default=1.0, show_default=True, help="Gradient-norm clip.")
@click.option("--ema", type=click.FloatRange(0, 1), default=0.999, show_default=True,
              help="EMA decay of the weights used for evaluation.")
def fit(run, table, copula, budget, space, columns, drop, discrete, marginals, steps, time_limit, guide, hidden,
        depth, lr, ties, ridge, validation, max_levels, classes, alpha, batch_size, clip, ema):
    """Fit marginals and a copula to a table -> copula-model."""
    from cortexkit.tools.copula.model import fit_model

    if guide != "none" and copula != "cdc":
        raise CortexError(f"--guide {guide} applies to --copula cdc (auto tries both guides itself)")
    x, names, flags, types, levels = _read_typed(table, _names(columns) or None, drop, _names(discrete), max_levels)
    if space == "cube":
        if levels or any(flags):
            raise CortexError("--input cube takes pseudo-observations in [0, 1]: leave out categorical "
                              "and --discrete columns")
        flags, types, marginals = [False] * len(names), ["float"] * len(names), "uniform"
    config = _fit_config(copula, marginals, ties, ridge, steps, time_limit, guide, classes, hidden,
                         depth, alpha, lr, batch_size, clip, ema)
    config.budget, config.validation, config.steps_given = budget, validation, steps is not None
    config.choose_threads = run.threads_why != "--threads"
    config.given = {k: v for k, v in {"hidden": hidden, "depth": depth, "batch_size": batch_size, "lr": lr}.items() if v}
    if any(flags):
        run.info("discrete margins: " + ", ".join(f"{n} ({t})" for n, t, f in zip(names, types, flags) if f))
    model = fit_model(x, names, config, generator=run.torch_generator(), rng=run.numpy_rng(),
                      device=run.device, progress=run.progress, log=run.detail, warn=run.warn,
                      info=run.info, stopped=run.stopped, discrete=flags, column_types=types, levels=levels)
    for line in model.fit_summary(len(x)):
        run.info(line)
    tensors, metadata = model.to_tensors()
    run.write_artifact(tensors, KIND_MODEL, metadata=metadata, version=str(MODEL_VERSION))


input_option = click.option("--input", "space", type=click.Choice(SPACES), default="data", show_default=True,
                            help="What the table holds: data, pseudo-observations (cube) or z.")
draws_option = click.option("--is-draws", type=Size(min=1000, bytes=16, what='importance draws'), default=200_000,
                            show_default=True, help="Most importance-sampling draws for log Z (per proposal).")
stderr_option = click.option("--is-stderr", type=click.FloatRange(min=0), default=0.01, show_default=True,
                             help="Stop drawing once log Z's standard error is this small (0 = all --is-draws).")
columns_option = click.option("--columns", default=None, help="Read these table columns as the model's, in order.")
PROPOSAL_HELP = ("log Z proposal: issue = 0.5 N(0, R) + 0.5 N(0, I); samples = a Gaussian mixture fitted "
                 "to 5000 of the CDC's own samples (inflated) plus the issue's two components as a defensive part")


@verb(group, "score", output="table", torch_options=True, advanced=("is_draws", "is_stderr"))
@click.argument("model", metavar="MODEL")
@click.argument("table", metavar="TABLE|-")
@input_option
@columns_option
@click.option("--density", type=click.Choice(["copula", "data"]), default="copula", show_default=True,
              help="log c(u) only, or also the marginals' log density (data space).")
@click.option("--normalise", is_flag=True, help="Subtract log Z estimated by importance sampling (cdc).")
@draws_option
@stderr_option
@click.option("--proposal", type=click.Choice(["issue", "samples"]), default="issue", show_default=True,
              help=PROPOSAL_HELP + ".")
def score(run, model, table, space, columns, density, normalise, is_draws, is_stderr, proposal):
    """Per-row log copula density (and data-space log density) -> table."""
    import numpy as np

    loaded, x = _model_rows(run, model, table, _names(columns) or None, space)
    out = loaded.score(x, space, density == "data")   # the rows are checked before the IS below
    log_z = (loaded.log_z(is_draws, run.numpy_rng(1), run.progress, proposal, target_stderr=is_stderr)
             if normalise else None)
    if loaded.copula == "cdc" and not normalise:
        run.warn("log_copula is the CDC's raw classifier ratio (unnormalised); add --normalise")
    if log_z is not None:
        out = {k: v - log_z.log_z if k in ("log_copula", "log_density") else v for k, v in out.items()}
        if not log_z.trusted:
            run.warn(f"importance-sampling ESS {100 * log_z.ess_fraction:.2g} % < 1 %: log Z unverified")
    outside = loaded.outside_support(x) if density == "data" else {}
    if outside:
        rows = int((~np.isfinite(out["log_marginals"])).sum())
        run.warn(f"{rows} of {len(x)} rows lie outside the training range of column(s) "
                 + ", ".join(f"'{c}' ({k})" for c, k in outside.items())
                 + f": the {loaded.marginals.kind} marginals give them density 0, so their "
                 "log_marginals and log_density are -inf")
    meta = {"copula.normalised": str(bool(normalise or loaded.copula != "cdc")).lower()}
    if log_z is not None:
        meta.update({"copula.log_z": repr(log_z.log_z), "copula.ess_fraction": repr(log_z.ess_fraction),
                     "copula.log_z_proposal": log_z.proposal, "copula.log_z_stderr": repr(log_z.stderr),
                     "copula.is_draws": str(log_z.draws)})
    _write_columns(run, out, meta)


@verb(group, "sample", output="table", torch_options=True)
@click.argument("model", metavar="MODEL")
@click.option("-n", "--count", type=Count(bytes_each=32, what="rows"), default=1000, show_default=True)
@click.option("--space", type=click.Choice(SPACES), default="cube", show_default=True,
              help="cube: u in (0,1)^d; gaussian: z; data: through the stored marginals.")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="Reflection copula: run the velocity network in bfloat16 (AMX / tensor cores; the "
                   "positions stay float32).")
def sample(run, model, count, space, precision):
    """Draw rows from a fitted copula -> table with the model's column names."""
    loaded = _load(run, model)
    _threads(run, loaded)
    if precision != "fp32" and loaded.copula != "reflection":
        raise CortexError(f"--precision {precision} applies to the reflection copula only "
                          f"({model} is {loaded.copula})")
    rows = loaded.sample(count, run.torch_generator(), space, precision)
    typed = space == "data"   # data space: integer and categorical columns come back as they went in
    _write_columns(run, dict(zip(loaded.columns, rows.T)), {"copula.space": space},
                   loaded.column_types if typed else None, loaded.levels)


@verb(group, "transform", output="table")
@click.argument("model", metavar="MODEL")
@click.argument("table", metavar="TABLE|-")
@click.option("--from", "source", type=click.Choice(SPACES), default="data", show_default=True)
@click.option("--to", "target", type=click.Choice(SPACES), default="cube", show_default=True)
def transform(run, model, table, source, target):
    """Map rows between data, pseudo-observations (cube) and the Gaussian scale -> table."""
    loaded = _load(run, model)
    x = _model_matrix(table, loaded) if source == "data" else _read_matrix(table, loaded.columns)[0]
    rows = loaded.to_space(x, source, target)
    _write_columns(run, dict(zip(loaded.columns, rows.T)), {"copula.space": target},
                   loaded.column_types if target == "data" else None, loaded.levels)


@verb(group, "evaluate", output="report", torch_options=True, advanced=("is_draws", "is_stderr"))
@click.argument("model", metavar="MODEL")
@click.argument("table", metavar="TABLE|-")
@input_option
@columns_option
@click.option("--samples", type=Size(min=10, bytes=16, what='samples'), default=2000, show_default=True,
              help="Samples for W2, Kendall tau and KS (at most the test rows: equal sizes).")
@draws_option
@stderr_option
@click.option("--proposal", type=click.Choice(["both", "issue", "samples"]), default="both", show_default=True,
              help=PROPOSAL_HELP + "; both reports each (the issue's gives ll / log_z / ess, the other "
                   "is under log_z_by_proposal).")
def evaluate(run, model, table, space, columns, samples, is_draws, is_stderr, proposal):
    """Held-out normalised LL (log Z, ESS), W2, Kendall-tau error, KS, times -> YAML."""
    from cortexkit.tools.copula.model import EvalConfig, evaluate_model

    loaded, x = _model_rows(run, model, table, _names(columns) or None, space)
    proposals = ("issue", "samples") if proposal == "both" else (proposal,)
    config = EvalConfig(is_draws, samples, proposals, target_stderr=is_stderr)
    report = evaluate_model(loaded, x, config, generator=run.torch_generator(1),
                            rng=run.numpy_rng(2), space=space, progress=run.progress)
    if "warning" in report:
        run.warn(report["warning"])
    run.write_report({"model": model, "table": table, **report})


@verb(group, "simulate", output="table")
@click.option("--copula", "spec", required=True,
              help="clayton:theta=3, gumbel:theta=2, frank:theta=5, student:rho=0.6,nu=4, gaussian:rho=0.5, "
                   "a ',survival' flag, or a mixture 0.5*clayton:theta=3+0.5*gumbel:theta=2,survival.")
@click.option("-d", "--dim", type=Size(min=2, bytes=lambda d, p: 8.0 * d * (p.get('count') or 1), what='columns'), default=2, show_default=True)
@click.option("-n", "--count", type=Count(bytes_each=32, what="rows"), default=1000, show_default=True)
@click.option("--margins", type=click.Choice(["uniform", "normal", "exponential"]), default="uniform",
              show_default=True, help="Marginal law of the written columns.")
@click.option("--log-density", is_flag=True, help="Add a log_density column: the exact log c(u).")
@click.option("--seed", type=int, default=0, show_default=True)
def simulate(run, spec, dim, count, margins, log_density):
    """Draw from a closed-form copula (Gaussian, Student-t, Clayton, Gumbel, Frank, mixtures) -> table."""
    from cortexkit.tools.copula.closed_form import parse_spec, transform_margins

    truth = parse_spec(spec, dim)
    u = truth.sample(count, run.numpy_rng())
    columns = {f"x{j + 1}": col for j, col in enumerate(transform_margins(u, margins).T)}
    if log_density:
        columns["log_density"] = truth.logpdf(u)
    _write_columns(run, columns, {"copula.truth": spec, "copula.margins": margins})

"""cortexkit estimate-copula: copulas from diffusions and flows, with honest likelihoods."""

from __future__ import annotations

import click

from cortexkit.cli.base import tool_group, verb
from cortexkit.formats.errors import CortexError

group = tool_group(
    "estimate-copula",
    help="Copulas from diffusions and flows (CDC density + sampling, reflection sampling, Gaussian "
         "and independence baselines): fit, score, sample, transform, evaluate, simulate.",
)

KIND_MODEL = "copula-model"
MODEL_VERSION = 1
COPULAS = ("cdc", "reflection", "gaussian", "independence")
SPACES = ("data", "cube", "gaussian")

MAN = {
    "DESCRIPTION": """
Estimate the copula of a table (the dependence between its columns, with the marginals kept
apart), after Huk and Damoulas, "Diffusion and Flow-based Copulas: Forgetting and Remembering
Dependencies" (ICLR 2026). By Sklar, f(x) = c(u) prod_j f_j(x_j) with u_j = F_j(x_j).

Marginals. fit computes pseudo-observations u = rank/(n+1) of the training rows (ties broken at
random with --seed, or averaged with --ties average). The model stores each column's
interpolated ECDF (linear between the distinct training values, at the mean rank of their ties),
through which new rows are mapped, clipped to [1/(n+1), n/(n+1)], and samples are mapped back
(the empirical quantile). --marginals kde uses a reflected (boundary-corrected) Gaussian KDE CDF
instead. The Gaussian scale is z = Phi^-1(clip(u, 1e-5, 1-1e-5)).

Copulas (fit --copula):

- cdc: the classification-diffusion copula. The forward Ornstein-Uhlenbeck process on the
Gaussian scale keeps every marginal N(0,1); K time classes (--classes, default 10) have noise
variance sigma_k^2 = (k/(K-1))(1 - e^{-6}) (t_0 = 0, t_{K-1} = 3). A classifier (Linear(d,H), --depth
residual blocks h <- SiLU(h + Linear(ReLU(Linear(h)))), Linear(H,K)) is trained with
alpha CE + MSE of the denoiser eps_k = -sigma_k (grad_z[log P(k|z) - log P(K-1|z)] - z), by double
backprop, Adam, gradient clipping and an EMA of the weights. log c(u) = log P(t_0|z) - log
P(t_{K-1}|z) in one forward pass; samples come from ancestral DDPM over the K-1 steps (clamped to
[-6, 6]). --guide gaussian uses N(0, Sigma) noise (Sigma the training correlation + --ridge).
- reflection: the reflection copula, a billiard in the cube (u_t = R(u_0 + t v_0)) and a
velocity MLP (Linear(d+1,H), 5 x [Linear(H,H), SiLU], Linear(H,d)) trained on t = 1.5 U^4;
sampling takes 49 reflected Euler steps from U(0,1)^d. It has no density.
- gaussian: the Gaussian copula of the training correlation (+ --ridge, renormalised).
- independence: c = 1.

Honest likelihood. The CDC's classifier ratio integrates to one only at the optimum. evaluate
(and score --normalise) estimates log Z by importance sampling from 0.5 N(0, R) + 0.5 N(0, I)
(--is-draws, default 10^6), reports the raw and normalised log-likelihood and the effective
sample size, and flags the number (ll_trusted: false and a warning) when ESS < 1 %.

Bad input. NaN or infinite cells, too few rows, a constant column, or a model applied to a table
lacking its columns stop with one line naming the column; duplicated or comonotone column pairs
are named in a warning (their copula is singular and the likelihood depends on the ridge).
Nothing is written on error.
""",
    "EXAMPLES": """
Simulate a Clayton copula, fit a CDC to it in the same pipeline, and score held-out rows:

    cortexkit estimate-copula simulate --copula clayton:theta=3 -n 16000 \\
      --seed 1 | cortexkit estimate-copula fit - --hidden 128 --depth 2 \\
      --steps 3000 -o clayton.st
    cortexkit estimate-copula simulate --copula clayton:theta=3 -n 4000 \\
      --seed 2 --log-density -o test.st
    cortexkit estimate-copula evaluate clayton.st test.st --columns x1,x2

Fit MAGIC's copula with a reduced CPU network and compare with the Gaussian copula:

    cortexkit estimate-copula fit train.csv --hidden 256 --depth 4 --lr 1e-3 \\
      --time-limit 600 -o magic.st
    cortexkit estimate-copula evaluate magic.st test.csv | grep \\
      -E '^(ll|gaussian_copula_ll|ess_fraction):'

Draw 1000 rows in data space and write them as CSV; map a table to the Gaussian scale:

    cortexkit estimate-copula sample magic.st -n 1000 --space data \\
      | cortexkit convert - samples.csv
    cortexkit estimate-copula transform magic.st test.csv --to gaussian \\
      | cortexkit convert - z.csv

Per-row log densities in data space (copula + marginals), normalised:

    cortexkit estimate-copula score magic.st test.csv --density data \\
      --normalise | cortexkit convert - ll.csv
""",
    "FILES": """
- copula-model artifact (written by fit) :: marginals.knots_x, marginals.knots_u: (sum m_j,)
float64, the concatenated knot tables of each column's interpolated CDF (m_j knots for column
j); marginals.sizes: (d,) int64, the m_j; corr: (d, d) float64, the training correlation on the
Gaussian scale; cdc.* (cdc): the classifier's EMA weights (float32); reflection.* (reflection):
the velocity network's EMA weights. Metadata (JSON): copula.columns, copula.copula,
copula.marginals, copula.ridge, copula.n_train, copula.cdc / copula.reflection (the
architecture and training settings), copula.info (steps, fit seconds, smallest eigenvalue of
corr).
- table artifact (written by sample, score, transform, simulate; read by fit, score, transform,
evaluate) :: one float64 tensor per column, named as the columns (sample and transform: the
model's columns; score: log_copula and, with --density data, log_marginals and log_density;
simulate: x1..xd and, with --log-density, log_density, the exact log copula density). Any
table input may also be CSV with a header, NPY or NPZ.
- evaluate report (YAML) :: ll_raw, log_z, log_z_stderr, ess, ess_fraction, ll (= ll_raw -
log_z), ll_trusted, gaussian_copula_ll, w2 and tau_frobenius (with gaussian_copula_w2 and
gaussian_copula_tau_frobenius), ks_max, ks_per_dim, ks_max_test_data, score/sample seconds per
1k rows (fit prints its time on stderr; it is not stored, so one seed gives one file).
""",
    "SEE ALSO": "cortexkit(1), cortexkit-convert(1), cortexkit-inspect(1)",
    "REFERENCE": """
D. Huk, T. Damoulas. Diffusion and Flow-based Copulas: Forgetting and Remembering Dependencies.
ICLR 2026 (arXiv 2509.19707). D. Huk et al., Your copula is a classifier in disguise (AISTATS
2025). Nagler and Vatter, vinecopulib (the TLL vine baseline of the benchmarks).
""",
    "EXAMPLES_SHRINK": {"--steps 3000": "--steps 300"},
}


# ----------------------------------------------------------------------------------------------
# helpers (file names and formats only; the method lives in cortexkit.tools.copula)

def _names(text: str | None) -> list[str]:
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _read_matrix(source: str, columns: list[str] | None = None, drop: str | None = None):
    """(matrix (rows, d) float64, column names) of a table, selecting/dropping columns by name."""
    from cortexkit.formats.table import read_table

    table = read_table(source)
    if table.n_rows == 0:
        raise CortexError(f"{table.source}: the table has no rows")
    names = columns or [n for n in table.names if n not in set(_names(drop))]
    table.require(_names(drop))
    return table.matrix(names), list(names)


def _load(run, model: str):
    from cortexkit.tools.copula.model import CopulaModel

    art = run.read_artifact(model, KIND_MODEL, max_version=MODEL_VERSION)
    try:
        return CopulaModel.from_tensors(art.tensors, art.meta_json, device=run.device)
    except (KeyError, TypeError) as exc:
        raise CortexError(f"{model}: malformed copula-model artifact ({exc})") from None


def _model_rows(run, model: str, table: str):
    loaded = _load(run, model)
    x, _ = _read_matrix(table, loaded.columns)
    return loaded, x


def _write_columns(run, columns: dict, metadata: dict | None = None) -> None:
    import numpy as np

    from cortexkit.formats.table import Table, write_table

    table = Table({k: np.ascontiguousarray(v, dtype=np.float64) for k, v in columns.items()}, {}, "<out>")
    write_table(run.output, table, producer=run.producer, config=run.config, metadata=metadata)


def _fit_config(copula, marginals, ties, ridge, steps, time_limit, guide, classes, hidden, depth,
                alpha, lr, batch_size, clip, ema):
    from cortexkit.tools.copula.cdc import CDCConfig
    from cortexkit.tools.copula.model import FitConfig
    from cortexkit.tools.copula.reflection import ReflectionConfig

    common = {"steps": steps, "time_limit": time_limit, "clip": clip, "ema": ema}
    given = {k: v for k, v in {"hidden": hidden, "lr": lr, "batch_size": batch_size}.items() if v}
    cdc = CDCConfig(classes=classes, alpha=alpha, guide=guide, ridge=ridge, **common, **given,
                    **({"depth": depth} if depth else {}))
    refl = ReflectionConfig(**common, **given, **({"layers": depth} if depth else {}))
    return FitConfig(copula=copula, marginals=marginals, ties=ties, ridge=ridge, cdc=cdc, reflection=refl)


ADVANCED_FIT = ("classes", "alpha", "batch_size", "clip", "ema", "ridge", "ties")
positive = click.FloatRange(min=0, min_open=True)


# ----------------------------------------------------------------------------------------------
# verbs

@verb(group, "fit", output="artifact", torch_options=True, advanced=ADVANCED_FIT)
@click.argument("table", metavar="TABLE|-")
@click.option("--copula", type=click.Choice(COPULAS), default="cdc", show_default=True)
@click.option("--columns", default=None, help="Comma-separated columns to use (default: all).")
@click.option("--drop", default=None, help="Comma-separated columns to leave out.")
@click.option("--marginals", type=click.Choice(["ecdf", "kde"]), default="ecdf", show_default=True)
@click.option("--steps", type=click.IntRange(min=1), default=20000, show_default=True,
              help="Training steps (cdc, reflection).")
@click.option("--time-limit", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Stop training after this many seconds (0 = run all --steps).")
@click.option("--guide", type=click.Choice(["none", "gaussian"]), default="none", show_default=True,
              help="CDC noise: N(0, I), or N(0, Sigma) of the training correlation.")
@click.option("--hidden", type=click.IntRange(min=1), default=None, help="Network width [512].")
@click.option("--depth", type=click.IntRange(min=1), default=None,
              help="Residual blocks (cdc) [6] or hidden layers (reflection) [5].")
@click.option("--lr", type=positive, default=None, help="Adam learning rate [cdc 5e-5, reflection 1e-4].")
@click.option("--ties", type=click.Choice(["random", "average"]), default="random", show_default=True,
              help="Tied values in the pseudo-observations.")
@click.option("--ridge", type=click.FloatRange(min=0), default=1e-5, show_default=True,
              help="Added to the correlation (Gaussian copula, guide, log Z proposal).")
@click.option("--classes", type=click.IntRange(min=2), default=10, show_default=True)
@click.option("--alpha", type=click.FloatRange(min=0), default=0.2, show_default=True,
              help="Weight of the cross-entropy against the denoising MSE.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="[cdc 1024, reflection 512]")
@click.option("--clip", type=positive, default=1.0, show_default=True, help="Gradient-norm clip.")
@click.option("--ema", type=click.FloatRange(0, 1), default=0.999, show_default=True,
              help="EMA decay of the weights used for evaluation.")
def fit(run, table, copula, columns, drop, marginals, steps, time_limit, guide, hidden, depth, lr,
        ties, ridge, classes, alpha, batch_size, clip, ema):
    """Fit marginals and a copula to a table -> copula-model."""
    from cortexkit.tools.copula.model import fit_model

    x, names = _read_matrix(table, _names(columns) or None, drop)
    config = _fit_config(copula, marginals, ties, ridge, steps, time_limit, guide, classes, hidden,
                         depth, alpha, lr, batch_size, clip, ema)
    model = fit_model(x, names, config, generator=run.torch_generator(), rng=run.numpy_rng(),
                      device=run.device, progress=run.progress, log=run.detail, warn=run.warn)
    run.info(f"fitted {copula} copula on {len(x)} rows x {len(names)} columns "
             f"in {model.fit_seconds:.1f} s")
    tensors, metadata = model.to_tensors()
    run.write_artifact(tensors, KIND_MODEL, metadata=metadata, version=str(MODEL_VERSION))


input_option = click.option("--input", "space", type=click.Choice(SPACES), default="data", show_default=True,
                            help="What the table holds: data, pseudo-observations (cube) or z.")
draws_option = click.option("--is-draws", type=click.IntRange(min=1000), default=1_000_000,
                            show_default=True, help="Importance-sampling draws for log Z.")


@verb(group, "score", output="artifact", torch_options=True, advanced=("is_draws",))
@click.argument("model", metavar="MODEL")
@click.argument("table", metavar="TABLE|-")
@input_option
@click.option("--density", type=click.Choice(["copula", "data"]), default="copula", show_default=True,
              help="log c(u) only, or also the marginals' log density (data space).")
@click.option("--normalise", is_flag=True, help="Subtract log Z estimated by importance sampling (cdc).")
@draws_option
def score(run, model, table, space, density, normalise, is_draws):
    """Per-row log copula density (and data-space log density) -> table."""
    loaded, x = _model_rows(run, model, table)
    log_z = loaded.log_z(is_draws, run.numpy_rng(1), run.progress) if normalise else None
    if loaded.copula == "cdc" and not normalise:
        run.warn("log_copula is the CDC's raw classifier ratio (unnormalised); add --normalise")
    if log_z is not None and not log_z.trusted:
        run.warn(f"importance-sampling ESS {100 * log_z.ess_fraction:.2g} % < 1 %: log Z unverified")
    out = loaded.score(x, space, density == "data", log_z.log_z if log_z else 0.0)
    meta = {"copula.normalised": str(bool(normalise or loaded.copula != "cdc")).lower()}
    if log_z is not None:
        meta.update({"copula.log_z": repr(log_z.log_z), "copula.ess_fraction": repr(log_z.ess_fraction)})
    _write_columns(run, out, meta)


@verb(group, "sample", output="artifact", torch_options=True)
@click.argument("model", metavar="MODEL")
@click.option("-n", "--count", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--space", type=click.Choice(SPACES), default="cube", show_default=True,
              help="cube: u in (0,1)^d; gaussian: z; data: through the stored marginals.")
def sample(run, model, count, space):
    """Draw rows from a fitted copula -> table with the model's column names."""
    loaded = _load(run, model)
    rows = loaded.sample(count, run.torch_generator(), space)
    _write_columns(run, dict(zip(loaded.columns, rows.T)), {"copula.space": space})


@verb(group, "transform", output="artifact")
@click.argument("model", metavar="MODEL")
@click.argument("table", metavar="TABLE|-")
@click.option("--from", "source", type=click.Choice(SPACES), default="data", show_default=True)
@click.option("--to", "target", type=click.Choice(SPACES), default="cube", show_default=True)
def transform(run, model, table, source, target):
    """Map rows between data, pseudo-observations (cube) and the Gaussian scale -> table."""
    loaded = _load(run, model)
    x, _ = _read_matrix(table, loaded.columns)
    rows = loaded.to_space(x, source, target)
    _write_columns(run, dict(zip(loaded.columns, rows.T)), {"copula.space": target})


@verb(group, "evaluate", output="report", torch_options=True, advanced=("is_draws",))
@click.argument("model", metavar="MODEL")
@click.argument("table", metavar="TABLE|-")
@input_option
@click.option("--columns", default=None, help="Read these table columns as the model's, in order.")
@click.option("--samples", type=click.IntRange(min=10), default=2000, show_default=True,
              help="Samples for W2, Kendall tau and KS (at most the test rows: equal sizes).")
@draws_option
def evaluate(run, model, table, space, columns, samples, is_draws):
    """Held-out normalised LL (log Z, ESS), W2, Kendall-tau error, KS, times -> YAML."""
    from cortexkit.tools.copula.model import EvalConfig, evaluate_model

    loaded = _load(run, model)
    x, _ = _read_matrix(table, _names(columns) or loaded.columns)
    if x.shape[1] != loaded.dim:
        raise CortexError(f"--columns names {x.shape[1]} columns, the model has {loaded.dim}")
    report = evaluate_model(loaded, x, EvalConfig(is_draws, samples), generator=run.torch_generator(1),
                            rng=run.numpy_rng(2), space=space, progress=run.progress)
    if "warning" in report:
        run.warn(report["warning"])
    run.write_report({"model": model, "table": table, **report})


@verb(group, "simulate", output="artifact")
@click.option("--copula", "spec", required=True,
              help="clayton:theta=3, gumbel:theta=2, frank:theta=5, student:rho=0.6,nu=4, gaussian:rho=0.5, "
                   "a ',survival' flag, or a mixture 0.5*clayton:theta=3+0.5*gumbel:theta=2,survival.")
@click.option("-d", "--dim", type=click.IntRange(min=2), default=2, show_default=True)
@click.option("-n", "--count", type=click.IntRange(min=1), default=1000, show_default=True)
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

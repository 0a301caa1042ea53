"""One fitted copula model: marginals of the training split plus a copula (independence, Gaussian,
CDC or reflection), its fit, scoring, sampling and evaluation, and its artifact tensors."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import torch

from cortexkit.tools.copula import marginals as mg
from cortexkit.tools.copula import metrics
from cortexkit.tools.copula.cdc import CDC, CDCConfig, fit_cdc, guide_correlation, plan_cdc
from cortexkit.tools.copula.reflection import Reflection, ReflectionConfig, fit_reflection

COPULAS = ("auto", "cdc", "reflection", "gaussian", "independence")
COLUMN_TYPES = ("float", "int", "categorical")
SPACES = ("data", "cube", "gaussian")


@dataclass
class FitConfig:
    """How to fit. ``copula`` auto fits the CDC, the Gaussian-guided CDC and the Gaussian copula
    and keeps the best by validation log-likelihood. ``budget`` (seconds) sizes the training:
    unless ``steps_given``, each CDC candidate gets an equal share of it and its steps come from a
    timing probe (``cdc.plan_cdc``); ``given`` holds the network settings the user fixed."""

    copula: str = "auto"
    marginals: str = "ecdf"        # ecdf | kde | uniform (rows already pseudo-observations)
    ties: str = "random"           # random | average
    ridge: float = 1e-5
    budget: float = 240.0          # seconds of training, all candidates together
    validation: float = 0.15       # share of the training rows held out for checkpoints and choice
    steps_given: bool = False      # cdc/reflection steps fixed by the user (no planning of steps)
    given: dict = field(default_factory=dict)   # hidden / depth / batch_size / lr fixed by the user
    is_draws: int = 32768          # cap of the validation log Z importance sampling
    is_stderr: float = 0.02        # ... which stops earlier at this standard error of log Z
    choose_threads: bool = False   # the timing probe may drop torch to one thread (--threads not given)
    cdc: CDCConfig = field(default_factory=CDCConfig)
    reflection: ReflectionConfig = field(default_factory=ReflectionConfig)


@dataclass
class CopulaModel:
    """Marginals, the training correlation on the Gaussian scale (d, d), and the copula."""

    columns: list[str]
    marginals: mg.Marginals
    corr: np.ndarray
    copula: str
    ridge: float = 1e-5
    cdc: CDC | None = None
    reflection: Reflection | None = None
    info: dict = field(default_factory=dict)
    fit_seconds: float | None = None
    column_types: list[str] | None = None     # float | int | categorical, for sample --space data
    levels: dict = field(default_factory=dict)  # categorical column -> its level names (codes index)

    def __post_init__(self):
        if self.column_types is None:
            self.column_types = ["float"] * len(self.columns)

    @property
    def dim(self) -> int:
        return len(self.columns)

    @property
    def has_density(self) -> bool:
        return self.copula != "reflection"

    def gaussian_corr(self) -> np.ndarray:
        return guide_correlation(self.corr, self.ridge)

    def fit_summary(self, rows: int) -> list[str]:
        """What ``fit`` says when it ends: each candidate's validation log-likelihood (with its
        steps and stopping reason) and which was kept, then the fitted copula's size and time."""
        lines = []
        candidates = self.info.get("candidates", {})
        if candidates:
            def one(name, v):
                steps = (f" ({v['steps']} of {v['planned']} steps, {v['stop']}, best at {v.get('best_step')})"
                         if "steps" in v else "")
                return f"{name} {v['validation_ll']:.3f}{steps}"
            lines.append(f"validation LL (nats a row, {self.info['validation_rows']} rows): "
                         + ", ".join(one(k, v) for k, v in candidates.items() if "validation_ll" in v)
                         + f"; kept {self.info['chosen']}")
        lines.append(f"fitted {self.info.get('chosen', self.copula)} copula on {rows} rows x {self.dim} columns "
                     f"in {self.fit_seconds:.1f} s")
        return lines

    # ---------------------------------------------------------------- transforms
    def to_space(self, x: np.ndarray, source: str, target: str) -> np.ndarray:
        """(rows, d) values in space ``source`` -> ``target`` (data, cube or gaussian).

        Pseudo-observations (``source`` cube) must lie in [0, 1]: a value outside is refused by
        name rather than clipped into the cube silently."""
        if source == "cube":
            check_cube(x, self.columns)
        if source == target:
            return np.asarray(x, dtype=np.float64)
        u = {"data": lambda: self.marginals.cdf(x), "cube": lambda: np.asarray(x, np.float64),
             "gaussian": lambda: mg.to_cube(x)}[source]()
        if target == "cube":
            return u
        if target == "gaussian":
            return mg.to_gaussian(u)
        return self.marginals.quantile(u)

    # ---------------------------------------------------------------- density
    def log_copula_z(self, z: np.ndarray) -> np.ndarray:
        """(rows, d) z -> (rows,) log c(Phi(z)) (the CDC's raw, unnormalised classifier ratio)."""
        if self.copula == "independence":
            return np.zeros(len(z))
        if self.copula == "gaussian":
            return gaussian_log_copula(z, self.gaussian_corr())
        if self.copula == "cdc":
            return self.cdc.log_density_z(z)
        raise ValueError("the reflection copula has no density (it samples only); fit --copula cdc")

    def log_z(self, draws: int, rng: np.random.Generator, progress: Callable | None = None,
              proposal: str = "issue", proposal_samples: int = 5000,
              target_stderr: float = 0.0) -> metrics.LogZ:
        """log of the normalising constant (exactly 0 for the closed forms; IS for the CDC) with the
        issue's proposal or one fitted to ``proposal_samples`` of the model's own samples."""
        if self.copula != "cdc":
            return metrics.LogZ(0.0, float(draws), 1.0, draws, 0.0, "exact")
        q = None
        if proposal == "samples":
            gen = torch.Generator().manual_seed(int(rng.integers(2**63 - 1)))
            z_s = self.cdc.sample_z(proposal_samples, gen)
            q = metrics.sample_proposal(z_s, self.gaussian_corr(), rng)
        elif proposal != "issue":
            raise ValueError(f"unknown proposal {proposal!r} (issue or samples)")
        return metrics.importance_log_z(self.log_copula_z, self.gaussian_corr(), draws, rng,
                                        progress=progress, proposal=q, target_stderr=target_stderr)

    def score(self, x: np.ndarray, space: str = "data", data_density: bool = False,
              log_z: float = 0.0) -> dict[str, np.ndarray]:
        """(rows, d) values -> {'log_copula': (rows,), ['log_marginals', 'log_density']}."""
        z = self.to_space(x, space, "gaussian")
        out = {"log_copula": self.log_copula_z(z) - log_z}
        if data_density:
            if space != "data":
                raise ValueError("the data-space density needs rows in data space (--input data)")
            out["log_marginals"] = self.marginals.log_density(x).sum(1)
            out["log_density"] = out["log_copula"] + out["log_marginals"]
        return out

    def outside_support(self, x: np.ndarray) -> dict[str, int]:
        """{column: rows} of (rows, d) data-space rows outside each column's stored marginal
        support (the training range), where the data-space density is 0 (log -inf)."""
        x = np.asarray(x, dtype=np.float64)
        out = {}
        for j, name in enumerate(self.columns):
            kx = self.marginals.knots_x[j]
            count = int(((x[:, j] < kx[0]) | (x[:, j] > kx[-1])).sum())
            if count:
                out[name] = count
        return out

    # ---------------------------------------------------------------- sampling
    def sample(self, n: int, generator: torch.Generator, space: str = "cube",
               precision: str = "fp32") -> np.ndarray:
        """(n, d) samples in ``space``; ``precision`` bf16 runs the reflection network in bfloat16."""
        if precision != "fp32" and self.copula != "reflection":
            raise ValueError(f"--precision {precision} applies to the reflection copula only "
                             f"(this model is {self.copula})")
        if self.copula == "independence":
            u = torch.rand((n, self.dim), generator=generator, dtype=torch.float64).numpy()
            return self.to_space(u, "cube", space)
        if self.copula == "gaussian":
            L = np.linalg.cholesky(self.gaussian_corr())
            z = torch.randn((n, self.dim), generator=generator, dtype=torch.float64).numpy() @ L.T
            return self.to_space(z, "gaussian", space)
        if self.copula == "cdc":
            return self.to_space(self.cdc.sample_z(n, generator), "gaussian", space)
        u = np.clip(self.reflection.sample(n, generator, precision=precision), 1e-7, 1 - 1e-7)
        return self.to_space(u, "cube", space)

    # ---------------------------------------------------------------- artifact
    def to_tensors(self) -> tuple[dict[str, torch.Tensor], dict]:
        knots_x = np.concatenate(self.marginals.knots_x)
        knots_u = np.concatenate(self.marginals.knots_u)
        sizes = np.array([len(k) for k in self.marginals.knots_x], dtype=np.int64)
        tensors = {"marginals.knots_x": torch.from_numpy(knots_x), "marginals.knots_u": torch.from_numpy(knots_u),
                   "marginals.sizes": torch.from_numpy(sizes), "corr": torch.from_numpy(self.corr.copy()),
                   "marginals.discrete": torch.tensor([int(b) for b in self.marginals.discrete], dtype=torch.int8)}
        meta = {"copula.columns": self.columns, "copula.copula": self.copula, "copula.ridge": self.ridge,
                "copula.marginals": self.marginals.kind, "copula.n_train": self.marginals.n,
                "copula.info": self.info, "copula.column_types": self.column_types,
                "copula.levels": self.levels}
        if self.cdc is not None:
            tensors.update(self.cdc.state())
            meta["copula.cdc"] = self.cdc.describe()
        if self.reflection is not None:
            tensors.update(self.reflection.state())
            meta["copula.reflection"] = self.reflection.describe()
        return tensors, {k: json.dumps(v) for k, v in meta.items()}

    @classmethod
    def from_tensors(cls, tensors: dict, meta: Callable[[str], object],
                     device: str | torch.device = "cpu") -> "CopulaModel":
        sizes = np.asarray(tensors["marginals.sizes"]).tolist()
        cuts = np.cumsum([0] + sizes)
        kx = np.asarray(tensors["marginals.knots_x"], dtype=np.float64)
        ku = np.asarray(tensors["marginals.knots_u"], dtype=np.float64)
        discrete = (np.asarray(tensors["marginals.discrete"]).astype(bool).tolist()
                    if "marginals.discrete" in tensors else None)   # version 1: all continuous
        marg = mg.Marginals(meta("copula.marginals"), int(meta("copula.n_train")),
                            [kx[a:b] for a, b in zip(cuts[:-1], cuts[1:])],
                            [ku[a:b] for a, b in zip(cuts[:-1], cuts[1:])], discrete)
        corr = np.asarray(tensors["corr"], dtype=np.float64)
        model = cls(list(meta("copula.columns")), marg, corr, meta("copula.copula"),
                    float(meta("copula.ridge")), info=meta("copula.info") or {},
                    column_types=meta("copula.column_types"), levels=meta("copula.levels") or {})
        state = {k: torch.as_tensor(np.asarray(v)) for k, v in tensors.items()}
        if model.copula == "cdc":
            model.cdc = CDC(model.dim, CDCConfig(**meta("copula.cdc")), corr, device)
            model.cdc.load_state(state)
        elif model.copula == "reflection":
            model.reflection = Reflection(model.dim, ReflectionConfig(**meta("copula.reflection")), device)
            model.reflection.load_state(state)
        return model


# -------------------------------------------------------------------- data checks

def check_cube(u: np.ndarray, columns: list[str]) -> None:
    """Refuse (rows, d) pseudo-observations outside [0, 1], naming the first bad column and row."""
    u = np.asarray(u, dtype=np.float64)
    bad = ~((u >= 0) & (u <= 1))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"column '{columns[col]}', row {row + 1}: {u[row, col]:g} is not a pseudo-observation "
                         f"in [0, 1] ({int(bad.sum())} such cell(s)); is the table in data space?")


def check_held_out(u: np.ndarray, columns: list[str], minimum: int = 10) -> None:
    """Refuse a held-out table whose sample metrics are undefined: fewer than ``minimum`` rows, or a
    column whose pseudo-observations are all equal (Kendall tau is undefined there)."""
    if len(u) < minimum:
        raise ValueError(f"{len(u)} held-out rows are too few to evaluate (need at least {minimum})")
    const = [c for c, col in zip(columns, np.asarray(u).T) if np.ptp(col) == 0]
    if const:
        raise ValueError(f"held-out column(s) {', '.join(map(repr, const))} take one value on the model's "
                         "marginal scale (constant, or all beyond the training range): Kendall tau is undefined")


def check_training_data(x: np.ndarray, columns: list[str], warn: Callable[[str], None]) -> None:
    """Refuse what has no copula (too few rows, constant columns); warn by name about duplicated
    or comonotone columns (their copula is singular: the likelihood is set by the ridge/clipping)."""
    n, d = x.shape
    if d < 2:
        raise ValueError(f"a copula needs at least 2 columns, the table has {d}")
    if n < max(10, d + 2):
        raise ValueError(f"{n} rows are too few for a {d}-column copula (need at least {max(10, d + 2)})")
    const = [c for c, s in zip(columns, x.std(0)) if not s > 0]
    if const:
        raise ValueError(f"constant column(s) {', '.join(map(repr, const))} have no copula: drop them "
                         "(--drop)")
    r = np.corrcoef(np.argsort(np.argsort(x, axis=0), axis=0), rowvar=False)
    pairs = [(columns[i], columns[j], r[i, j]) for i in range(d) for j in range(i + 1, d)
             if abs(r[i, j]) > 0.9999]
    for a, b, rho in pairs:
        kind = "duplicated or comonotone" if rho > 0 else "countermonotone"
        warn(f"columns '{a}' and '{b}' are {kind} (Spearman {rho:.6f}): the copula is singular there "
             "and its likelihood depends on the ridge and clipping; consider --drop")


def gaussian_log_copula(z: np.ndarray, corr: np.ndarray) -> np.ndarray:
    """(rows,) log c of the Gaussian copula with correlation (d, d) ``corr`` at (rows, d) z."""
    inv = np.linalg.inv(corr)
    _, logdet = np.linalg.slogdet(corr)
    quad = np.einsum("ij,jk,ik->i", z, inv, z) - (z * z).sum(1)
    return -0.5 * quad - 0.5 * logdet


def validation_split(n: int, d: int, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows, validation rows) indices of n training rows; no validation rows when ``share``
    is 0 or too few rows would remain (at least 10 held out, max(10, d + 2) kept)."""
    n_val = max(10, int(round(share * n))) if share > 0 else 0
    if n_val == 0 or n - n_val < max(10, d + 2):
        return np.arange(n), np.arange(0)
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def candidates_for(config: FitConfig) -> list[str]:
    if config.copula == "auto":
        return ["cdc", "cdc-guided", "gaussian"]
    if config.copula == "cdc":
        return ["cdc-guided" if config.cdc.guide == "gaussian" else "cdc"]
    return [config.copula]


def fit_model(x: np.ndarray, columns: list[str], config: FitConfig, *, generator: torch.Generator,
              rng: np.random.Generator, device="cpu", progress: Callable | None = None,
              log: Callable[[str], None] | None = None,
              warn: Callable[[str], None] = lambda m: None,
              info: Callable[[str], None] = lambda m: None,
              stopped: Callable[..., object] | None = None,
              discrete: list[bool] | None = None, column_types: list[str] | None = None,
              levels: dict | None = None) -> CopulaModel:
    """Fit marginals on the (n, d) training data x and a copula on its pseudo-observations.

    The copula is fitted on a split of the training rows and the rest (``config.validation``)
    chooses the CDC's checkpoint and, for ``auto``, the candidate: every candidate's normalised
    validation log-likelihood (the CDC's with log Z by importance sampling) is stored in
    ``info['candidates']`` beside the Gaussian copula's, and a method that loses to the Gaussian
    copula is warned about. ``stopped(stage, ran, planned, unit, reason, **figures)`` is called
    once per trained network."""
    if config.marginals == "uniform":
        check_cube(x, columns)
    check_training_data(x, columns, warn)
    start = time.perf_counter()
    n, d = x.shape
    marg = mg.fit_marginals(x, config.marginals, discrete)
    u = mg.training_u(marg, x, config.ties, rng)
    z = mg.to_gaussian(u)
    corr_all = np.corrcoef(z, rowvar=False)
    names = candidates_for(config)
    trained = [c for c in names if c.startswith("cdc")]
    split_rng = np.random.default_rng(int(rng.integers(2**63 - 1)))
    fit_idx, val_idx = (validation_split(n, d, config.validation, split_rng) if trained
                        else (np.arange(n), np.arange(0)))
    z_fit, z_val = z[fit_idx], z[val_idx]
    corr_fit = np.corrcoef(z_fit, rowvar=False)
    record: dict = {"validation_rows": int(len(val_idx)), "fit_rows": int(len(fit_idx))}
    figures: dict = {}
    if len(val_idx):
        g_ll = float(gaussian_log_copula(z_val, guide_correlation(corr_fit, config.ridge)).mean())
        figures["gaussian"] = {"validation_ll": g_ll}
    elif trained and config.copula == "auto":
        warn(f"{n} rows leave too few to validate a CDC: fitted the Gaussian copula")
        names, trained = ["gaussian"], []
    models: dict = {}
    if config.copula == "reflection":
        refl_cfg = config.reflection
        if not config.steps_given:
            refl_cfg = ReflectionConfig(**{**asdict(refl_cfg), "steps": 100_000, "time_limit": config.budget})
        models["reflection"] = fit_reflection(u, refl_cfg, generator=generator, device=device,
                                              progress=progress, log=log)
        done = models["reflection"].steps_done
        if stopped:
            stopped("fit reflection", done, refl_cfg.steps, "steps",
                    "completed" if done >= refl_cfg.steps else "time-limit")
        record["steps"] = done
    if trained:
        share = config.budget / len(trained)
        plan = plan_cdc(len(fit_idx), d, 0.8 * share, config.cdc, given=config.given, device=device,
                        choose_threads=config.choose_threads)
        steps = config.cdc.steps if config.steps_given else plan.steps
        # each network stops at its planned share; the rest of the budget is the probe and the
        # validation log Z, so the whole fit stays near --budget even when the load rises
        time_limit = config.cdc.time_limit or (0.0 if config.steps_given else 0.8 * share)
        # the probe's seconds a step are printed, not stored: one seed, one file
        record["plan"] = {**plan.describe(), "steps": steps, "time_limit": time_limit,
                          "candidates": len(trained)}
        record["plan"].pop("seconds_per_step")
        record["plan"].pop("threads")
        info(f"plan: {len(trained)} CDC candidate(s) x {steps} steps, width {plan.hidden}, depth "
             f"{plan.depth}, batch {plan.batch_size}, lr {plan.lr:g} ({1000 * plan.seconds_per_step:.0f} ms "
             f"a step here on {plan.threads} thread(s); budget {config.budget:g} s" + (", steps given" if config.steps_given else "") + ")")
        for name in trained:
            cfg = CDCConfig(**{**asdict(config.cdc), "hidden": plan.hidden, "depth": plan.depth,
                               "batch_size": plan.batch_size, "lr": plan.lr, "steps": steps,
                               "time_limit": time_limit,
                               "guide": "gaussian" if name == "cdc-guided" else "none"})
            cdc = fit_cdc(z_fit, cfg, generator=generator, corr=corr_fit, device=device, progress=progress,
                          log=log, z_val=z_val if len(val_idx) else None, desc=f"fit {name}")
            entry = {"steps": cdc.record.steps_done, "planned": cdc.record.steps_planned,
                     "stop": cdc.record.reason, **({"best_step": cdc.record.best_step,
                                                    "best_validation_loss": cdc.record.best_val_loss}
                                                   if cdc.record.best_step is not None else {})}
            if len(val_idx):
                trial = CopulaModel(list(columns), marg, corr_fit, "cdc", config.ridge, cdc=cdc)
                lz = trial.log_z(config.is_draws, np.random.default_rng(int(rng.integers(2**63 - 1))),
                                 None, "samples", proposal_samples=2000, target_stderr=config.is_stderr)
                raw = float(cdc.log_density_z(z_val).mean())
                entry.update({"validation_ll": raw - lz.log_z, "validation_ll_raw": raw, "log_z": lz.log_z,
                              "log_z_stderr": lz.stderr, "ess_fraction": lz.ess_fraction,
                              "is_draws": lz.draws, "trusted": lz.trusted})
            figures[name], models[name] = entry, cdc
            if stopped:
                stopped(f"fit {name}", cdc.record.steps_done, cdc.record.steps_planned, "steps",
                        cdc.record.reason, **{k: entry[k] for k in ("best_step", "validation_ll") if k in entry})
    # choose: the best validation LL among the candidates asked for
    scored = {k: v["validation_ll"] for k, v in figures.items() if k in names and "validation_ll" in v}
    chosen = max(scored, key=scored.get) if (config.copula == "auto" and scored) else names[0]
    if chosen.startswith("cdc"):
        model = CopulaModel(list(columns), marg, corr_fit, "cdc", config.ridge, cdc=models[chosen])
        record["steps"] = models[chosen].steps_done
    else:
        model = CopulaModel(list(columns), marg, corr_all, chosen, config.ridge,
                            reflection=models.get("reflection"))
    if "gaussian" in figures and chosen in figures and "validation_ll" in figures[chosen]:
        mine, base = figures[chosen]["validation_ll"], figures["gaussian"]["validation_ll"]
        if chosen != "gaussian" and mine < base:
            warn(f"the {chosen} copula scores {mine:.3f} nats a row on the {len(val_idx)} validation rows, "
                 f"below the Gaussian copula's {base:.3f}: fit --copula auto (or gaussian) keeps the better")
        if chosen.startswith("cdc") and not figures[chosen].get("trusted", True):
            warn(f"the {chosen} validation log Z has ESS {100 * figures[chosen]['ess_fraction']:.2g} % (< 1 %): "
                 "its validation LL (and the choice) is unverified")
    record.update({"candidates": figures, "chosen": chosen, "copula_asked": config.copula})
    model.info.update(record)
    model.column_types = list(column_types) if column_types else ["float"] * d
    model.levels = dict(levels or {})
    eig = np.linalg.eigvalsh(model.corr)
    model.fit_seconds = time.perf_counter() - start   # not in the artifact: same seed, same bytes
    model.info.update({"min_eigenvalue_corr": float(eig.min()), "train_rows": int(n)})
    return model


# -------------------------------------------------------------------- evaluation

@dataclass
class EvalConfig:
    is_draws: int = 1_000_000
    samples: int = 2000
    proposals: tuple = ("issue", "samples")   # log Z proposals; the first gives ll / log_z / ess
    proposal_samples: int = 5000              # CDC samples the mixture proposal is fitted to
    target_stderr: float = 0.0                # stop IS early at this standard error of log Z


def evaluate_model(model: CopulaModel, x: np.ndarray, config: EvalConfig, *, generator: torch.Generator,
                   rng: np.random.Generator, space: str = "data",
                   progress: Callable | None = None) -> dict:
    """Held-out report on (rows, d) values in ``space``: normalised LL with log Z and ESS, the
    Gaussian-copula baseline from the same training correlation, W2 (Gaussian scale, equal n),
    Kendall-tau Frobenius error, per-dimension KS of the samples, times."""
    u_test = model.to_space(x, space, "cube")
    check_held_out(u_test, model.columns)
    z_test = model.to_space(x, space, "gaussian")
    rep: dict = {"copula": model.copula, "rows": int(len(x)), "dim": model.dim}
    gauss = CopulaModel(model.columns, model.marginals, model.corr, "gaussian", model.ridge)
    rep["gaussian_copula_ll"] = float(gauss.log_copula_z(z_test).mean())
    if model.has_density:
        t0 = time.perf_counter()
        raw = model.log_copula_z(z_test)
        rep["score_seconds_per_1k"] = (time.perf_counter() - t0) / len(x) * 1000
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"{int((~np.isfinite(raw)).sum())} test rows have a non-finite log density")
        rep["ll_raw"] = float(raw.mean())
        rep["log_z_by_proposal"] = {}
        for name in config.proposals:
            lz = model.log_z(config.is_draws, rng, progress, name, config.proposal_samples,
                             target_stderr=config.target_stderr)
            entry = {"log_z": lz.log_z, "log_z_stderr": lz.stderr, "ess": lz.ess,
                     "ess_fraction": lz.ess_fraction, "is_draws": lz.draws, "is_draws_cap": config.is_draws,
                     "is_stderr_target": config.target_stderr,
                     "ll": float(raw.mean()) - lz.log_z, "ll_trusted": lz.trusted}
            rep["log_z_by_proposal"][lz.proposal] = entry
            if "ll" not in rep:   # the first proposal asked for gives the headline figures
                rep.update({"proposal": lz.proposal, **entry})
            if lz.proposal == "exact":
                break
            if not lz.trusted:
                rep.setdefault("warnings", []).append(
                    f"importance-sampling ESS with the {lz.proposal} proposal is "
                    f"{100 * lz.ess_fraction:.2g} % (< 1 %): its normalised log-likelihood is unverified")
        if "warnings" in rep:
            rep["warning"] = "; ".join(rep.pop("warnings"))
    m = min(config.samples, len(x))
    pick = rng.choice(len(x), m, replace=False)
    t0 = time.perf_counter()
    z_s = model.sample(m, generator, "gaussian")
    rep["sample_seconds_per_1k"] = (time.perf_counter() - t0) / m * 1000
    u_s = mg.to_cube(z_s)
    rep["samples"] = m
    rep["w2"] = metrics.w2_gaussian(z_s, z_test[pick])
    rep["tau_frobenius"] = metrics.tau_frobenius(u_s, u_test[pick])
    ks = metrics.ks_uniform(u_s)
    rep["ks_max"] = float(ks.max())
    rep["ks_per_dim"] = {c: float(k) for c, k in zip(model.columns, ks)}
    rep["ks_max_test_data"] = float(metrics.ks_uniform(u_test[pick]).max())
    g_s = gauss.sample(m, generator, "gaussian")
    rep["gaussian_copula_w2"] = metrics.w2_gaussian(g_s, z_test[pick])
    rep["gaussian_copula_tau_frobenius"] = metrics.tau_frobenius(mg.to_cube(g_s), u_test[pick])
    bad = [k for k, v in _numbers(rep) if not np.isfinite(v)]
    if bad:   # never a silent NaN or inf in a report
        raise ValueError(f"non-finite figure(s) in the evaluation: {', '.join(bad)}")
    return rep


def _numbers(rep: dict, prefix: str = ""):
    """(dotted key, value) of every float in a nested report."""
    for k, v in rep.items():
        if isinstance(v, dict):
            yield from _numbers(v, f"{prefix}{k}.")
        elif isinstance(v, float):
            yield f"{prefix}{k}", v

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
from cortexkit.tools.copula.cdc import CDC, CDCConfig, fit_cdc, guide_correlation
from cortexkit.tools.copula.reflection import Reflection, ReflectionConfig, fit_reflection

COPULAS = ("cdc", "reflection", "gaussian", "independence")
SPACES = ("data", "cube", "gaussian")


@dataclass
class FitConfig:
    copula: str = "cdc"
    marginals: str = "ecdf"        # ecdf | kde
    ties: str = "random"           # random | average
    ridge: float = 1e-5
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

    @property
    def dim(self) -> int:
        return len(self.columns)

    @property
    def has_density(self) -> bool:
        return self.copula != "reflection"

    def gaussian_corr(self) -> np.ndarray:
        return guide_correlation(self.corr, self.ridge)

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
            R = self.gaussian_corr()
            inv = np.linalg.inv(R)
            _, logdet = np.linalg.slogdet(R)
            quad = np.einsum("ij,jk,ik->i", z, inv, z) - (z * z).sum(1)
            return -0.5 * quad - 0.5 * logdet
        if self.copula == "cdc":
            return self.cdc.log_density_z(z)
        raise ValueError("the reflection copula has no density (it samples only); fit --copula cdc")

    def log_z(self, draws: int, rng: np.random.Generator, progress: Callable | None = None,
              proposal: str = "issue", proposal_samples: int = 20000) -> metrics.LogZ:
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
                                        progress=progress, proposal=q)

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
                   "marginals.sizes": torch.from_numpy(sizes), "corr": torch.from_numpy(self.corr.copy())}
        meta = {"copula.columns": self.columns, "copula.copula": self.copula, "copula.ridge": self.ridge,
                "copula.marginals": self.marginals.kind, "copula.n_train": self.marginals.n,
                "copula.info": self.info}
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
        marg = mg.Marginals(meta("copula.marginals"), int(meta("copula.n_train")),
                            [kx[a:b] for a, b in zip(cuts[:-1], cuts[1:])],
                            [ku[a:b] for a, b in zip(cuts[:-1], cuts[1:])])
        corr = np.asarray(tensors["corr"], dtype=np.float64)
        model = cls(list(meta("copula.columns")), marg, corr, meta("copula.copula"),
                    float(meta("copula.ridge")), info=meta("copula.info") or {})
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


def fit_model(x: np.ndarray, columns: list[str], config: FitConfig, *, generator: torch.Generator,
              rng: np.random.Generator, device="cpu", progress: Callable | None = None,
              log: Callable[[str], None] | None = None,
              warn: Callable[[str], None] = lambda m: None) -> CopulaModel:
    """Fit marginals on the (n, d) training data x and a copula on its pseudo-observations."""
    check_training_data(x, columns, warn)
    start = time.perf_counter()
    marg = mg.fit_kde(x) if config.marginals == "kde" else mg.fit_ecdf(x)
    u = marg.cdf(x) if config.marginals == "kde" else mg.pseudo_observations(x, config.ties, rng)
    z = mg.to_gaussian(u)
    corr = np.corrcoef(z, rowvar=False)
    model = CopulaModel(list(columns), marg, corr, config.copula, config.ridge)
    if config.copula == "cdc":
        model.cdc = fit_cdc(z, config.cdc, generator=generator, corr=corr, device=device,
                            progress=progress, log=log)
        model.info["steps"] = model.cdc.steps_done
    elif config.copula == "reflection":
        model.reflection = fit_reflection(u, config.reflection, generator=generator, device=device,
                                          progress=progress, log=log)
        model.info["steps"] = model.reflection.steps_done
    eig = np.linalg.eigvalsh(corr)
    model.fit_seconds = time.perf_counter() - start   # not in the artifact: same seed, same bytes
    model.info.update({"min_eigenvalue_corr": float(eig.min()),
                       "train_rows": int(len(x))})
    return model


# -------------------------------------------------------------------- evaluation

@dataclass
class EvalConfig:
    is_draws: int = 1_000_000
    samples: int = 2000
    proposals: tuple = ("issue", "samples")   # log Z proposals; the first gives ll / log_z / ess
    proposal_samples: int = 20000


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
            lz = model.log_z(config.is_draws, rng, progress, name, config.proposal_samples)
            entry = {"log_z": lz.log_z, "log_z_stderr": lz.stderr, "ess": lz.ess,
                     "ess_fraction": lz.ess_fraction, "is_draws": lz.draws,
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

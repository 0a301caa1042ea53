"""The whole simulate-npe method from Python: simulate, merge, train, sample, score, evaluate.

Each function takes typed configs and tensors (or the Artifacts a caller read through
``formats.artifact``) and returns tensors, artifacts' contents or reports; nothing here knows
about click or output paths. Messages go to ``log``, any object with ``info``, ``detail``,
``warn``, ``progress(iterable=None, total=None, desc=None)`` and ``stopped(stage, ran, planned,
unit, reason, **figures)`` (the command line passes its ``Run``); the default is silent.

A run that fails after some simulations finished raises :class:`PartialFailure`, a CortexError
that carries those simulations (``tensors``, ``metadata``, an npe-simulations artifact's
contents) so that a caller can keep them: the command line writes them to ``--partial``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import torch

from cortexkit.formats.errors import CortexError

from . import io as npe_io
from .estimator import EnsemblePosterior, FlowConfig, PosteriorEstimator
from .priors import Prior
from .simulation import SimulationError, SimulatorSpec, run_chunks, run_pieces
from .training import TrainConfig

METHODS = ("npe", "mf-npe", "tsnpe", "mf-tsnpe", "a-mf-tsnpe")
SEQUENTIAL = ("tsnpe", "mf-tsnpe", "a-mf-tsnpe")
METRICS = ("rf-c2st", "mlp-c2st", "mmd")
BASELINES = ("npe", "none")


class _Silent:
    def info(self, message: str) -> None: ...

    def detail(self, message: str) -> None: ...

    def warn(self, message: str) -> None: ...

    def progress(self, iterable=None, total=None, desc=None, **kwargs):
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, disable=True)

    def stopped(self, stage, ran, planned, unit, reason, **figures) -> dict:
        return {"stage": stage, "ran": int(ran), "planned": int(planned), "unit": unit, "reason": reason, **figures}


SILENT = _Silent()


class PartialFailure(CortexError):
    """A run failed after some simulations finished. ``tensors`` and ``metadata`` are the finished
    simulations as an npe-simulations artifact; ``kept`` says what they are ("the 20 finished
    simulations"), for a message "<error>; <kept> were kept in <where>"."""

    def __init__(self, message: str, tensors: dict | None, metadata: dict | None, kept: str = ""):
        super().__init__(message)
        self.tensors, self.metadata, self.kept = tensors, metadata, kept


def _generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


# ---------------------------------------------------------------------------------------------
# simulate

def simulator_spec(task: str | None, fidelity: str = "hf", simulator: str | None = None,
                   simulator_cmd: str | None = None, required: bool = True) -> SimulatorSpec | None:
    """The simulator named by a built-in task, a ``module:function`` or a shell command (one of them)."""
    from .tasks import get_task

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


def parse_shard(shard: str | None) -> tuple[int, int]:
    """'i/N' -> (i, N); None -> (0, 1)."""
    if not shard:
        return 0, 1
    try:
        i, n = (int(v) for v in shard.split("/"))
    except ValueError:
        raise CortexError(f"--shard {shard!r}: expected i/N, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise CortexError(f"--shard {shard}: need 0 <= i < N")
    return i, n


@dataclass
class SimulateConfig:
    """How a run of simulations is cut and executed. Chunk c of the run is seeded from (seed, c).
    ``scheduler``: the address of a Dask distributed scheduler that runs the chunks as tasks."""

    chunk_size: int = 1000
    workers: int = 1
    timeout: float | None = None
    shard: tuple[int, int] = (0, 1)
    seed: int = 0
    quantile: float = 1e-6  # truncation, when parameters come from a proposal
    truncation_samples: int = 1_000_000
    scheduler: str | None = None


def shard_rows(total: int, chunk_size: int, shard: tuple[int, int]) -> tuple[int, int]:
    """Rows [lo, hi) of shard i of N. With at least N chunks the shards are whole chunks (so any
    simulator gives the unsharded numbers); with fewer, rows are split evenly (no shard is empty
    unless total < N)."""
    i, n = shard
    n_chunks = -(-total // chunk_size)
    if n_chunks >= n:
        return min(total, n_chunks * i // n * chunk_size), min(total, n_chunks * (i + 1) // n * chunk_size)
    return total * i // n, total * (i + 1) // n


def digest(value) -> str:
    """A short content digest: of a tensor's float32 bytes, or of a JSON-able value."""
    import hashlib
    import json

    if isinstance(value, torch.Tensor):
        data = value.detach().float().contiguous().numpy().tobytes()
    else:
        data = json.dumps(value, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def run_record(spec: SimulatorSpec, theta: torch.Tensor, config: SimulateConfig, prior: Prior | None) -> dict:
    """What makes simulations one run: every shard and partial file carries it, merge and --resume
    compare it (n, seed, chunk size, simulator, prior digest, theta digest)."""
    return {"n": int(theta.shape[0]), "seed": int(config.seed), "chunk_size": int(config.chunk_size),
            "simulator": spec.describe(), "prior": digest(prior.to_spec()) if prior is not None else "",
            "theta": digest(theta)}


def _coalesce(ranges) -> list[list[int]]:
    out = []
    for a, b in sorted((int(a), int(b)) for a, b in ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _missing(lo: int, hi: int, done) -> list[list[int]]:
    gaps, pos = [], lo
    for a, b in _coalesce(done):
        if a > pos:
            gaps.append([pos, min(a, hi)])
        pos = max(pos, b)
    if pos < hi:
        gaps.append([pos, hi])
    return [g for g in gaps if g[1] > g[0]]


def _ranges_text(ranges) -> str:
    return ", ".join(f"{a}..{b - 1}" for a, b in ranges)


def draw_parameters(prior: Prior | None, n: int | None, generator: torch.Generator, *,
                    posterior: EnsemblePosterior | None = None, x_o: torch.Tensor | None = None,
                    quantile: float = 1e-6, truncation_samples: int = 1_000_000, log=SILENT) -> torch.Tensor:
    """n parameter vectors (n, d): from the prior, or from the prior truncated where
    log q(theta | x_o) of ``posterior`` exceeds its ``quantile`` (a TSNPE round's proposal)."""
    from .methods import density_threshold, sample_truncated_prior

    if prior is None:
        raise CortexError("no prior: give --prior YAML or --task NAME (or --theta FILE)")
    if not n:
        raise CortexError("give -n/--num-simulations (or --theta FILE)")
    if posterior is None:
        return prior.sample(n, generator)
    log.info(f"truncating the prior with {truncation_samples} posterior draws (quantile {quantile:g})")
    tau = density_threshold(posterior, x_o, quantile, truncation_samples)
    theta, rate = sample_truncated_prior(prior, posterior, x_o, tau, n, generator)
    log.info(f"truncated prior: log q threshold {tau:.4g}, acceptance {rate:.3g}")
    return theta


@dataclass
class Simulations:
    """An npe-simulations artifact's contents: theta (n, d), x (n, x_dim), index (n,) int64."""

    tensors: dict
    metadata: dict

    @property
    def n_invalid(self) -> int:
        return int(self.metadata.get("npe.n_invalid", 0))


def simulate(spec: SimulatorSpec, theta: torch.Tensor, config: SimulateConfig = SimulateConfig(),
             prior: Prior | None = None, log=SILENT, resume=None) -> Simulations:
    """Simulate this shard's rows of theta (N, d), the parameters of the whole run -> Simulations.
    Rows whose x holds NaN/inf are dropped and counted. ``resume``: the partial file (an Artifact)
    of an interrupted run of the same simulations; only the rows it lacks are simulated. Raises
    PartialFailure carrying every finished row (those of ``resume`` too) and their row ranges; a
    KeyboardInterrupt (or other BaseException) that stops the run is re-raised with that
    PartialFailure as its ``partial`` attribute when some rows had finished."""
    chunk_size, total = config.chunk_size, theta.shape[0]
    shard_i, shard_n = config.shard
    lo, hi = shard_rows(total, chunk_size, config.shard)
    record = run_record(spec, theta, config, prior)
    meta = {"npe.simulator": spec.describe(), "npe.fidelity": spec.fidelity if spec.kind == "task" else "",
            "npe.n_requested": total, "npe.shard": f"{shard_i}/{shard_n}", "npe.chunk_size": chunk_size,
            "npe.run": record, "npe.rows": [lo, hi]}
    if prior is not None:
        meta.update({"npe.prior": prior.to_spec(), "npe.parameter_names": prior.names})
    kept, done, n_bad_before = _resumed(resume, record, meta, theta, lo, hi, spec.kind == "task") if resume is not None else ({}, [], 0)
    pieces = []
    for c in range(lo // chunk_size, -(-hi // chunk_size)) if hi > lo else ():
        a, b = max(lo, c * chunk_size), min(hi, (c + 1) * chunk_size)
        for ga, gb in _missing(a, b, done):
            whole = spec.kind == "task" or (ga, gb) == (c * chunk_size, min(total, (c + 1) * chunk_size))
            start, stop = (c * chunk_size, min(total, (c + 1) * chunk_size)) if whole else (ga, gb)
            pieces.append((c, start, stop, (ga, gb)))
    if spec.kind != "task" and any(p[3] != (p[0] * chunk_size, min(total, (p[0] + 1) * chunk_size)) for p in pieces):
        log.warn(f"shard {shard_i}/{shard_n} (rows {lo}..{hi - 1}) cuts a chunk of {chunk_size} rows: a random "
                 f"simulator gives other numbers than the unsharded run; --chunk-size {-(-total // shard_n)} "
                 "(or less) keeps them equal")
    from .simulation import Piece

    pieces = [Piece(c, start, stop, keep, start - c * chunk_size) for c, start, stop, keep in pieces]
    if resume is not None:
        log.info(f"resuming: {sum(b - a for a, b in done)} of {hi - lo} simulations done, "
                 f"{sum(p.keep[1] - p.keep[0] for p in pieces)} to go")
    bar = log.progress(total=len(pieces), desc="simulating")
    new = {}

    def on_done(piece, x):
        new[piece.keep] = x
        bar.update(1)

    def assemble():
        xs, ths, idx = [], [], []
        for (a, b), x in new.items():
            xs.append(x)
            ths.append(theta[a:b])
            idx.append(torch.arange(a, b, dtype=torch.int64))
        n_bad = n_bad_before
        if xs:
            x, th, ix = torch.cat(xs), torch.cat(ths), torch.cat(idx)
            ok = torch.isfinite(x).all(1)
            n_bad += int((~ok).sum())
            x, th, ix = x[ok], th[ok], ix[ok]
            if kept:
                if kept["x"].shape[0] and x.shape[0] and kept["x"].shape[1] != x.shape[1]:
                    raise CortexError(f"the simulator returns x of dimension {x.shape[1]} but the resumed "
                                      f"partial file holds {kept['x'].shape[1]}")
                x, th, ix = torch.cat([kept["x"], x]), torch.cat([kept["theta"], th]), torch.cat([kept["index"], ix])
        elif kept:
            x, th, ix = kept["x"], kept["theta"], kept["index"]
        else:
            x, th, ix = torch.zeros(0, 0), theta[:0], torch.zeros(0, dtype=torch.int64)
        order = torch.argsort(ix)
        return {"theta": th[order].float().contiguous(), "x": x[order].float().contiguous(),
                "index": ix[order].contiguous()}, n_bad

    try:
        run_pieces(spec, theta, pieces, seed=config.seed, workers=config.workers, timeout=config.timeout,
                   encode=npe_io.encode_theta, decode=npe_io.decode_x, on_done=on_done, scheduler=config.scheduler)
    except SimulationError as err:
        bar.close()
        raise _partial_failure(str(err), done, new, assemble, meta) from None
    except BaseException as stop:  # Ctrl-C, SIGTERM (a Slurm time limit): it stays an interruption,
        if isinstance(stop, Exception):  # carrying what finished as stop.partial
            raise
        bar.close()
        failure = _partial_failure("interrupted", done, new, assemble, meta)
        if failure.tensors is not None:
            stop.partial = failure
        raise
    bar.close()
    tensors, n_bad = assemble()
    if hi > lo and tensors["theta"].shape[0] == 0:
        raise CortexError(f"all {hi - lo} simulations returned NaN/inf; nothing to write")
    if n_bad:
        log.warn(f"dropped {n_bad} of {hi - lo} simulations with NaN/inf output")
    if hi == lo:
        log.info(f"shard {shard_i}/{shard_n} of {total} simulations has no rows: an empty shard file")
    else:
        log.info(f"{tensors['theta'].shape[0]} simulations ({spec.describe()}), {n_bad} invalid dropped")
    return Simulations(tensors, {**meta, "npe.n_invalid": n_bad})


def _partial_failure(message, done, new, assemble, meta) -> PartialFailure:
    """The PartialFailure of a run stopped after the rows ``done`` (resumed) and ``new`` finished."""
    finished = _coalesce(done + [list(k) for k in new])
    if not finished:
        return PartialFailure(message, None, None)
    tensors, n_bad = assemble()
    n_rows = sum(b - a for a, b in finished)
    return PartialFailure(message, tensors, {**meta, "npe.n_invalid": n_bad, "npe.partial": True, "npe.done": finished},
                          f"the {n_rows} finished simulations (rows {_ranges_text(finished)})")


def _split_keeps_chunks(record: dict, split: str, task: bool) -> bool:
    """Whether every row of a run split N ways ("i/N", or "merged/N" for merge --allow-partial's
    output) has the numbers of the unsharded run: always for a built-in task, else when no shard
    boundary cuts a chunk (the run has at least N chunks; see shard_rows)."""
    n_split = int(str(split).split("/")[1])
    return task or -(-int(record["n"]) // int(record["chunk_size"])) >= n_split


def _resumed(resume, record, meta, theta, lo, hi, task=False):
    """The finished rows of a partial file of this very run: (tensors, done ranges, invalid count).
    The file may come from another split of the run (another --shard N, or merge --allow-partial
    of some shards) when both splits give every row the unsharded numbers."""
    src = resume.source
    if not resume.metadata.get("npe.partial") == "true" or "npe.done" not in resume.metadata:
        raise CortexError(f"--resume {src}: not the partial file of a failed simulate run (no npe.done)")
    theirs = resume.meta_json("npe.run") or {}
    for key, ours in record.items():
        if theirs.get(key) != ours:
            what = {"theta": "parameters", "prior": "prior"}.get(key, key)
            raise CortexError(f"--resume {src}: it is from another run ({what} {theirs.get(key)!r}, "
                              f"this run {ours!r}); resume with the options that made it")
    theirs_split, ours_split = str(resume.metadata.get("npe.shard", "0/1")), meta["npe.shard"]
    if theirs_split != ours_split and not (_split_keeps_chunks(record, theirs_split, task)
                                           and _split_keeps_chunks(record, ours_split, task)):
        raise CortexError(f"--resume {src}: it is shard {theirs_split}, this run is shard {ours_split}, and one of "
                          f"the two splits cuts the run's chunks of {record['chunk_size']} rows (a random simulator's "
                          "numbers then depend on the split); resume each shard's partial file with its own --shard")
    done = _coalesce(resume.meta_json("npe.done"))
    if any(a < lo or b > hi for a, b in done):
        raise CortexError(f"--resume {src}: its rows {_ranges_text(done)} lie outside this shard's {lo}..{hi - 1}")
    kept = {"theta": resume.tensor("theta").float(), "x": resume.tensor("x").float(), "index": resume.tensor("index")}
    if not torch.equal(kept["theta"], theta[kept["index"]].float()):
        raise CortexError(f"--resume {src}: its parameters differ from this run's (damaged?)")
    return kept, done, int(resume.meta_json("npe.n_invalid", 0) or 0)


# ---------------------------------------------------------------------------------------------
# merge

def merge(parts: list, log=SILENT, allow_partial: bool = False) -> Simulations:
    """Join the shards of one run (files that carry npe.run) in run order; the result of a complete
    set is what the unsharded run writes. Refuses a set that is incomplete, repeats a shard or mixes
    runs, naming what is wrong, unless ``allow_partial`` (then it says what it joins). Files without
    npe.run (other simulation files) are concatenated as before."""
    runs = [art.meta_json("npe.run") for art in parts]
    if all(r is None for r in runs):
        return _merge_plain(parts, log)
    if any(r is None for r in runs):
        bad = next(art.source for art, r in zip(parts, runs) if r is None)
        raise CortexError(f"{bad}: not a shard of a simulate run (no npe.run), unlike {parts[runs.index(next(r for r in runs if r))].source}; "
                          "merge shards of one run, or plain simulation files, not both")
    first, ref = parts[0], runs[0]
    for art, r in zip(parts[1:], runs[1:]):
        for key in ref:
            if r.get(key) != ref.get(key):
                what = {"theta": "parameters (theta digest)", "prior": "prior (digest)"}.get(key, key)
                raise CortexError(f"{art.source} and {first.source} are from different runs: {what} "
                                  f"{r.get(key)!r} vs {ref.get(key)!r}")
    n_total = int(ref["n"])
    shards = [str(art.metadata.get("npe.shard", "0/1")) for art in parts]
    counts = {s_.split("/")[1] for s_ in shards}
    if len(counts) > 1:
        raise CortexError(f"the files are shards of different splits ({', '.join(sorted(set(shards)))}); "
                          "merge the shards of one --shard i/N split")
    n_shards = int(counts.pop())
    seen: dict[str, str] = {}
    for art, sh in zip(parts, shards):
        if sh in seen:
            raise CortexError(f"shard {sh} given twice ({seen[sh]}, {art.source}); merge each shard once")
        seen[sh] = art.source
    covered, problems = [], []
    for art, sh in zip(parts, shards):
        lo, hi = art.meta_json("npe.rows")
        if art.metadata.get("npe.partial") == "true":
            done = _coalesce(art.meta_json("npe.done") or [])
            gaps = _missing(lo, hi, done)
            problems.append(f"{art.source} is the partial file of shard {sh} (rows {_ranges_text(gaps)} missing; "
                            "finish it with simulate --resume)")
            covered += done
        else:
            covered.append([lo, hi])
    missing_shards = [i for i in range(n_shards) if f"{i}/{n_shards}" not in seen]
    if missing_shards:
        rows = [shard_rows(n_total, int(ref["chunk_size"]), (i, n_shards)) for i in missing_shards]
        problems.insert(0, f"shard{'s' if len(missing_shards) > 1 else ''} "
                           f"{', '.join(str(i) for i in missing_shards)} of {n_shards} missing "
                           f"(rows {_ranges_text(r for r in rows if r[1] > r[0]) or 'none'})")
    covered = _coalesce(covered)
    n_rows = sum(b - a for a, b in covered)
    if problems and not allow_partial:
        raise CortexError("incomplete set: " + "; ".join(problems) + ". Give every shard, or --allow-partial "
                          "to join what is here")
    loaded = sorted(parts, key=lambda art: art.meta_json("npe.rows")[0])
    x_dims = {art.tensor("x").shape[1] for art in loaded if art.tensor("x").shape[0]}
    if len(x_dims) > 1:
        raise CortexError(f"the shards' x have different dimensions {sorted(x_dims)}")
    x_dim = x_dims.pop() if x_dims else 0
    theta = torch.cat([art.tensor("theta").float() for art in loaded])
    x = torch.cat([art.tensor("x").float().reshape(-1, x_dim) for art in loaded])
    index = torch.cat([art.tensor("index") for art in loaded])
    order = torch.argsort(index)
    tensors = {"theta": theta[order].contiguous(), "x": x[order].contiguous(), "index": index[order].contiguous()}
    meta = {k: first.metadata[k] for k in ("npe.prior", "npe.parameter_names", "npe.simulator", "npe.fidelity",
                                           "npe.chunk_size", "npe.run") if k in first.metadata}
    meta["npe.n_requested"] = n_total
    meta["npe.n_invalid"] = sum(int(art.meta_json("npe.n_invalid", 0) or 0) for art in parts)
    if problems:
        meta.update({"npe.shard": f"merged/{n_shards}", "npe.rows": [0, n_total], "npe.partial": True,
                     "npe.done": covered})
        log.warn("joining an incomplete set (--allow-partial): " + "; ".join(problems))
        log.info(f"merged {len(parts)} of {n_shards} shards: rows {_ranges_text(covered) or 'none'} "
                 f"({n_rows} of {n_total}), {theta.shape[0]} simulations; the result is a partial file")
    else:
        meta.update({"npe.shard": "0/1", "npe.rows": [0, n_total]})
        log.info(f"merged {n_shards} shards: all {n_total} rows, {theta.shape[0]} simulations")
    return Simulations(tensors, meta)  # values copied from an artifact are its JSON text


def _merge_plain(parts: list, log=SILENT) -> Simulations:
    """Join simulation files that are not shards of one run (no npe.run) in index order."""
    loaded = []
    for art in parts:
        loaded.append((art, art.tensor("theta"), art.tensor("x"), art.tensors.get("index")))
    first = loaded[0][0]
    for art, theta, x, _ in loaded[1:]:
        if x.shape[1] != loaded[0][2].shape[1]:
            raise CortexError(f"{art.source}: x has dimension {x.shape[1]} but {first.source} has {loaded[0][2].shape[1]}")
        if theta.shape[1] != loaded[0][1].shape[1]:
            raise CortexError(f"{art.source}: theta has {theta.shape[1]} columns but {first.source} has {loaded[0][1].shape[1]}")
        if art.metadata.get("npe.prior") != first.metadata.get("npe.prior"):
            raise CortexError(f"{art.source}: its prior differs from {first.source}'s; shards of one run share the prior")
    have_index = all(p[3] is not None for p in loaded)
    theta = torch.cat([p[1] for p in loaded])
    x = torch.cat([p[2] for p in loaded])
    tensors = {"theta": theta, "x": x}
    if have_index:
        index = torch.cat([p[3] for p in loaded])
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
    meta["npe.n_invalid"] = sum(int(p[0].meta_json("npe.n_invalid", 0) or 0) for p in loaded)
    meta["npe.n_requested"] = sum(int(p[0].meta_json("npe.n_requested", 0) or 0) for p in loaded) if len(loaded) == 1 else \
        max(int(p[0].meta_json("npe.n_requested", 0) or 0) for p in loaded)
    meta["npe.merged"] = len(loaded)
    log.info(f"merged {len(loaded)} files: {theta.shape[0]} simulations")
    return Simulations(tensors, meta)  # values copied from an artifact are its JSON text


# ---------------------------------------------------------------------------------------------
# train

@dataclass
class MethodConfig:
    """One train run: the method, the flow, the optimiser and the sequential loop (the paper's defaults)."""

    method: str = "npe"
    flow: FlowConfig = field(default_factory=FlowConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    lr_pretrain: float = 1e-4
    patience_pretrain: int = 20  # LF pretraining (methods.PATIENCE_PRETRAIN); HF fits: train.patience
    x_stats: str = "auto"  # auto | refit | keep
    hf_budget: int | None = None
    rounds: int = 5
    quantile: float = 1e-6
    truncation_samples: int = 1_000_000
    ensemble: int = 0  # 0: 5 for a-mf-tsnpe, else 1
    active_fraction: float | None = None  # None: 0.2 for a-mf-tsnpe, else 0
    candidates: int = 0  # 0: 250 / 2500 / 25000 by budget
    timeout: float | None = None
    workers: int = 1
    seed: int = 0
    baseline: str | None = None  # npe | none; None: npe for mf-npe, else none (see resolved_baseline)

    @classmethod
    def from_options(cls, **options) -> "MethodConfig":
        """Build from flat option values (the command line's names: lr, batch_size, transforms, ...)."""
        flow = FlowConfig(**{f.name: options.pop(f.name) for f in fields(FlowConfig) if f.name in options})
        train = TrainConfig(**{f.name: options.pop(f.name) for f in fields(TrainConfig) if f.name in options})
        return cls(flow=flow, train=train, **options)

    @property
    def sequential(self) -> bool:
        return self.method in SEQUENTIAL

    @property
    def multifidelity(self) -> bool:
        return self.method.startswith("mf-") or self.method.startswith("a-mf-")

    @property
    def members(self) -> int:
        return self.ensemble or (5 if self.method == "a-mf-tsnpe" else 1)

    @property
    def active(self) -> float:
        if self.active_fraction is not None:
            return self.active_fraction
        return 0.2 if self.method == "a-mf-tsnpe" else 0.0

    @property
    def resolved_baseline(self) -> str:
        """The first-try baseline fitted beside the method: plain NPE on the HF simulations for
        mf-npe (what a user tries before bringing in an LF simulator); none where there is nothing
        simpler (npe) or no HF set to fit it on (the sequential methods)."""
        if self.baseline is None:
            return "npe" if self.method == "mf-npe" else "none"
        if self.baseline not in BASELINES:
            raise CortexError(f"--baseline {self.baseline}: use one of {', '.join(BASELINES)}")
        if self.baseline == "npe" and self.method != "mf-npe":
            raise CortexError(f"--baseline npe is for --method mf-npe (the plain HF-only NPE beside it); "
                              f"--method {self.method} takes --baseline none")
        return self.baseline

    @property
    def refit_x_stats(self) -> bool:
        return {"auto": self.method == "mf-npe", "refit": True, "keep": False}[self.x_stats]


@dataclass
class TrainInputs:
    """What a method trains on: the prior, LF and HF simulations (theta (n, d), x (n, x_dim)), an
    LF-pretrained estimator, and for sequential methods the HF simulator and one observation x_o (x_dim,)."""

    prior: Prior
    lf: tuple[torch.Tensor, torch.Tensor] | None = None
    hf: tuple[torch.Tensor, torch.Tensor] | None = None
    pretrained: PosteriorEstimator | None = None
    simulator: SimulatorSpec | None = None
    x_o: torch.Tensor | None = None


def load_train_inputs(config: MethodConfig, read, *, hf: str | None = None, lf: str | None = None,
                      pretrained: str | None = None, prior: Prior | None = None, task: str | None = None,
                      simulator: str | None = None, simulator_cmd: str | None = None, x_o: str | None = None,
                      observation: int | None = None) -> TrainInputs:
    """Check every input of a train run before any work and load it. ``read(source, kind=None,
    max_version=None)`` reads an artifact (formats.artifact.read_artifact); the sources are its names."""
    from . import methods as M

    method = config.method
    config.resolved_baseline  # an impossible --baseline fails before anything is read
    pre = None
    if pretrained:
        pre = npe_io.posterior_from_artifact(read(pretrained, npe_io.POSTERIOR_KIND, max_version=1)).members[0]
        if prior is not None and prior.to_spec() != pre.prior.to_spec():
            raise CortexError(f"{pretrained}: its prior differs from the one given")
        prior = prior or pre.prior
    if config.multifidelity and not (lf or pre is not None):
        raise CortexError(f"--method {method} needs --lf FILE (low-fidelity simulations) or --pretrained POSTERIOR")
    if not config.multifidelity and (lf or pretrained):
        raise CortexError(f"--method {method} uses HF data only; drop --lf/--pretrained or use mf-{method}")
    lf_data = hf_data = None
    if lf and pre is None:
        art = read(lf)
        prior = prior or npe_io.prior_from_artifact(art)
        if prior is None:
            raise CortexError("no prior: give --prior YAML or --task NAME")
        lf_data = npe_io.simulations_from(art, "LF", prior)
    ref_dim = lf_data[1].shape[1] if lf_data is not None else (pre.x_dim if pre is not None else None)
    if not config.sequential:
        if not hf:
            raise CortexError(f"--method {method} needs --hf FILE (high-fidelity simulations)")
        art = read(hf)
        prior = prior or npe_io.prior_from_artifact(art)
        if prior is None:
            raise CortexError("no prior: give --prior YAML or --task NAME")
        hf_data = npe_io.simulations_from(art, "HF", prior)
        if ref_dim is not None and ref_dim != hf_data[1].shape[1]:
            src = lf if lf_data is not None else pretrained
            raise CortexError(f"LF x ({src}) has dimension {ref_dim} but HF x ({hf}) has {hf_data[1].shape[1]}; "
                              "both fidelities must share the x-space")
        return TrainInputs(prior, lf_data, hf_data, pre)
    if prior is None:
        raise CortexError("no prior: give --prior YAML or --task NAME")
    if hf:
        raise CortexError(f"--method {method} simulates HF data in its rounds; give a simulator, not --hf")
    spec = simulator_spec(task, "hf", simulator, simulator_cmd)
    if not x_o:
        raise CortexError(f"--method {method} is trained for one observation: give --x-o FILE")
    if not config.hf_budget:
        raise CortexError(f"--method {method} needs --hf-budget N (HF simulations over all rounds)")
    x_o_all = npe_io.observations_from(read(x_o), observation, ref_dim)
    if x_o_all.shape[0] != 1:
        raise CortexError(f"{x_o}: holds {x_o_all.shape[0]} observations; choose one with --observation i")
    try:
        M.round_sizes(config.hf_budget, config.rounds, 0.0)
    except ValueError as exc:
        raise CortexError(str(exc)) from None
    if config.active > 0 and config.members < 2:
        raise CortexError("acquisition (--active-fraction > 0) needs --ensemble of at least 2")
    return TrainInputs(prior, lf_data, None, pre, spec, x_o_all[0])


@dataclass
class TrainResult:
    """A trained posterior and the npe-posterior artifact's contents (``tensors``, ``metadata``)."""

    posterior: EnsemblePosterior
    tensors: dict
    metadata: dict
    stages: list = field(default_factory=list)  # per fit: the stop record and the per-epoch curve


def train(config: MethodConfig, inputs: TrainInputs, log=SILENT) -> TrainResult:
    """Run one of the five methods. Amortized ones train on ``inputs.hf`` (after pretraining on
    ``inputs.lf`` for mf-npe); sequential ones simulate HF data in rounds with ``inputs.simulator``
    for ``inputs.x_o``. A sequential run whose simulator fails after some rounds raises
    PartialFailure carrying those rounds' HF simulations (tensor ``round`` says which)."""
    from . import methods as M
    from .io import posterior_metadata, posterior_tensors

    method, flow_cfg, base, seed = config.method, config.flow.resolve(config.method), config.train, config.seed
    prior, pre = inputs.prior, inputs.pretrained
    stages = []  # one entry per fit: the --log curve

    history, extra_tensors, baseline = {}, {}, None
    if config.multifidelity and pre is None:
        theta_lf, x_lf = inputs.lf
        log.info(f"pretraining on {theta_lf.shape[0]} LF simulations (lr {config.lr_pretrain:g})")
        pre_cfg = M.pretrain_config(base, config.lr_pretrain, config.patience_pretrain)
        mon = StageMonitor(log, "pretraining", pre_cfg, stages)
        pre, h = M.fit_npe(prior, theta_lf, x_lf, flow_cfg, pre_cfg, seed, mon)
        mon.close(h)
        history["pretrain"] = h.summary()
    if method == "npe":
        log.info(f"training on {inputs.hf[0].shape[0]} HF simulations (lr {base.lr:g})")
        mon = StageMonitor(log, "training", base, stages)
        model, h = M.fit_npe(prior, inputs.hf[0], inputs.hf[1], flow_cfg, base, seed, mon)
        mon.close(h)
        history["train"] = h.summary()
        posterior = EnsemblePosterior([model])
    elif method == "mf-npe":
        log.info(f"fine-tuning on {inputs.hf[0].shape[0]} HF simulations (lr {base.lr:g})")
        mon = StageMonitor(log, "fine-tuning", base, stages)
        model, h = M.fine_tune(pre, inputs.hf[0], inputs.hf[1], base, seed, config.refit_x_stats, mon)
        mon.close(h)
        history["finetune"] = h.summary()
        posterior = EnsemblePosterior([model])
        if config.resolved_baseline == "npe":
            baseline = _baseline_npe(config, inputs, model, h.split, stages, log)
            history["baseline"] = baseline.pop("history")
    else:
        posterior, records = _train_sequential(config, inputs, pre if config.multifidelity else None, stages, log)
        history["rounds"] = [{"n": int(r.theta.shape[0]), "acquired": int(r.acquired.sum()), "invalid": r.n_invalid,
                              "acceptance": r.acceptance, "tau": None if math.isnan(r.tau) else r.tau,
                              "train": r.train} for r in records]
        extra_tensors = {
            "x_o": inputs.x_o.clone(),
            "rounds.theta": torch.cat([r.theta for r in records]),
            "rounds.x": torch.cat([r.x for r in records]),
            "rounds.round": torch.cat([torch.full((r.theta.shape[0],), i + 1, dtype=torch.int64)  # 1 = first, as logged
                                       for i, r in enumerate(records)]),
            "rounds.acquired": torch.cat([r.acquired for r in records]),
            "rounds.tau": torch.tensor([r.tau for r in records], dtype=torch.float64),
        }
    tensors = {**posterior_tensors(posterior), **extra_tensors}
    meta = {**posterior_metadata(posterior), "npe.method": method, "npe.history": history,
            **({"npe.baseline": baseline} if baseline else {}),
            # why each fit stopped, the same from Python as from the command line
            "cortexkit.stopped": [{k: v for k, v in st.items() if k not in _CURVE_KEYS} for st in stages]}
    return TrainResult(posterior, tensors, meta, stages)


def _baseline_npe(config: MethodConfig, inputs: TrainInputs, model, split, stages, log) -> dict:
    """Fit plain NPE on the HF simulations alone (the same options and seed, the fine-tuning's
    train/validation split), score both fits on the held-out HF rows, say both on one line and
    warn when MF-NPE loses. Returns the record stored as npe.baseline (with ``history``, the
    baseline fit's summary, for npe.history)."""
    from . import methods as M

    theta, x = inputs.hf
    val = split[1]
    log.info(f"baseline: NPE on the same {theta.shape[0]} HF simulations, no LF (--baseline none skips it)")
    mon = StageMonitor(log, "baseline", config.train, stages)
    # the same flow as the MF-NPE fit (its log-normal map included), so the two differ only by the LF data
    base_model, h = M.fit_npe(inputs.prior, theta, x, config.flow.resolve(config.method), config.train, config.seed,
                              mon, split=split)
    mon.close(h)
    ours, theirs = M.held_out_loss(model, theta[val], x[val]), M.held_out_loss(base_model, theta[val], x[val])
    log.info(f"validation ({val.numel()} held-out HF simulations), -log q(theta | x): "
             f"MF-NPE {ours:.4f} vs NPE on HF only {theirs:.4f}")
    if ours > theirs:
        log.warn(f"NPE on the HF simulations alone beats MF-NPE on the held-out HF simulations "
                 f"({theirs:.4f} vs {ours:.4f} nats): the LF pretraining hurts here; check the LF simulator "
                 "against the HF one, or train --method npe")
    return {"baseline": "npe", "validation_simulations": int(val.numel()), "method_val_loss": round(ours, 6),
            "baseline_val_loss": round(theirs, 6), "history": h.summary()}


_CURVE_KEYS = ("n_train", "n_validation", "train_loss", "val_loss")


class StageMonitor:
    """Talks while one fit runs: a progress bar (epoch, best validation loss, patience left), an
    epoch line under -v, and when the fit ends one ``log.stopped`` record saying why. The curve
    (per-epoch losses) is appended to ``stages`` for ``--log``."""

    def __init__(self, log, stage: str, cfg: TrainConfig, stages: list | None = None):
        self.log, self.stage, self.cfg, self.stages = log, stage, cfg, stages
        # short enough for 80 columns: "round 2/5 member 3/5: epoch 57, best val -1.2345 (epoch 40), patience 3 left [00:12]"
        self.bar = log.progress(total=None, desc=stage, unit="epoch",
                                bar_format="{desc}: epoch {n_fmt}{postfix} [{elapsed}]")

    def __call__(self, rec) -> None:
        self.bar.set_postfix_str(f"best val {rec.best_val_loss:.4f} (epoch {rec.best_epoch + 1}), "
                                 f"patience {rec.patience_left} left", refresh=False)
        self.bar.update(1)
        self.bar.refresh()  # every epoch, not only after tqdm's minimum interval
        self.log.detail(f"{self.stage}: epoch {rec.epoch + 1}: train {rec.train_loss:.4f} validation "
                        f"{rec.val_loss:.4f} best {rec.best_val_loss:.4f} (epoch {rec.best_epoch + 1}), "
                        f"patience {rec.patience_left} left")

    def close(self, hist) -> None:
        self.bar.close()
        reason = hist.stop_reason  # patience (no better validation loss in --patience epochs) or step-cap
        self.record = self.log.stopped(self.stage, hist.epochs, hist.max_epochs, "epochs", reason,
                                       best_validation_loss=float(hist.best_val_loss), best_epoch=hist.best_epoch + 1)
        if self.stages is not None:
            self.stages.append({**self.record, "n_train": hist.n_train, "n_validation": hist.n_val, **hist.curve()})


def _train_sequential(config: MethodConfig, inputs: TrainInputs, pretrained, stages, log):
    from . import methods as M

    spec, x_o, prior, seed, rounds = inputs.simulator, inputs.x_o, inputs.prior, config.seed, config.rounds
    sim_calls = [0]
    finished = []  # (theta, x) of every round whose simulations came back

    def hf_simulator(theta):
        # every round is its own block of chunks so the seeds never repeat between rounds
        chunk = max(1, theta.shape[0])
        block = 1_000_003 * (sim_calls[0] + 1)
        sim_calls[0] += 1
        try:
            out = run_chunks(spec, theta, [block], chunk, seed=seed, workers=1, timeout=config.timeout,
                             encode=npe_io.encode_theta, decode=npe_io.decode_x,
                             first_index=sum(t.shape[0] for t, _ in finished))
        except SimulationError as err:
            raise CortexError(f"round {sim_calls[0]}: {err}") from None
        x = out[block]
        if x.shape[1] != x_o.shape[0]:
            raise CortexError(f"round {sim_calls[0]}: the HF simulator returns x of dimension {x.shape[1]} "
                              f"but the observation has {x_o.shape[0]}")
        finished.append((theta, x))
        return x

    members = config.members

    def monitor(r, i):
        label = f"round {r + 1}/{rounds}" + (f" member {i + 1}/{members}" if members > 1 else "")
        return StageMonitor(log, label, config.train, stages)

    def on_round(r, rec):
        log.info(f"round {r + 1}/{rounds}: {rec.theta.shape[0]} HF simulations ({int(rec.acquired.sum())} acquired, "
                 f"{rec.n_invalid} invalid), proposal acceptance {rec.acceptance:.3g}, "
                 f"epochs {[t['epochs'] for t in rec.train]}")

    try:
        return M.run_sequential(
            prior, hf_simulator, x_o, config.hf_budget, pretrained=pretrained, flow_cfg=config.flow,
            ensemble_size=config.members, active_fraction=config.active, rounds=rounds, quantile=config.quantile,
            truncation_samples=config.truncation_samples, candidates=config.candidates or None,
            train_cfg=config.train, seed=seed, refit_x_stats=config.refit_x_stats, on_round=on_round,
            monitor=monitor)
    except CortexError as err:
        if not finished:
            raise
        theta = torch.cat([t for t, _ in finished])
        x = torch.cat([v for _, v in finished])
        ok = torch.isfinite(x).all(1)
        rnd = torch.cat([torch.full((t.shape[0],), i + 1, dtype=torch.int64)  # 1 = first, as in the messages
                         for i, (t, _) in enumerate(finished)])
        tensors = {"theta": theta[ok].contiguous(), "x": x[ok].contiguous(),
                   "index": torch.arange(theta.shape[0], dtype=torch.int64)[ok], "round": rnd[ok]}
        meta = {"npe.simulator": spec.describe(), "npe.fidelity": "hf", "npe.prior": prior.to_spec(),
                "npe.parameter_names": prior.names, "npe.n_invalid": int((~ok).sum()), "npe.partial": True}
        raise PartialFailure(str(err), tensors, meta, f"the {int(ok.sum())} HF simulations of the {len(finished)} "
                             "finished round(s)") from None


# ---------------------------------------------------------------------------------------------
# sample / score

def sample(posterior: EnsemblePosterior, x_o: torch.Tensor, n: int, generator: torch.Generator | None = None,
           log=SILENT) -> torch.Tensor:
    """n posterior draws for each observation: x_o (n_obs, x_dim) -> theta (n_obs, n, d)."""
    out = torch.empty(x_o.shape[0], n, posterior.prior.dim)
    for i in log.progress(range(x_o.shape[0]), desc="sampling"):
        out[i] = posterior.sample(n, x_o[i], generator=generator)
    return out


def score(posterior: EnsemblePosterior, data, log=SILENT) -> torch.Tensor:
    """log q(theta | x) for the pairs of an artifact: simulations (theta (n, d), x (n, x_dim)) -> (n,),
    or npe-samples (theta (n_obs, n, d), x_o (n_obs, x_dim)) -> (n_obs, n); -inf outside the prior."""
    theta = data.tensor("theta").float()
    x_dim = posterior.members[0].x_dim
    if data.kind == npe_io.SAMPLES_KIND or theta.dim() == 3:
        x_o = data.tensor("x_o").float()
        if x_o.shape[-1] != x_dim:
            raise CortexError(f"{data.source}: x_o has dimension {x_o.shape[-1]}, the posterior expects {x_dim}")
        if theta.dim() != 3 or theta.shape[-1] != posterior.prior.dim or theta.shape[0] != x_o.shape[0]:
            raise CortexError(f"{data.source}: theta {tuple(theta.shape)} does not pair with x_o "
                              f"{tuple(x_o.shape)} for a {posterior.prior.dim}-parameter prior")
        out = torch.stack([posterior.log_prob(theta[i], x_o[i]) for i in range(theta.shape[0])])
    else:
        x = data.tensor("x").float()
        if x.dim() != 2 or x.shape[1] != x_dim:
            raise CortexError(f"{data.source}: x has shape {tuple(x.shape)}, the posterior expects (n, {x_dim})")
        if theta.shape[-1] != posterior.prior.dim or theta.shape[0] != x.shape[0]:
            raise CortexError(f"{data.source}: theta {tuple(theta.shape)} does not pair with x {tuple(x.shape)} "
                              f"for a {posterior.prior.dim}-parameter prior")
        out = _log_prob_batched(posterior, theta, x)
    with torch.no_grad():
        out = out.detach().float()
    outside = ~posterior.prior.in_support(theta.reshape(-1, theta.shape[-1])).reshape(out.shape)
    out[outside] = float("-inf")
    if outside.numel() and outside.all():  # nothing to score: every log q would be -inf
        raise CortexError(f"{data.source}: all {outside.numel()} parameter vectors lie outside the "
                          "prior of the posterior (log q = -inf); simulations of another prior?")
    if outside.any():
        log.warn(f"{int(outside.sum())} parameter vectors lie outside the prior (log q = -inf)")
    finite = out[torch.isfinite(out)]
    log.info(f"mean log q(theta | x) = {finite.mean().item():.4f} over {finite.numel()} pairs")
    return out


def _log_prob_batched(posterior, theta, x, batch: int = 4096):
    return torch.cat([posterior.log_prob(theta[i:i + batch], x[i:i + batch]) for i in range(0, theta.shape[0], batch)])


# ---------------------------------------------------------------------------------------------
# evaluate

@dataclass
class EvaluateConfig:
    """What evaluate computes: metrics on samples vs reference, SBC draws, the plotted observation."""

    metrics: tuple[str, ...] = ("rf-c2st", "mmd")
    max_samples: int | None = None
    sbc_samples: int = 100
    observation: int | None = None
    plot: str | None = None  # PNG path the caller chose
    seed: int = 0


def evaluate_config(metrics: str, *, samples: bool, reference: bool, posterior: bool, x_o: bool, sbc: bool,
                    max_samples=None, sbc_samples: int = 100, observation=None, plot=None, seed: int = 0) -> EvaluateConfig:
    """Check which inputs were given (the flags say which) and the metric list, before any reading."""
    wanted = tuple(m.strip() for m in metrics.split(",") if m.strip())
    bad = [m for m in wanted if m not in METRICS]
    if bad:
        raise CortexError(f"--metrics: unknown {', '.join(bad)}; use rf-c2st, mlp-c2st, mmd")
    if not (samples or posterior):
        raise CortexError("nothing to evaluate: give SAMPLES with --reference, or --posterior with --x-o or --sbc")
    if samples and not reference:
        raise CortexError("SAMPLES need --reference FILE (reference posterior samples)")
    if samples and not wanted:
        raise CortexError(f"--metrics {metrics!r} names no metric; use one or more of rf-c2st, mlp-c2st, mmd")
    if (x_o or sbc) and not posterior:
        raise CortexError("--x-o (NLTP) and --sbc need --posterior POSTERIOR")
    if posterior and not (x_o or sbc):
        raise CortexError("--posterior needs --x-o FILE (NLTP) or --sbc FILE (calibration)")
    if plot is not None and not (samples or sbc):
        raise CortexError("--plot draws SAMPLES against --reference, or SBC ranks (--sbc): give one of them")
    return EvaluateConfig(wanted, max_samples, sbc_samples, observation, plot, seed)


def check_evaluate_needs(config: EvaluateConfig, samples: bool) -> None:
    """Fail before reading when an option cannot apply or scikit-learn is missing."""
    if config.observation is not None and not samples:
        raise CortexError("--observation selects a row of SAMPLES: give SAMPLES")
    if "mlp-c2st" in config.metrics or "rf-c2st" in config.metrics:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            raise CortexError("C2ST needs scikit-learn: pip install 'cortexkit[npe]'") from None


def evaluate(config: EvaluateConfig, *, samples=None, reference=None, posterior: EnsemblePosterior | None = None,
             x_o=None, sbc=None, plot_to: str | None = None, log=SILENT) -> dict:
    """The report: C2ST / MMD of ``samples`` against ``reference`` (artifacts: theta (n_obs, n, d) and
    reference_posterior_samples or theta), NLTP of ``posterior`` at the true parameters of ``x_o``
    (theta_o / theta_true), and simulation-based calibration on the simulations ``sbc``. The plot is
    drawn into ``plot_to`` (a staged file; default ``config.plot``) and reported as ``config.plot``."""
    from . import metrics as Q

    report = {}
    if samples is not None:
        ours, ref, rows, per = _compare_samples(config, samples, reference, log)
        report["samples"] = {"n_observations": len(rows), "n_samples": ours.shape[1], "n_reference": ref.shape[1]}
        report["summary"] = {k: Q.mean_ci95([r[k] for r in per]) for k in per[0] if k != "observation"}
        report["per_observation"] = per
    if posterior is not None:
        x_dim = posterior.members[0].x_dim
        if x_o is not None:
            obs = npe_io.observations_from(x_o, None, x_dim)
            theta_o = x_o.tensors.get("theta_o", x_o.tensors.get("theta_true"))
            if theta_o is None:
                raise CortexError(f"{x_o.source}: NLTP needs the true parameters (tensor theta_o or theta_true)")
            theta_o = theta_o.float().reshape(obs.shape[0], -1)
            with torch.no_grad():
                lp = posterior.log_prob(theta_o, obs)
            report["nltp"] = {**Q.mean_ci95((-lp).tolist()), "per_observation": (-lp).tolist()}
        if sbc is not None:
            ranks, report["sbc"] = _sbc(config, posterior, sbc, log)
    if config.plot is not None:
        from . import plots

        if samples is not None:
            k = rows[0]
            names = samples.meta_json("npe.parameter_names") or [f"theta_{j + 1}" for j in range(ours.shape[2])]
            title = f"observation {k}" + (f": RF-C2ST {per[0]['rf_c2st']:.3f}" if "rf_c2st" in per[0] else "")
            plots.pair_plot(plot_to or config.plot, ours[k], ref[k], names, title)
        else:
            plots.sbc_plot(plot_to or config.plot, ranks, config.sbc_samples, posterior.prior.names)
        report["plot"] = str(config.plot)
    return report


def _compare_samples(config: EvaluateConfig, samples, reference, log):
    from . import metrics as Q

    ours = samples.tensor("theta").float()
    ref = reference.tensor("reference_posterior_samples", "theta").float()
    if ours.dim() == 2:
        ours = ours[None]
    if ref.dim() == 2:
        ref = ref[None]
    if ours.shape[0] != ref.shape[0] or ours.shape[2] != ref.shape[2]:
        raise CortexError(f"samples {tuple(ours.shape)} and reference {tuple(ref.shape)} must both be "
                          "(n_obs, n, d) with the same n_obs and d")
    if config.max_samples:
        ours, ref = ours[:, :config.max_samples], ref[:, :config.max_samples]
    rows = range(ours.shape[0])
    if config.observation is not None:
        if not 0 <= config.observation < ours.shape[0]:
            raise CortexError(f"--observation {config.observation}: SAMPLES hold {ours.shape[0]} observations")
        rows = [config.observation]
    per = []
    for i in log.progress(rows, desc="evaluating"):
        row = {"observation": i}
        if "rf-c2st" in config.metrics:
            row["rf_c2st"] = Q.c2st(ours[i], ref[i], "rf")
        if "mlp-c2st" in config.metrics:
            row["mlp_c2st"] = Q.c2st(ours[i], ref[i], "mlp")
        if "mmd" in config.metrics:
            row["mmd"] = Q.mmd2(ours[i], ref[i], generator=_generator(config.seed))
        per.append(row)
    return ours, ref, rows, per


def _sbc(config: EvaluateConfig, posterior: EnsemblePosterior, sims, log):
    from . import metrics as Q

    x_dim = posterior.members[0].x_dim
    theta, x = npe_io.simulations_from(sims, "SBC", posterior.prior)
    if x.shape[1] != x_dim:
        raise CortexError(f"{sims.source}: x has dimension {x.shape[1]}, the posterior expects {x_dim}")
    gen = _generator(config.seed)
    n = config.sbc_samples
    samples = torch.empty(theta.shape[0], n, posterior.prior.dim)
    lq_s = torch.empty(theta.shape[0], n)
    with torch.no_grad():
        for i in log.progress(range(theta.shape[0]), desc="SBC"):
            samples[i] = posterior.sample(n, x[i], generator=gen)
            lq_s[i] = posterior.log_prob(samples[i], x[i])
        lq_true = _log_prob_batched(posterior, theta, x)
    ranks = Q.sbc_ranks(theta, samples)
    params = Q.sbc_summary(ranks, n, posterior.prior.names)
    verdict = Q.sbc_verdict(params)
    if verdict["verdict"] != "calibrated":
        log.warn(f"SBC: the posterior is miscalibrated over {theta.shape[0]} pairs: {verdict['summary']}")
    else:
        log.info(f"SBC: ranks uniform for every parameter over {theta.shape[0]} pairs ({verdict['test']})")
    return ranks, {"n_pairs": theta.shape[0], "n_samples": n, "calibration": verdict, "parameters": params,
                   "hpd_coverage": Q.expected_coverage(lq_true, lq_s)}

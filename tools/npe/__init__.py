"""MF-(TS)NPE: multifidelity neural posterior estimation (Krouglova et al., ICLR 2026).

The whole method from Python (what ``cortexkit simulate-npe`` does, see :mod:`.api`)::

    from cortexkit.tools import npe
    spec = npe.simulator_spec("ou", "hf")
    prior = npe.io.read_prior(None, "ou")
    sims = npe.simulate(spec, prior.sample(100, generator), npe.SimulateConfig(seed=2), prior)
    result = npe.train(npe.MethodConfig(method="npe", seed=4), npe.TrainInputs(prior, hf=(theta, x)))
"""
# Lazy: the cli imports tools.npe.schema at start-up, which must not import torch (--help stays fast).
_API = ("METHODS", "SEQUENTIAL", "EvaluateConfig", "MethodConfig", "PartialFailure", "SimulateConfig", "Simulations",
        "TrainInputs", "TrainResult", "check_evaluate_needs", "draw_parameters", "evaluate", "evaluate_config",
        "load_train_inputs", "merge", "parse_shard", "run_record", "sample", "score", "shard_rows", "simulate",
        "simulator_spec", "train")
__all__ = ["io", *_API]


def __getattr__(name):
    import importlib

    if name == "io":
        return importlib.import_module(".io", __name__)
    if name in _API:
        return getattr(importlib.import_module(".api", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

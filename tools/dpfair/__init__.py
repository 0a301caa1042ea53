"""RaCO-DP (Yaghini, Cebere et al., ICLR 2026): differentially private training under rate constraints.

The whole method from Python (what ``cortexkit dp-fairness-train`` calls): :func:`plan`,
:func:`train`, :func:`predict`, :func:`evaluate`, :func:`account`, :func:`sweep` on
:class:`TrainConfig` / :class:`AccountConfig`. The submodules are imported lazily (torch).
"""

_API = ("TrainConfig", "AccountConfig", "Plan", "Fitted", "Model", "plan", "train", "predict", "evaluate",
        "account", "sweep", "check_baselines", "parse_gammas", "KIND_MODEL", "KIND_PREDICTIONS", "MODEL_VERSION",
        "BUILTIN_CONSTRAINTS", "MAX_CELLS")

__all__ = list(_API)


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""cortexkit inspect: a YAML summary of any artifact."""

from __future__ import annotations

import click

from cortexkit.cli.base import command

def summarise(artifact) -> dict:
    """The YAML-able summary of an :class:`~cortexkit.formats.artifact.Artifact` of numpy arrays."""
    import numpy as np

    from cortexkit.formats.artifact import CONFIG, KIND, PRODUCER, VERSION

    tensors = {}
    for name in sorted(artifact.tensors):
        array = artifact.tensors[name]
        entry = {"dtype": str(array.dtype), "shape": list(array.shape)}
        if array.size and np.issubdtype(array.dtype, np.floating):
            finite = array[np.isfinite(array)]
            if finite.size:  # of the finite values; the others are counted apart
                entry.update(min=float(finite.min()), max=float(finite.max()),
                             mean=float(finite.mean(dtype=np.float64)))
            for key, count in (("nan", np.isnan(array).sum()), ("+inf", np.isposinf(array).sum()),
                               ("-inf", np.isneginf(array).sum())):
                if count:
                    entry[key] = int(count)
        elif array.size and (np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_):
            entry.update(min=int(array.min()), max=int(array.max()))
        tensors[name] = entry
    reserved = {KIND, VERSION, PRODUCER, CONFIG}
    return {
        "file": artifact.source,
        "kind": artifact.kind,
        "version": artifact.version,
        "producer": artifact.producer,
        "config": artifact.config,
        "metadata": {k: v for k, v in sorted(artifact.metadata.items()) if k not in reserved},
        "tensors": tensors,
    }


@command("inspect", output="report")
@click.argument("file", metavar="FILE|-")
def command(run, file):
    """Summarise any artifact as YAML: kind, producer, config and every tensor."""
    run.write_report(summarise(run.read_artifact(file, framework="np", check=False)))

"""cortexkit inspect: a YAML summary of any artifact."""

from __future__ import annotations

import click

from cortexkit.cli.base import command

def _metadata_value(text: str):
    """A metadata string as YAML shows it best: JSON lists, mappings and numbers as structures
    (tools store them as JSON), anything else as the text it is."""
    import json

    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text
    return value if isinstance(value, (dict, list, int, float, bool)) else text


def _head(array, rows: int, levels: list[str] | None = None):
    """The first ``rows`` rows (first-axis slices) of a tensor, as plain values."""
    if array.ndim == 0:
        return array.item()
    head = array[:rows]
    if levels is not None:
        return [levels[int(c)] if 0 <= int(c) < len(levels) else int(c) for c in head]
    return head.tolist()


def summarise(artifact, head: int = 0) -> dict:
    """The YAML-able summary of an :class:`~cortexkit.formats.artifact.Artifact` of numpy
    arrays; ``head`` > 0 adds the first ``head`` rows of every tensor (table columns with
    their category names)."""
    import numpy as np

    from cortexkit.formats.artifact import CONFIG, KIND, PRODUCER, VERSION

    levels = artifact.meta_json("cortexkit.levels", {}) if artifact.kind == "table" else {}
    levels = levels if isinstance(levels, dict) else {}
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
        if head > 0:
            entry["head"] = _head(array, head, levels.get(name))
        tensors[name] = entry
    reserved = {KIND, VERSION, PRODUCER, CONFIG}
    return {
        "file": artifact.source,
        "kind": artifact.kind,
        "version": artifact.version,
        "producer": artifact.producer,
        "config": artifact.config,
        "metadata": {k: _metadata_value(v) for k, v in sorted(artifact.metadata.items())
                     if k not in reserved},
        "tensors": tensors,
    }


@command("inspect", output="report")
@click.argument("file", metavar="FILE|-")
@click.option("--head", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="Also show the first N rows of every tensor (table columns by category).")
def command(run, file, head):
    """Summarise any artifact as YAML: kind, producer, config, metadata and every tensor."""
    run.write_report(summarise(run.read_artifact(file, framework="np", check=False), head))

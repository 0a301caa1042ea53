"""cortexkit convert: CSV/NPY/NPZ <-> safetensors, the glue between cortexkit and the rest."""

from __future__ import annotations

import click

from cortexkit.cli.base import command
from cortexkit.cli.options import OutputPath

FORMATS = ("auto", "csv", "tsv", "npy", "npz", "yaml", "json", "safetensors")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".npy": "npy", ".npz": "npz", ".yaml": "yaml",
              ".yml": "yaml", ".json": "json", ".safetensors": "safetensors",
              ".st": "safetensors"}
TEXT = ("csv", "tsv", "yaml", "json")


def output_format(target: str, to: str) -> str:
    import os
    from pathlib import PurePath

    if to != "auto":
        return to
    if target == "-" or (os.path.exists(target) and not os.path.isfile(target)):
        return "safetensors"  # stdout, /dev/null, a FIFO
    suffix = PurePath(target).suffix.lower()
    if suffix not in EXTENSIONS:
        raise click.UsageError(f"cannot tell the format of '{target}' from its extension; "
                               "give --to " + "|".join(FORMATS[1:]))
    return EXTENSIONS[suffix]


@command("convert")
@click.argument("input", metavar="IN|-")
@click.argument("out", metavar="[OUT|-]", required=False, default="-",
                type=OutputPath(dash=True))
@click.option("-o", "--output", type=OutputPath(dash=True), default=None, metavar="PATH",
              help="Where to write (the same as OUT; - = stdout, the default).")
@click.option("--from", "from_", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="Input format (auto = recognise from the bytes).")
@click.option("--to", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="Output format (auto = from OUT's extension; safetensors on stdout).")
@click.option("--tensor", default=None, metavar="NAME",
              help="Tensor (or table column) to write when the output holds one (CSV, NPY).")
@click.option("--categorical", default="", metavar="COL[,COL]",
              help="CSV columns to keep as categories even when their cells are numbers.")
def command(run, input, out, from_, to, tensor, categorical):
    """Convert CSV/TSV/NPY/NPZ <-> safetensors (tables; YAML/JSON out); either side may be -.

    A tensor of more than two dimensions becomes a long table: one index column per dimension
    (i0, i1, ...) and its values."""
    from cortexkit.formats.errors import CortexError
    from cortexkit.formats.stdio import check_binary_target, display_name, read_bytes

    if out != "-" and run.output is not None and out != run.output:
        raise CortexError(f"two outputs, OUT {out} and -o {run.output}; give one")
    out = run.output if run.output is not None else out
    kind_out = output_format(out, to)
    if kind_out not in TEXT:
        check_binary_target(out)
    name = display_name(input)
    content = read_input(read_bytes(input), name, from_, split_names(categorical))
    payload = encode_output(run, content, name, kind_out, tensor)
    run.write_bytes(payload, out, binary=kind_out not in TEXT)


def split_names(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def read_input(data: bytes, name: str, from_: str, categorical: list[str]):
    """A :class:`~cortexkit.formats.table.Table` (CSV, table artifact) or a dict of arrays."""
    from cortexkit.formats import table as T
    from cortexkit.formats import tables
    from cortexkit.formats.artifact import decode
    from cortexkit.formats.errors import CortexError

    if not data:
        raise CortexError(f"{name}: empty input")
    kind_in = tables.sniff(data) if from_ == "auto" else from_
    if categorical and kind_in not in ("csv", "tsv"):
        raise CortexError(f"--categorical applies to CSV input; {name} is {kind_in}")
    if kind_in in ("csv", "tsv"):
        return T.parse_csv(data, name, categorical)
    if kind_in in ("yaml", "json"):
        raise CortexError(f"{name}: convert reads CSV, TSV, NPY, NPZ and safetensors, not "
                          f"{kind_in.upper()}")
    if kind_in == "npy":
        return {"data": tables.read_npy(data, name)}
    if kind_in == "npz":
        return tables.read_npz(data, name)
    artifact = decode(data, name, framework="np")
    if artifact.kind == T.TABLE_KIND:
        return T.parse_table(data, name, fmt="safetensors")
    if not artifact.tensors:
        raise CortexError(f"{name}: artifact holds no tensors")
    columns = artifact.meta_json("cortexkit.columns")
    return {"__columns__": columns, **artifact.tensors} if columns else dict(artifact.tensors)


def encode_output(run, content, name: str, kind_out: str, tensor: str | None) -> bytes:
    """The bytes of OUT: a table keeps its columns and levels; arrays keep names and dtypes."""
    from cortexkit.formats import table as T
    from cortexkit.formats import tables
    from cortexkit.formats.artifact import build_metadata, encode
    from cortexkit.formats.errors import CortexError

    if isinstance(content, T.Table):
        if kind_out in TEXT:
            return T.encode_table(content.select([tensor]) if tensor else content, kind_out)
        if kind_out == "safetensors":
            tensors, extra = T.to_tensors(content)
            return encode(tensors, build_metadata(T.TABLE_KIND, version=T.TABLE_VERSION,
                                                  producer=run.producer, config=run.config,
                                                  extra=extra))
        if content.levels:
            run.warn(f"categorical column(s) {', '.join(content.levels)} written as integer "
                     "codes (their levels are kept only by CSV and safetensors)")
        if kind_out == "npz":
            return tables.write_npz(dict(content.columns))
        if tensor:
            return tables.write_npy(content.column(tensor))
        return tables.write_npy(_stack(content))
    columns = content.pop("__columns__", None)
    if kind_out in ("npy", *TEXT):
        if tensor is None and len(content) > 1:
            raise CortexError(f"{name} holds {len(content)} tensors ({', '.join(sorted(content))});"
                              f" choose one with --tensor or write NPZ/safetensors")
        key = tensor if tensor is not None else next(iter(content))
        if key not in content:
            raise CortexError(f"{name}: no tensor '{key}' (it holds: {', '.join(sorted(content))})")
        one = content[key]
        if kind_out == "npy":
            return tables.write_npy(one)
        if kind_out == "csv" and one.ndim <= 2:
            return tables.write_csv(one, columns)
        return T.encode_table(long_table(one, key) if one.ndim > 2 else
                              T.from_matrix(one, columns if columns and one.ndim == 2
                                            and len(columns) == one.shape[1] else None, name),
                              kind_out)
    if kind_out == "npz":
        return tables.write_npz(content)
    extra = {"cortexkit.columns": columns} if columns else None
    return encode(content, build_metadata("arrays", producer=run.producer, config=run.config,
                                          extra=extra))


def _stack(table):
    """The columns of a table as one (rows, columns) array of their common dtype."""
    import numpy as np

    arrays = [np.asarray(table.columns[n]) for n in table.names]
    return np.stack(arrays, axis=1).astype(np.result_type(*arrays))


def long_table(array, name: str):
    """An N-D array as a long table: index columns ``i0 .. i{N-1}`` (int64) and a column
    ``name`` of the values, rows in C order (the last index fastest)."""
    import numpy as np

    from cortexkit.formats import table as T

    index = np.indices(array.shape).reshape(array.ndim, -1)
    columns = {f"i{d}": index[d].astype(np.int64) for d in range(array.ndim)}
    value = name if name not in columns else f"{name}_value"
    columns[value] = np.ascontiguousarray(array).reshape(-1)
    return T.Table(columns, {}, name)

"""cortexkit convert: CSV/NPY/NPZ <-> safetensors, the glue between cortexkit and the rest."""

from __future__ import annotations

import click

from cortexkit.cli.base import command

FORMATS = ("auto", "csv", "npy", "npz", "safetensors")
EXTENSIONS = {".csv": "csv", ".npy": "npy", ".npz": "npz", ".safetensors": "safetensors",
              ".st": "safetensors"}

MAN = {
    "DESCRIPTION": """
Convert a table or array between the formats people already have and cortexkit artifacts.
Either side may be - (stdin or stdout).

The input format is recognised from its bytes (NPY and NPZ magic numbers, the safetensors
header; anything else is read as CSV with a header row) unless --from is given. The output
format follows the extension of OUT (.csv, .npy, .npz, .safetensors or .st), or --to; stdout
gets safetensors by default.

A CSV becomes one tensor named data of shape (rows, columns): int64 when every cell is an
integer, float64 otherwise (empty cells and nan become NaN); the header is kept as the
artifact's cortexkit.columns metadata and written back on the way out. An NPY becomes one tensor
named data with its dtype; an NPZ one tensor per array name. Round trips are exact: the same
values and dtypes come back.

CSV and NPY outputs hold one tensor: the only one, or the one named with --tensor.
""",
    "EXAMPLES": """
A CSV into a cortexkit table and a look at it:

    cortexkit convert measurements.csv - | cortexkit inspect -

Round trip through safetensors:

    cortexkit convert data.npz data.safetensors && cortexkit convert data.safetensors back.npz

Export one tensor of a model as CSV:

    cortexkit convert --tensor weights model.safetensors weights.csv
""",
    "FILES": """
- table artifact (kind table) :: written from CSV/NPY/NPZ input. data: the table, (rows, columns),
int64 or float64 from CSV, any dtype from NPY; from NPZ, one tensor per array with its own name
and dtype. Metadata cortexkit.columns: the CSV header as a JSON list.
""",
    "SEE ALSO": "cortexkit(1), cortexkit-inspect(1)",
}


def output_format(target: str, to: str) -> str:
    from pathlib import PurePath

    if to != "auto":
        return to
    if target == "-":
        return "safetensors"
    suffix = PurePath(target).suffix.lower()
    if suffix not in EXTENSIONS:
        raise click.UsageError(f"cannot tell the format of '{target}' from its extension; "
                               "give --to csv|npy|npz|safetensors")
    return EXTENSIONS[suffix]


@command("convert")
@click.argument("input", metavar="IN|-")
@click.argument("out", metavar="OUT|-", default="-")
@click.option("--from", "from_", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="Input format (auto = recognise from the bytes).")
@click.option("--to", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="Output format (auto = from OUT's extension; safetensors on stdout).")
@click.option("--tensor", default=None, metavar="NAME",
              help="Tensor to write when the output holds one (CSV, NPY).")
def command(run, input, out, from_, to, tensor):
    """Convert CSV/NPY/NPZ <-> safetensors tables; either side may be -."""
    from cortexkit.formats import tables
    from cortexkit.formats.artifact import decode, encode, build_metadata
    from cortexkit.formats.errors import CortexError
    from cortexkit.formats.stdio import check_binary_target, display_name, read_bytes, write_bytes

    kind_out = output_format(out, to)
    if kind_out != "csv":
        check_binary_target(out)
    name = display_name(input)
    data = read_bytes(input)
    if not data:
        raise CortexError(f"{name}: empty input")
    kind_in = tables.sniff(data) if from_ == "auto" else from_

    columns = None
    if kind_in == "csv":
        array, columns = tables.read_csv(data, name)
        arrays = {"data": array}
    elif kind_in == "npy":
        arrays = {"data": tables.read_npy(data, name)}
    elif kind_in == "npz":
        arrays = tables.read_npz(data, name)
    else:
        artifact = decode(data, name, framework="np")
        if (artifact.kind == "table" and kind_out == "csv" and tensor is None
                and len(artifact.tensors) > 1
                and all(getattr(v, "ndim", 0) == 1 for v in artifact.tensors.values())):
            # a table of named 1-D columns (formats/table.py, e.g. estimate-copula sample) -> one CSV
            from cortexkit.formats.table import from_artifact, to_csv

            write_bytes(out, to_csv(from_artifact(artifact)), binary=False)
            return
        arrays = artifact.tensors
        columns = artifact.meta_json("cortexkit.columns")
        if not arrays:
            raise CortexError(f"{name}: artifact holds no tensors")

    if kind_out in ("csv", "npy"):
        if tensor is None and len(arrays) > 1:
            raise CortexError(f"{name} holds {len(arrays)} tensors ({', '.join(sorted(arrays))});"
                              f" choose one with --tensor or write NPZ/safetensors")
        key = tensor if tensor is not None else next(iter(arrays))
        if key not in arrays:
            raise CortexError(f"{name}: no tensor '{key}' (it holds: {', '.join(sorted(arrays))})")
        one = arrays[key]
        payload = tables.write_csv(one, columns) if kind_out == "csv" else tables.write_npy(one)
    elif kind_out == "npz":
        payload = tables.write_npz(arrays)
    else:
        extra = {"cortexkit.columns": columns} if columns else None
        payload = encode(arrays, build_metadata("table", producer=run.producer, config=run.config,
                                            extra=extra))
    write_bytes(out, payload, binary=kind_out != "csv")

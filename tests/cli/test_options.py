"""Numeric option types and config files of the shared base: finite, ranged, strict."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from cortexkit.cli.base import tool_group, verb
from cortexkit.cli.options import NONNEGATIVE, POSITIVE, UNIT, Float, Int, check_memory, check_time
from cortexkit.formats.errors import CortexError

toy = tool_group("toy", help="A toy tool for testing options.")


@verb(toy, "fit", output="report")
@click.option("--lr", type=POSITIVE, default=0.1)
@click.option("--decay", type=NONNEGATIVE, default=0.0)
@click.option("--fraction", type=UNIT, default=0.5)
@click.option("--cap", type=Float(0, min_open=True, allow_inf=True), default=float("inf"))
@click.option("--num", type=Int(min=1), default=3)
@click.option("--plain-int", type=int, default=1)
@click.option("--name", default="a")
@click.option("--flag", is_flag=True)
@click.option("--mode", type=click.Choice(["0", "1"]), default="0")
def fit(run, **values):
    """Echo the values."""
    run.write_report(values)


def invoke(*args):
    return CliRunner().invoke(toy, list(map(str, args)), prog_name="cortexkit toy")


@pytest.mark.parametrize("args", [
    ["--lr", "nan"], ["--lr", "-1"], ["--lr", "0"], ["--lr", "inf"], ["--decay", "-0.1"],
    ["--fraction", "1.5"], ["--fraction", "nan"], ["--cap", "nan"], ["--cap", "0"],
    ["--num", "2.5"], ["--num", "0"], ["--num", "x"], ["--num", "nan"],
])
def test_bad_numbers_are_usage_errors(args):
    result = invoke("fit", *args)
    assert result.exit_code == 2, (args, result.output)


def test_good_numbers_and_ranges_in_help():
    result = invoke("fit", "--lr", "1e-3", "--cap", "inf", "--num", "1e3", "--print-config")
    assert result.exit_code == 0, result.output
    assert "lr: 0.001" in result.output and "num: 1000" in result.output
    assert "cap: .inf" in result.output
    help_text = invoke("fit", "--help").output
    assert "x>0" in help_text and "0<=x<=1" in help_text


@pytest.mark.parametrize("text,fragment", [
    ("num: 2.5\n", "num"), ("plain-int: 2.5\n", "plain-int"), ("lr: [1, 2]\n", "list"),
    ("lr: {a: 1}\n", "mapping"), ("lr: .nan\n", "lr"), ("lr: yes\n", "lr"),
    ("flag: 3\n", "true or false"), ("name: true\n", "quote"), ("help-all: true\n", "unknown"),
    ("mode: 2\n", "mode"),
])
def test_config_values_are_checked_like_command_line_values(tmp_path, text, fragment):
    config = tmp_path / "c.yaml"
    config.write_text(text)
    result = invoke("fit", "--config", config)
    assert result.exit_code == 2, (text, result.output)
    assert fragment in str(result.exception or "") + result.output


def test_config_values_that_fit_pass(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("num: 4\nplain-int: 2.0\nlr: 0.5\nflag: true\nmode: 1\nname: 7\n")
    result = invoke("fit", "--config", config, "--print-config")
    assert result.exit_code == 0, result.output
    assert "num: 4" in result.output and "mode: '1'" in result.output


def test_non_utf8_config_is_one_line_error(cli, one_line_error, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_bytes(b"lr: \xff\xfe\n")
    for verb_args in (["inspect", "x.st"], ["convert", "x.csv", "y.st"]):
        proc = cli(*verb_args, "--config", config)
        one_line_error(proc, verb_args[0], "not UTF-8")


def test_size_guards_refuse_with_the_estimate():
    with pytest.raises(CortexError, match=r"80 GB"):
        check_memory("-n 10000000000 samples", 8e10, limit=1e9)
    check_memory("small", 1e6, limit=1e9)
    with pytest.raises(CortexError, match="hours"):
        check_time("--steps 100000000", 1e6)


def test_help_all_shows_no_internal_defaults(cli):
    proc = cli("simulate-npe", "train", "--help-all")
    assert proc.returncode == 0 and "2147483647" not in proc.stdout.decode()
    proc = cli("simulate-npe", "train", "--method", "npe", "--print-config")
    assert b"2147483647" not in proc.stdout and b"help-all" not in proc.stdout


def test_device_cuda_without_cuda_is_an_error(cli, one_line_error, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    proc = cli("simulate-npe", "simulate", "--task", "two_moons", "-n", "10", "--device", "cuda",
               "-o", tmp_path / "s.st")
    one_line_error(proc, "simulate-npe simulate", "--device cuda")
    assert list(tmp_path.iterdir()) == []

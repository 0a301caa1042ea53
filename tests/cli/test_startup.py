"""--help must answer fast: no torch (nor numpy) import on the way to any help text."""

import subprocess
import sys

import click

from cortexkit.cli import main as entry

HEAVY = ("torch", "numpy", "scipy", "safetensors")


def all_help_invocations() -> list[list[str]]:
    ctx = click.Context(entry.cli, info_name="cortexkit")
    invocations = [["--help"]]
    for name in entry.cli.list_commands(ctx):
        invocations.append([name, "--help"])
        command = entry.cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            sub = click.Context(command, info_name=name, parent=ctx)
            invocations += [[name, verb, "--help"] for verb in command.list_commands(sub)]
    return invocations


def test_every_help_text_imports_no_heavy_module():
    script = f"""
import sys
from cortexkit.cli.main import main
for args in {all_help_invocations()!r}:
    try:
        main(args)
    except SystemExit as exit:
        assert exit.code in (0, None), (args, exit.code)
heavy = [m for m in {HEAVY!r} if m in sys.modules]
assert not heavy, heavy
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_importtime_of_top_level_help_shows_no_torch(cortexkit_exe):
    proc = subprocess.run([sys.executable, "-X", "importtime", cortexkit_exe, "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    imported = [line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")]
    assert "cortexkit.cli.main" in imported
    assert not [m for m in imported if m.split(".")[0] in HEAVY], imported


def test_help_of_every_command_fits_a_screen_and_names_the_common_options(cli):
    for args in all_help_invocations():
        proc = cli(*args, env={"COLUMNS": "80"})
        text = proc.stdout.decode()
        assert proc.returncode == 0 and text.count("\n") <= 55, (args, text.count("\n"))
        if len(args) > 1 and "Commands:" not in text:  # a leaf command, not a tool's verb list
            flat = " ".join(text.split())
            assert "--config FILE.yaml, --print-config, -q, -v, --debug" in flat, args
            assert "--help-all shows every option" in flat, args


def test_help_all_lists_every_option_that_help_leaves_out(cli):
    ctx = click.Context(entry.cli, info_name="cortexkit")
    checked = 0
    for args in all_help_invocations():
        if len(args) != 3:
            continue
        tool = entry.cli.get_command(ctx, args[0])
        command = tool.get_command(click.Context(tool, info_name=args[0], parent=ctx), args[1])
        short = cli(*args, env={"COLUMNS": "200"}).stdout.decode().split("--help-all shows")[0]
        full = cli(*args[:2], "--help-all", env={"COLUMNS": "200"})
        assert full.returncode == 0, args
        text = full.stdout.decode()
        for param in command.params:
            if isinstance(param, click.Option):
                flag = max(param.opts, key=len)
                assert flag in text, (args, flag)
        hidden = [p for p in command.params if isinstance(p, click.Option) and p.hidden]
        assert hidden and not any(f"{max(p.opts, key=len)} " in short for p in hidden if p.name != "help_all"), args
        checked += 1
    assert checked >= 15


def test_top_help_says_true_things_about_dash_o(cli):
    # "commands that write one artifact or report take -o PATH; convert also takes it as a
    # second argument": every leaf command with an output has -o, convert included
    text = " ".join(cli("--help").stdout.decode().split())
    assert "take -o PATH" in text and "convert also takes it as a second argument" in text
    ctx = click.Context(entry.cli, info_name="cortexkit")
    for name in entry.cli.list_commands(ctx):
        command = entry.cli.get_command(ctx, name)
        leaves = ([command.get_command(ctx, v) for v in command.list_commands(ctx)]
                  if isinstance(command, click.Group) else [command])
        for leaf in leaves:
            has_o = any("-o" in p.opts for p in leaf.params if isinstance(p, click.Option))
            assert has_o, (name, leaf.name)


def _imported(proc) -> list[str]:
    return [line.split("|")[-1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:")]


def test_inspect_and_convert_of_a_small_file_import_no_torch(cortexkit_exe, tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n1,2.5\n3,4.5\n")
    for args in (["convert", "t.csv", "-o", "t.st"], ["inspect", "t.st", "--head", "1"],
                 ["convert", "t.st", "-o", "back.csv"]):
        proc = subprocess.run([sys.executable, "-X", "importtime", cortexkit_exe, *args],
                              capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, (args, proc.stderr[-500:])
        heavy = [m for m in _imported(proc) if m.split(".")[0] in ("torch", "scipy")]
        assert not heavy, (args, heavy)
    assert (tmp_path / "back.csv").read_text() == "a,b\n1,2.5\n3,4.5\n"


TORCH_TOY = """
import sys
from click.testing import CliRunner
from cortexkit.cli.base import tool_group, verb
group = tool_group("toy", help="toy")

@verb(group, "plain", output="report", torch_options=True)
def plain(run):
    run.write_report({"torch_imported": "torch" in sys.modules})

@verb(group, "uses", output="report", torch_options=True)
def uses(run):
    import torch
    run.write_report({"threads": torch.get_num_threads(), "draw": torch.randn(1).item()})

for args in (["plain"], ["uses", "--seed", "5", "--threads", "2"]):
    print(CliRunner().invoke(group, args).output, end="")
import torch
torch.manual_seed(5)
print("expected:", torch.randn(1).item())
"""


def test_a_torch_verb_imports_torch_only_when_its_work_does_and_then_seeds_it():
    proc = subprocess.run([sys.executable, "-c", TORCH_TOY], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    import yaml

    lines = proc.stdout.splitlines()
    assert lines[0] == "torch_imported: false"
    report = yaml.safe_load("\n".join(lines[1:3]))
    assert report["threads"] == 2
    assert report["draw"] == float(lines[3].split()[1])  # the global seed was set at import

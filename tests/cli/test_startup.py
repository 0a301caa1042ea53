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

"""Man pages: generated from the commands, so a missing command or option fails here."""

import shutil
import subprocess
from pathlib import Path

import click
import pytest

from cortexkit.cli import main as entry
from cortexkit.cli.manpage import render_all

MAN = Path(__file__).resolve().parents[2] / "man"


def test_committed_pages_match_the_commands():
    pages = render_all()
    stale = [name for name, text in pages.items()
             if not (MAN / name).exists() or (MAN / name).read_text() != text]
    assert not stale, f"regenerate with: python -m cortexkit.cli.manpage man  ({stale})"
    extra = sorted(p.name for p in MAN.glob("*.1") if p.name not in pages)
    assert not extra, f"pages for commands that do not exist: {extra}"


def _commands():
    ctx = click.Context(entry.cli, info_name="cortexkit")
    for name in entry.cli.list_commands(ctx):
        command = entry.cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            sub = click.Context(command, info_name=name, parent=ctx)
            for verb in command.list_commands(sub):
                yield name, verb, command.get_command(sub, verb)
        else:
            yield name, None, command


@pytest.mark.parametrize("name, verb, command", list(_commands()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_option_is_on_its_page(name, verb, command):
    text = (MAN / f"cortexkit-{name}.1").read_text().replace("\\-", "-")
    if verb is not None:
        assert f".SS {verb}" in text
    for param in command.params:
        for opt in getattr(param, "opts", []):
            if opt.startswith("-"):
                assert opt in text, (name, verb, opt)
    top = (MAN / "cortexkit.1").read_text().replace("\\-", "-")
    assert f"cortexkit-{name}(1)" in top


def test_every_page_has_the_hand_written_sections():
    for page in MAN.glob("cortexkit-*.1"):
        text = page.read_text()
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "FILES", "SEE ALSO"):
            assert f".SH {section}" in text, (page.name, section)


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
@pytest.mark.parametrize("page", sorted(p.name for p in MAN.glob("*.1")))
def test_pages_render_without_warnings(page):
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(MAN / page)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_renders_the_inspect_page():
    proc = subprocess.run(["man", "-l", str(MAN / "cortexkit-inspect.1")], capture_output=True,
                          text=True, env={"MANPAGER": "cat", "PATH": "/usr/bin:/bin",
                                          "MANWIDTH": "80"})
    assert proc.returncode == 0, proc.stderr
    assert "cortexkit-inspect" in proc.stdout and "EXAMPLES" in proc.stdout

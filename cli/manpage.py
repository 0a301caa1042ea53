"""Man pages generated from the click definitions plus the hand-written sections.

``python -m cortexkit.cli.manpage [DIR]`` (re)writes ``man/cortexkit.1`` and one page per
command. Each command's hand-written sections (DESCRIPTION, EXAMPLES, FILES, SEE ALSO,
REFERENCE, and EXAMPLES_SHRINK for the examples test) live in ``man/src/COMMAND.yaml``, one
literal block per section, in a light markup:

* blank lines separate paragraphs;
* lines indented by four spaces are shown verbatim (commands, pipelines);
* ``- TERM :: text`` starts a tagged paragraph (files, tensors), continued on the next lines.

A test regenerates every page and compares it with ``man/``, so a page can never miss an option.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

from cortexkit.cli import main as entry

# man/src in a checkout; installed (pyproject: package cortexkit.man) as site-packages/cortexkit/man
_TOP = Path(__file__).resolve().parents[1]
SOURCES = _TOP / "man" / "src" if (_TOP / "man" / "src").is_dir() else _TOP / "man"

SECTION_ORDER = ("DESCRIPTION", "COMMANDS", "OPTIONS", "EXAMPLES", "FILES", "EXIT STATUS",
                 "REFERENCE", "SEE ALSO")


def esc(text: str) -> str:
    """Escape text for roff: backslashes, hyphens (so commands copy-paste), leading dots."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line
                     for line in text.split("\n"))


def markup(text: str) -> str:
    """Turn the light markup of a hand-written section into roff."""
    out: list[str] = []
    lines = text.strip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith("    "):
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += [".PP", ".RS 4", ".nf", esc("\n".join(block)), ".fi", ".RE"]
            continue
        para = []
        while i < len(lines) and lines[i].strip() and not lines[i].startswith("    "):
            if para and lines[i].startswith("- ") and " :: " in lines[i]:
                break
            para.append(lines[i].strip())
            i += 1
        first = para[0]
        if first.startswith("- ") and " :: " in first:
            term, rest = first[2:].split(" :: ", 1)
            out += [".TP", f".B {esc(term)}", esc(" ".join([rest, *para[1:]]))]
        else:
            out += [".PP", esc(" ".join(para))]
    return "\n".join(out)


def option_items(command: click.Command, ctx: click.Context) -> list[str]:
    out = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option):
            continue
        hidden, param.hidden = param.hidden, False  # the page lists what --help leaves out
        try:
            record = param.get_help_record(ctx)
        finally:
            param.hidden = hidden
        if record is None:
            continue
        names, help_text = record
        out += [".TP", f".B {esc(names)}", esc(help_text) if help_text else ""]
    return [line for line in out if line != ""]


def synopsis(command: click.Command, ctx: click.Context) -> str:
    pieces = " ".join(command.collect_usage_pieces(ctx))
    return f".B {esc(ctx.command_path)}\n{esc(pieces)}"


def _page(name: str, summary: str, sections: dict[str, str]) -> str:
    from cortexkit.cli.main import version

    head = [f'.TH {name.upper()} 1 "" "cortexkit {version()}" "cortexkit manual"',
            ".SH NAME", f"{esc(name)} \\- {esc(summary)}"]
    body = []
    if "SYNOPSIS" in sections:
        body += [".SH SYNOPSIS", sections["SYNOPSIS"]]
    for key in SECTION_ORDER:
        if sections.get(key):
            body += [f".SH {key}", sections[key]]
    return "\n".join(head + body) + "\n"


def _context(command: click.Command, name: str, parent=None) -> click.Context:
    return click.Context(command, info_name=name, parent=parent, **command.context_settings)


def command_page(name: str, command: click.Command, man: dict[str, str]) -> str:
    ctx = _context(command, name, _context(entry.cli, "cortexkit"))
    sections: dict[str, str] = {}
    summary = command.get_short_help_str(limit=80)
    if isinstance(command, click.Group):
        synopses, verbs = [], []
        for verb_name in command.list_commands(ctx):
            verb = command.get_command(ctx, verb_name)
            vctx = _context(verb, verb_name, ctx)
            synopses.append(synopsis(verb, vctx))
            verbs += [f".SS {esc(verb_name)}", synopsis(verb, vctx), ".PP",
                      esc(verb.help or ""), *option_items(verb, vctx)]
        sections["SYNOPSIS"] = "\n.br\n".join(synopses)
        sections["COMMANDS"] = "\n".join(verbs)
    else:
        sections["SYNOPSIS"] = synopsis(command, ctx)
        sections["OPTIONS"] = "\n".join(option_items(command, ctx))
    description = man.get("DESCRIPTION") or command.help or ""
    sections["DESCRIPTION"] = markup(description)
    for key in ("EXAMPLES", "FILES", "REFERENCE", "SEE ALSO"):
        if man.get(key):
            sections[key] = markup(man[key])
    sections["EXIT STATUS"] = markup(EXIT_STATUS)
    return _page(f"cortexkit-{name}", summary, sections)


EXIT_STATUS = """
- 0 :: success.
- 1 :: an error: bad input, wrong artifact kind, a failed run. One line
cortexkit COMMAND: error: MESSAGE on stderr; no output file is left behind.
- 2 :: a usage error: unknown option, missing argument, bad option value.
"""

TOP_DESCRIPTION = """
cortexkit packages seven research methods (ICLR 2026) as small Unix tools. Each reads and writes
safetensors files (tensors, with their kind, producer command line and configuration in the
metadata) and YAML (configurations, reports), so the tools chain in shell pipelines.

Every command follows one grammar. - means stdin or stdout; an artifact goes to stdout when -o
is absent, but never to a terminal. Messages, warnings and progress bars go to stderr, so stdout
stays a clean pipe. --config FILE.yaml sets any option (keys are the long option names); options
on the command line win; --print-config writes the resolved configuration and exits, and the
resolved configuration is stored inside every artifact written. Commands that use torch take
--seed (same inputs, seed and machine give identical bytes), --device auto|cpu|cuda and
--threads N. -q silences messages and progress bars, -v adds per-epoch metrics, --debug shows a
traceback on errors. Outputs are written to a temporary file and renamed, so a failed or
interrupted command never leaves a partial file.
"""

TOP_EXAMPLES = """
A CSV table into an artifact, summarised:

    cortexkit convert measurements.csv - | cortexkit inspect -

Save the configuration of a run, edit it, run from it:

    cortexkit convert --print-config data.csv > convert.yaml
    cortexkit convert --config convert.yaml data.csv data.safetensors
"""


def top_page() -> str:
    ctx = _context(entry.cli, "cortexkit")
    items = []
    for name in entry.cli.list_commands(ctx):
        command = entry.cli.get_command(ctx, name)
        items += [".TP", f".B {esc(name)}",
                  esc(command.get_short_help_str(limit=200)) + f" See cortexkit\\-{esc(name)}(1)."]
    sections = {
        "SYNOPSIS": f".B cortexkit\n{esc('COMMAND [VERB] [OPTIONS] [INPUT...] [-o OUTPUT]')}",
        "DESCRIPTION": markup(TOP_DESCRIPTION),
        "COMMANDS": "\n".join(items),
        "EXAMPLES": markup(TOP_EXAMPLES),
        "EXIT STATUS": markup(EXIT_STATUS),
        "SEE ALSO": esc(", ".join(f"cortexkit-{n}(1)" for n in entry.cli.list_commands(ctx))),
    }
    return _page("cortexkit", "research methods as Unix tools over safetensors and YAML",
                 sections)


def sections(name: str) -> dict:
    """The hand-written sections of command ``name`` (empty when it has none)."""
    path = SOURCES / f"{name}.yaml"
    return yaml.safe_load(path.read_text()) if path.is_file() else {}


def render_all() -> dict[str, str]:
    """File name -> roff text for every page."""
    pages = {"cortexkit.1": top_page()}
    ctx = _context(entry.cli, "cortexkit")
    for name in entry.cli.list_commands(ctx):
        command = entry.cli.get_command(ctx, name)
        pages[f"cortexkit-{name}.1"] = command_page(name, command, sections(name))
    return pages


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0] if args else "man")
    target.mkdir(parents=True, exist_ok=True)
    for file_name, text in render_all().items():
        (target / file_name).write_text(text)
        print(target / file_name, file=sys.stderr)


if __name__ == "__main__":
    main()

"""The words users read are true: every EXAMPLES block of every man page and every shell block
of the README that needs only built-in tasks and the shared data runs, through the installed
``cortexkit``, in the order written (later blocks use what earlier ones made).

Pages are found from the command registry (``cli/main.py`` COMMANDS), so a new tool's page joins
when it is registered. A block is not run, and the test says why, when it

- reads a file that neither the shared data (``../shared/data``, rewritten to
  ``CORTEXKIT_SHARED_DATA``) nor an earlier block provides: it needs the user's files;
- calls a program this machine lacks (``yq``, ``parallel``, ``sbatch``);
- is not a shell command (a YAML sample), installs packages, or runs the test suite.

Sizes: a page may list, in its ``EXAMPLES_SHRINK`` (``man/src/COMMAND.yaml``), text substitutions that shrink
training examples (``{"-n 10000": "-n 1000"}``) to keep CI short; the test applies them and
prints each one it applied. Every code line of EXAMPLES fits 80 columns (its 4-space indent
included).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
from pathlib import Path

import click
import pytest

from cortexkit.cli import main as entry, manpage
from cortexkit.cli.options import OutputPath

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CORTEXKIT_SHARED_DATA", REPO.parent / "shared" / "data"))
FILE_RE = re.compile(r"(?<![\w{}*/.$-])((?:\.\.?/|/)?[\w{}*$+.-]*(?:/[\w{}*$+.-]+)*"
                     r"\.(?:st|safetensors|csv|soc|soi|txt|npz|npy|data|yaml|yml|png|edf|bdf|fif|"
                     r"gltf|glb|h5|json|mat|toml))(?![\w/])")
OUTPUT_FLAGS = ("-o", "--output", "--plot", "--scores", "--partial", "--log", "--checkpoint", ">")
EXTERNAL = ("yq", "parallel", "jq", "man", "sbatch", "srun")

# the README's blocks: the set-up block installs (skipped part) and then runs the main job
README_SHRINK = {"--fidelity lf -n 1000": "--fidelity lf -n 300",
                 "-o posterior.safetensors": "--max-epochs 3 -o posterior.safetensors",
                 "--epsilon 1 -q": "--epsilon 1 --max-steps 20 -q",
                 "--steps 3000": "--steps 300", "--epochs 3": "--epochs 1"}
INSTALL = re.compile(r"^(python3? -m venv \S+|\. \S+/activate|pip install .*)$")


def man_examples() -> dict[str, tuple[str, dict]]:
    """page name -> (EXAMPLES text, shrink substitutions), for every registered command."""
    pages = {}
    for name in sorted(entry.COMMANDS):
        man = manpage.sections(name)
        if man.get("EXAMPLES"):
            pages[f"cortexkit-{name}"] = (man["EXAMPLES"], dict(man.get("EXAMPLES_SHRINK", {})))
    return pages


def man_blocks(text: str) -> list[str]:
    """The indented code blocks of an EXAMPLES text, dedented."""
    blocks, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("    ") and line.strip():
            current.append(line[4:])
        elif current:
            blocks.append("\n".join(current))
            current = []
    return blocks


def readme_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    return [m.group(1).strip() for m in re.finditer(r"```(?:sh|bash|shell)\n(.*?)```", text, re.S)]


def strip_install(block: str) -> str:
    """Drop the leading venv/pip steps of a chained set-up line (the test runs installed)."""
    parts = [p.strip() for p in block.split(" && ")]
    while parts and INSTALL.match(parts[0]):
        parts.pop(0)
    return " && ".join(parts)


def outputs_of(block: str) -> set[str]:
    """Files a block writes: after -o/--plot/...//>, and convert's OUT."""
    words = block.replace("\\\n", " ").split()
    outs = {words[i + 1] for i, w in enumerate(words[:-1]) if w in OUTPUT_FLAGS}
    for match in re.finditer(r"cortexkit convert((?: [^|;&\n]+)?)", block.replace("\\\n", " ")):
        args = [a for a in match.group(1).split() if a == "-" or not a.startswith("-")]
        if len(args) >= 2:
            outs.add(args[1])
    return outs


def positional_inputs(block: str) -> list[str]:
    """The positional arguments of every ``cortexkit TOOL VERB`` call in a block, as click
    parses them (so a folder like ``cifar-10-batches-py`` or ``digits/`` counts as an input,
    whatever its name), except ``-`` and convert's OUT."""
    names = []
    text = block.replace("\\\n", " ")
    for call in re.findall(r"cortexkit((?: [^|;&\n]+)?)", text):
        try:
            words = shlex.split(call)
        except ValueError:
            continue
        command, words = entry.cli, list(words)
        while isinstance(command, click.Group) and words:
            sub = command.get_command(click.Context(command), words[0])
            if sub is None:
                break
            command = sub
            words.pop(0)
        if isinstance(command, click.Group):
            continue
        words = [w for i, w in enumerate(words)  # no --config: its callback reads the file
                 if w != "--config" and (i == 0 or words[i - 1] != "--config")]
        try:
            ctx = command.make_context("cortexkit", words, resilient_parsing=True)
        except click.ClickException:
            continue
        for param in command.params:
            if not isinstance(param, click.Argument) or isinstance(param.type, OutputPath):
                continue
            value = ctx.params.get(param.name)
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, str) and item != "-" and not item.startswith("$"):
                    names.append(item)
    return names


def why_not_run(block: str, folder: Path) -> str | None:
    if "cortexkit" not in block:
        return "not a shell example"
    if "pytest" in block or "pip install" in block:
        return "installs packages or runs the test suite"
    for program in EXTERNAL:
        if re.search(rf"(^|[|;&(]\s*|\s){program}\s", block) and shutil.which(program) is None:
            return f"needs {program}, not installed here"
    if str(SHARED) in block and not SHARED.is_dir():
        return f"needs the shared data ({SHARED})"
    outputs = outputs_of(block)
    missing = []
    for name in sorted(set(FILE_RE.findall(block)) | set(positional_inputs(block))):
        if name in outputs or "$" in name:
            continue
        path = Path(name) if name.startswith("/") else folder / name
        if not (glob.glob(str(path)) if "*" in name else path.exists()):
            missing.append(name)
    return f"needs user files: {', '.join(missing)}" if missing else None


def run_blocks(sh, blocks: list[str], shrink: dict, folder: Path) -> list[str]:
    """Run the runnable blocks in order; returns the log of what ran, shrank or was skipped."""
    log = []
    for block in blocks:
        script = block.replace("../shared/data", str(SHARED))
        for old, new in shrink.items():
            if old in script:
                script = script.replace(old, new)
                log.append(f"shrunk: {old!r} -> {new!r}")
        reason = why_not_run(script, folder)
        first = block.splitlines()[0][:70]
        if reason:
            log.append(f"not run ({reason}): {first}")
            continue
        proc = sh(script, cwd=folder, timeout=600)
        assert proc.returncode == 0, f"example failed:\n{script}\n--- stderr:\n{proc.stderr}"
        log.append(f"ran: {first}")
    return log


PAGES = man_examples()


def test_every_command_has_examples_to_run():
    """An empty PAGES would turn the two tests below into silent skips (CI once lost the sources)."""
    assert sorted(PAGES) == sorted(f"cortexkit-{name}" for name in entry.COMMANDS), manpage.SOURCES


@pytest.mark.parametrize("page", sorted(PAGES))
def test_man_page_examples_run(sh, tmp_path, page):
    text, shrink = PAGES[page]
    log = run_blocks(sh, man_blocks(text), shrink, tmp_path)
    print(f"{page}:\n  " + "\n  ".join(log))


@pytest.mark.parametrize("page", sorted(PAGES))
def test_man_page_example_lines_fit_80_columns(page):
    text, _ = PAGES[page]
    long = [line for line in text.splitlines() if line.startswith("    ") and len(line) > 80]
    assert not long, f"{page}: EXAMPLES lines over 80 columns:\n" + "\n".join(long)


def test_readme_shell_blocks_run(sh, tmp_path):
    blocks = [strip_install(b) for b in readme_blocks()]
    assert any("simulate-npe" in b for b in blocks)  # the set-up job is among them
    log = run_blocks(sh, blocks, README_SHRINK, tmp_path)
    print("README.md:\n  " + "\n  ".join(log))
    assert any(line.startswith("ran: cortexkit simulate-npe simulate") for line in log), log


def test_block_parsing_finds_user_files_and_outputs(tmp_path):
    """The rules above on known text, so a parsing slip cannot silently skip everything."""
    text = ("Intro:\n\n    cortexkit convert a.csv b.st && cortexkit inspect b.st\n\n"
            "More:\n\n    cortexkit x fit c.st --epochs 2 \\\n      -o d.st\n\nEnd.\n")
    blocks = man_blocks(text)
    assert blocks == ["cortexkit convert a.csv b.st && cortexkit inspect b.st",
                      "cortexkit x fit c.st --epochs 2 \\\n  -o d.st"]
    assert outputs_of(blocks[0]) == {"b.st"} and outputs_of(blocks[1]) == {"d.st"}
    assert why_not_run(blocks[0], tmp_path) == "needs user files: a.csv"
    (tmp_path / "a.csv").write_text("x\n1\n")
    assert why_not_run(blocks[0], tmp_path) is None
    assert why_not_run("partition: [sex]", tmp_path) == "not a shell example"
    # a positional folder without a file extension is an input too
    folder_block = "cortexkit train-pcn train cifar-10-batches-py --arch vgg5 -o v.st"
    assert why_not_run(folder_block, tmp_path) == "needs user files: cifar-10-batches-py"
    (tmp_path / "cifar-10-batches-py").mkdir()
    assert why_not_run(folder_block, tmp_path) is None
    assert positional_inputs("cortexkit convert a.csv - | cortexkit inspect -") == ["a.csv"]
    assert strip_install("python3 -m venv .venv && . .venv/bin/activate && pip install -e . "
                         "&& cortexkit inspect x.st") == "cortexkit inspect x.st"

"""The README's shell blocks are right (issue 11): every `pn`, `sgf`, `ralph` and `make` command
in them parses against the real command-line definitions, and the blocks that can run offline
run for real in a throw-away repository."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from pensa.cli.base import cli as pn_cli
from ralph.cli import cli as ralph_cli
from sgf.cli import cli as sgf_cli

from tests.e2e_harness.readme import README, block_with, shell_blocks
from tests.e2e_harness.readme import run_shell as run_block

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROGRAMS: dict[str, click.Command] = {"pn": pn_cli, "sgf": sgf_cli, "ralph": ralph_cli}
_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def commands(block: str) -> Iterator[list[str]]:
    """Each simple command of a block: continuations joined, comments and VAR= prefixes gone."""
    for line in block.replace("\\\n", " ").splitlines():
        if "[OPTIONS]" in line or "_COMPLETE=" in line:
            continue  # a synopsis, or a completion line (its own test below)
        words = shlex.split(line, comments=True)
        argv: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", "||", "|", ";"):
                while argv and _ASSIGNMENT.match(argv[0]):
                    argv.pop(0)
                if argv:
                    yield argv
                argv = []
            else:
                argv.append(word)


def parse(command: click.Command, name: str, args: list[str], parent: click.Context | None) -> None:
    """Parse `args` the way click would run them, without running anything."""
    try:
        ctx = command.make_context(name, list(args), parent=parent)
    except click.exceptions.Exit:  # --version, --help
        return
    if isinstance(command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        if rest:
            sub_name, sub, sub_args = command.resolve_command(ctx, rest)
            assert sub is not None
            assert sub_name is not None
            parse(sub, sub_name, sub_args, ctx)


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", text, flags=re.MULTILINE))


def test_every_readme_command_parses() -> None:
    seen = 0
    for block in shell_blocks():
        for argv in commands(block):
            program, *args = argv
            if program in PROGRAMS:
                try:
                    parse(PROGRAMS[program], program, args, None)
                except click.UsageError as e:
                    pytest.fail(
                        f"README: `{shlex.join(argv)}` does not parse: {e.format_message()}"
                    )
                seen += 1
            elif program == "make":
                assert set(args) <= makefile_targets(), f"README: `make {args}` has no target"
    assert seen >= 20  # the walk found the README's commands, not an empty list


@pytest.mark.parametrize(
    ("line", "program"), [("bash_source", "sgf"), ("zsh_source", "sgf"), ("fish_source", "sgf")]
)
def test_the_completion_lines_print_a_script(line: str, program: str) -> None:
    for tool in ("pn", "ralph", "sgf"):
        variable = f"_{tool.upper()}_COMPLETE"
        done = subprocess.run(
            [str(BIN / tool)],
            env={**os.environ, variable: line},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert tool in done.stdout, done.stdout
        assert len(done.stdout) > 100, done.stdout
    assert f"_SGF_COMPLETE={line} {program}" in README


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "NO_COLOR": "1",
    }  # HOME and git's identity are the root conftest's isolated ones


def test_the_first_project_block_runs(tmp_path: Path, shell_env: dict[str, str]) -> None:
    """Run as written; the steps that need Docker and a model are the e2e tests' to run
    (tests/test_e2e_first_project.py runs this block with Docker and no registry)."""
    needs_docker = 'sgf() { case "$1" in sandbox|doctor|spec|build) echo "e2e: sgf $*";; '
    needs_docker += '*) command sgf "$@";; esac; }\n'
    done = run_block(
        needs_docker + block_with("sgf init --stack python"), cwd=tmp_path, env=shell_env
    )
    project = tmp_path / "my-project"
    assert (project / ".sgf" / "config.toml").is_file()
    assert (project / ".pensa").is_dir()
    assert "e2e: sgf build -a 20" in done.stdout
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True)
    assert log.stdout == "chore: sgf init\n"


def test_the_pensa_block_runs(tmp_path: Path, shell_env: dict[str, str]) -> None:
    """The pn walk-through line by line; its example ids stand for the issues it creates, in
    order (the bug, then its fix), and are replaced by the ids pn really made."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    block = block_with("pn create")
    placeholders = list(dict.fromkeys(re.findall(r"pn-[0-9a-f]{8}", block)))
    created: list[str] = []
    for line in block.splitlines():
        for placeholder, real in zip(placeholders, created, strict=False):
            line = line.replace(placeholder, real)
        done = run_block(line, cwd=tmp_path, env=shell_env)
        if line.startswith("pn create"):
            created.append(re.findall(r"pn-[0-9a-f]{8}", done.stdout)[0])
    assert len(created) == len(placeholders) == 2
    shown = run_block(f"pn show {created[0]} --json", cwd=tmp_path, env=shell_env).stdout
    assert re.search(r'"status": ?"closed"', shown), shown  # its last fix closed the bug

"""CLI contract: help for every command, coverage in docs/sgf.md, usage errors exit 1."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sgf import cli
from sgf.config import Config
from sgf.loop import launch
from sgf.stages import Stage

Run = Callable[..., "subprocess.CompletedProcess[str]"]
MANUAL = Path(__file__).resolve().parents[3] / "docs" / "sgf.md"


def commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        yield f"{prefix}{name}", command
        if isinstance(command, click.Group):
            yield from commands(command, f"{prefix}{name} ")


ALL = list(commands(cli.cli))


@pytest.mark.parametrize(("name", "command"), ALL, ids=[n for n, _ in ALL])
def test_every_command_has_help_and_is_in_the_manual(name: str, command: click.Command) -> None:
    assert command.help, name
    result = CliRunner().invoke(cli.cli, [*name.split(), "--help"])
    assert result.exit_code == 0
    assert " ".join(command.help.split("\n\n")[0].split()) in " ".join(result.output.split())
    assert f"`sgf {name}" in MANUAL.read_text()


def test_the_manual_documents_every_config_key_and_exit_code() -> None:
    text = MANUAL.read_text()
    for key in Config.__dataclass_fields__:
        assert f"| `{key}` |" in text, key
    for code in launch.OUTCOMES:
        assert f"| `{code}` |" in text, code


def test_exit_code_meanings() -> None:
    assert launch.meaning(0, Stage.BUILD).startswith("loop complete")
    assert "sgf test-plan" in launch.meaning(2, Stage.TEST_PLAN)
    assert "sgf issues plan" in launch.meaning(2, Stage.ISSUES_PLAN)
    assert launch.meaning(130, Stage.SPEC).startswith("interrupted")
    assert launch.meaning(0, Stage.SPEC).startswith("session complete")
    assert launch.meaning(2, Stage.ISSUES_LOG).startswith("session ended before the agent")
    assert "sgf issues log" in launch.meaning(2, Stage.ISSUES_LOG)


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus"], "No such command 'bogus'"),
        (["build", "0"], "0 is not in the range x>=1"),
        (["build", "--frobnicate"], "No such option '--frobnicate'"),
        (["sandbox", "build", "--claude-binary", "/nonexistent"], "does not exist"),
    ],
)
def test_usage_errors_exit_1_not_2(repo: Path, sgf: Run, args: list[str], message: str) -> None:
    done = sgf(repo, *args)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ")
    assert message in done.stderr


@pytest.mark.process
def test_version_and_help(repo: Path, sgf: Run) -> None:
    done = sgf(repo, "--version")
    assert done.returncode == 0
    assert "0.1.0" in done.stdout
    done = sgf(repo, "--help")
    assert done.returncode == 0
    assert "sgf init --stack python" in done.stdout


@pytest.mark.process
def test_stage_commands_outside_git_say_so(tmp_path: Path, sgf: Run) -> None:
    done = sgf(tmp_path, "build")
    assert done.returncode == 1
    assert "not inside a git repository" in done.stderr


def test_every_exit_code_is_in_the_manual_table() -> None:
    """One source: sgf.loop.loops.ExitCode; the table in docs/sgf.md lists exactly its codes."""
    import re

    from sgf.loop.loops import ExitCode

    text = MANUAL.read_text()
    table = text.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    assert [int(c) for c in re.findall(r"^\| `(\d+)` \|", table, re.MULTILINE)] == [
        int(code) for code in ExitCode
    ]

"""Docs that cannot drift: docs/pensa.md, `pn prime` and the CLI agree (sqlite-utils test_docs)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import click
import pytest

from pensa.cli.base import COMMAND_MODULES, cli
from pensa.errors import ALL_ERRORS
from pensa.findings import CHECKS
from pensa.reference import all_refs, prime, readme_commands, readme_errors

MANUAL = Path(__file__).resolve().parents[3] / "docs" / "pensa.md"


def every_command() -> dict[str, click.Command]:
    """All commands by path (`dep add`), after loading every command module."""
    for module in set(COMMAND_MODULES.values()):
        importlib.import_module(module)
    found: dict[str, click.Command] = {}

    def walk(group: click.Group, prefix: str) -> None:
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                walk(command, f"{prefix}{name} ")
            else:
                found[prefix + name] = command

    walk(cli, "")
    return found


def test_every_command_is_in_the_reference_and_nothing_else() -> None:
    assert sorted(every_command()) == sorted(ref.name for ref in all_refs())


def test_every_top_level_command_is_mapped_to_its_module() -> None:
    assert sorted(cli.commands) == sorted(COMMAND_MODULES)


@pytest.mark.parametrize("path", sorted(every_command()))
def test_every_command_has_help(path: str) -> None:
    command = every_command()[path]
    assert command.help, f"pn {path} has no docstring"
    assert command.get_short_help_str(), path


def test_the_manual_documents_every_command_and_error_code() -> None:
    text = MANUAL.read_text(encoding="utf-8")
    assert text.startswith("# pn (pensa)\n")
    assert readme_commands() in text, "regenerate the docs/pensa.md tables from pensa.reference"
    assert readme_errors() in text
    for error in ALL_ERRORS:
        assert f"`{error.code}`" in text
    for code in ("| 0 |", "| 1 |", "| 130 |"):
        assert code in text


def test_prime_flags_are_options_of_the_real_command() -> None:
    """Every flag the cheat sheet shows is one click accepts (the CLI is the oracle)."""
    commands = every_command()
    sheet = prime()
    for ref in all_refs():
        assert ref.usage in sheet
        declared = {opt for p in commands[ref.name].params for opt in (*p.opts, *p.secondary_opts)}
        shown = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", ref.usage))
        assert shown <= declared, f"pn {ref.name}: {sorted(shown - declared)} not accepted"


def test_the_manual_documents_every_doctor_check() -> None:
    text = MANUAL.read_text(encoding="utf-8")
    for check, meaning in CHECKS.items():
        assert f"| `{check}` | {meaning} |" in text, check


def test_the_priority_option_is_declared_once_and_reads_the_same_everywhere() -> None:
    """`-p` was once declared five times with three help texts."""
    helps = set()
    for name in ("create", "q", "update", "list", "ready", "claim-next"):
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        (option,) = [p for p in command.params if "-p" in getattr(p, "opts", ())]
        assert isinstance(option, click.Option)
        helps.add((option.help or "").split(":", 1)[1])
    assert helps == {" p0 (critical) … p3 (low); 1 and P1 mean p1."}

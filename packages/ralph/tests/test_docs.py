"""docs/ralph.md documents every option, env var and exit code."""

from __future__ import annotations

from pathlib import Path

import click

from ralph.cli import TUNING, cli
from ralph.models import Exit

MANUAL = Path(__file__).resolve().parents[3] / "docs" / "ralph.md"


def section() -> str:
    return MANUAL.read_text()


def test_every_option_and_its_env_var_is_documented() -> None:
    doc = section()
    for param in cli.params:
        if isinstance(param, click.Option):
            if not param.hidden:  # the hidden tuning knobs are documented by their variable
                assert max(param.opts, key=len) in doc, param.name
            if isinstance(param.envvar, str):
                assert f"`{param.envvar}`" in doc, param.envvar


def test_every_exit_code_is_documented() -> None:
    doc = section()
    for code in Exit:
        assert f"| {int(code)} |" in doc, code


def test_tuning_variables_are_documented() -> None:
    doc = section()
    for var in (*(row[1] for row in TUNING), "RALPH_DING_COMMAND"):
        assert f"`{var}`" in doc, var

"""The stop checklist knows every stack's own checks: a model that runs a step of a shipped
stack's backpressure.md directly, without run-silent, has run the stack's checks, even in a
project whose own `.sgf/backpressure.md` says something else (ralph/inside/backpressure.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ralph.inside import backpressure

STACKS = Path(__file__).resolve().parents[1] / "templates" / "stacks"
ROW = re.compile(r"^\| *(?P<step>[^|]+?) *\| *`run-silent [^`]*? -- (?P<command>[^`]+)`", re.M)


def steps() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(STACKS.glob("*/backpressure.md")):
        for row in ROW.finditer(path.read_text()):
            if row["step"] != "Install":  # fetching dependencies checks nothing
                found.append((path.parent.name, row["step"], row["command"]))
    return found


def test_every_stack_has_steps() -> None:
    assert {stack for stack, _, _ in steps()} == {p.name for p in STACKS.iterdir()}


@pytest.mark.parametrize(("stack", "step", "command"), steps())
def test_each_step_run_directly_counts_as_a_check(
    tmp_path: Path, stack: str, step: str, command: str
) -> None:
    assert backpressure.checks_in(command, tmp_path), f"{stack} {step}: {command}"

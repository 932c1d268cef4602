"""A task's contract as the check step reads it from `pn show --json` (check/contract.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.check import contract
from ralph.check.contract import Contract

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("description", "commands"),
    [
        ("Verify: `pytest -q tests/test_x.py`", ("pytest -q tests/test_x.py",)),
        ("- **Verify:** `make lint` and `make test`", ("make lint", "make test")),
        (
            "Objective: log in\nArtifact: src/login.py\nVerify:\n- `pytest -q`\n- `ruff check`\n"
            "Notes: `not a command`",
            ("pytest -q", "ruff check"),
        ),
        ("Verify:\n```sh\npytest -q\n# a comment\nmypy src\n```\n", ("pytest -q", "mypy src")),
        ("Verify: unit + curl happy-path", ()),  # prose: nothing ralph could run
        ("Run `pytest` when done", ()),  # no Verify field
        ("", ()),
    ],
)
def test_the_verify_field_of_a_description_names_its_commands(
    description: str, commands: tuple[str, ...]
) -> None:
    assert contract.from_description(description) == commands


def test_pensas_verify_field_wins_over_the_description() -> None:
    issue = {
        "id": "pn-1",
        "title": "log in",
        "description": "Verify: `false`",
        "verify": ["pytest -q", "", 3, "  ruff check  "],
        "issue_type": "task",
        "priority": "p1",
    }
    assert contract.parse(issue) == Contract(
        "pn-1", "log in", "Verify: `false`", ("pytest -q", "ruff check"), "task", None, "p1"
    )


def test_pensas_objective_and_artifact_reach_the_check_agent() -> None:
    found = contract.parse(
        {"id": "pn-6", "title": "t", "objective": "log in", "artifact": "src/login.py"}
    )
    assert (found.objective, found.artifact) == ("log in", "src/login.py")
    assert "Objective: log in\nArtifact: src/login.py\n\n### Description" in found.as_markdown()


def test_without_the_field_the_description_is_read() -> None:
    """pensa may not carry a `verify` field yet: a missing one is an empty list."""
    found = contract.parse({"id": "pn-2", "title": "t", "description": "Verify: `make test`"})
    assert found.verify == ("make test",)
    assert contract.parse({"id": "pn-3", "verify": "make test"}).verify == ()


def test_commands_are_bounded_in_number_and_length() -> None:
    many = [f"echo {i}" for i in range(50)] + ["x" * (contract.MAX_COMMAND + 1)]
    assert len(contract.parse({"id": "pn-4", "verify": many}).verify) == contract.MAX_COMMANDS
    assert contract.parse({"id": "pn-5", "verify": ["x" * 3000]}).verify == ()


@pytest.mark.process
def test_the_contract_is_fetched_from_pn(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    made = subprocess.run(
        ["pn", "q", "add the login", "--description-file", "-"],
        input="Objective: log in\nVerify: `pytest -q`\n",
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    task = made.stdout.strip()
    [found, missing] = contract.fetch(tmp_path, [task, "pn-00000000"], env=env)
    assert (found.id, found.title, found.verify) == (task, "add the login", ("pytest -q",))
    assert "Verify commands\n\n- `pytest -q`" in found.as_markdown()
    assert missing == Contract("pn-00000000", "")

"""A task's contract, as the check step reads it from `pn show ID --json`: its title and
description, and the Verify commands that prove it is done.

The commands come from the issue's VERIFY_FIELD (a list of command strings), else from a
`Verify:` line of its description (the Ready Contract's Objective / Artifact / Verify), where
each command is written in backquotes or in a fenced block below it:

    - Verify: `pytest -q tests/test_login.py`

A description's prose (`Verify: unit + curl happy-path`) names no command: there is nothing
ralph could run, and the check agent, when there is one, judges it instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph import pncli

# The one place that names pensa's field for a task's Verify commands (a JSON list of strings).
VERIFY_FIELD = "verify"
MAX_COMMANDS, MAX_COMMAND = 20, 2000

_MARK = r"(?:\*\*|__)?"
_VERIFY = re.compile(rf"^\s*(?:[-*+]\s+)?{_MARK}verify{_MARK}\s*:{_MARK}(?P<rest>.*)$", re.I)
_FIELD = re.compile(rf"^\s*(?:[-*+]\s+)?{_MARK}[A-Za-z][\w /()-]{{0,40}}{_MARK}\s*:")
_CODE = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True, slots=True)
class Contract:
    """What a task promised: the check holds the work to it."""

    id: str
    title: str
    description: str = ""
    verify: tuple[str, ...] = ()
    kind: str = "task"
    spec: str | None = None
    priority: str | None = None
    objective: str | None = None  # pensa's Ready Contract fields, when it carries them
    artifact: str | None = None

    def as_markdown(self) -> str:
        """The contract as the check agent reads it (task.md)."""
        commands = "\n".join(f"- `{c}`" for c in self.verify) or "- (none given)"
        fields = "".join(
            f"{name}: {value}\n"
            for name, value in (("Objective", self.objective), ("Artifact", self.artifact))
            if value
        )
        return (
            f"## {self.id}: {self.title}\n\n"
            f"Type: {self.kind}; spec: {self.spec or '-'}; priority: {self.priority or '-'}\n\n"
            f"{fields}{chr(10) if fields else ''}"
            f"### Description\n\n{self.description.strip() or '(none)'}\n\n"
            f"### Verify commands\n\n{commands}\n"
        )


def _commands(values: Iterable[object]) -> tuple[str, ...]:
    found = [v.strip() for v in values if isinstance(v, str) and v.strip()]
    return tuple(c for c in found if len(c) <= MAX_COMMAND)[:MAX_COMMANDS]


def from_description(text: str) -> tuple[str, ...]:
    """The commands a description's `Verify:` field names (backquoted, or fenced below it)."""
    found: list[str] = []
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if match := _VERIFY.match(line):
            found += _CODE.findall(match["rest"])
            found += _below(lines[at + 1 :], started=bool(found))
    return _commands(found)


def _below(lines: Sequence[str], *, started: bool) -> list[str]:
    """Commands in the lines under a `Verify:` line, up to the next field or paragraph."""
    found: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            if line.strip() and not line.lstrip().startswith("#"):
                found.append(line.strip())
            continue
        if not line.strip():
            if started or found:
                break
            continue
        if _FIELD.match(line) or line.lstrip().startswith("#"):
            break
        found += _CODE.findall(line)
    return found


def parse(issue: Mapping[str, object]) -> Contract:
    """A contract from an issue as `pn show --json` prints it."""
    description = issue.get("description")
    text = description if isinstance(description, str) else ""
    field = issue.get(VERIFY_FIELD)
    verify = _commands(field) if isinstance(field, list) else ()

    def word(key: str) -> str | None:
        value = issue.get(key)
        return value if isinstance(value, str) and value else None

    return Contract(
        id=str(issue.get("id", "")),
        title=word("title") or "",
        description=text,
        verify=verify or from_description(text),
        kind=word("issue_type") or "task",
        spec=word("spec"),
        priority=word("priority"),
        objective=word("objective"),
        artifact=word("artifact"),
    )


def fetch(project: Path, ids: Iterable[str], *, env: Mapping[str, str]) -> list[Contract]:
    """The contracts of the issues `ids` (an id pn cannot show is a contract of its id)."""
    found = []
    for issue_id in ids:
        shown = pncli.record(["show", issue_id], cwd=project, env=env)
        found.append(parse(shown) if shown is not None else Contract(issue_id, ""))
    return found

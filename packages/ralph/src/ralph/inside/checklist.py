"""The stop checklist: what a stage requires before the agent may end its turn.

Claude Code runs the `Stop` hook (hookrun.py) when the model ends its turn; a non-empty list
from `missing()` is sent back as the hook's reason, and the model goes on. The stage picks
which checks apply (sgf passes them as `ralph --checks`): a build loop must close what it
claimed, commit, and pass its backpressure; a spec interview has none of that.

Like guard.py this runs inside the sandbox and imports only the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Check(StrEnum):
    """One line of the checklist."""

    TASK = "task"  # the task the loop claimed is closed, or released with a reason
    CLEAN = "clean"  # nothing uncommitted, unless deliberately left for the human
    BACKPRESSURE = "backpressure"  # the stack's checks passed after the last file edit
    BUGS = "bugs"  # a bug the agent says it found was filed with `pn create -t bug`


ALL = tuple(Check)
# An agent that says it found a bug; "no bugs" and "fixed the bug" do not count.
_FOUND_BUG = re.compile(
    r"\b(found|discovered|noticed|spotted|hit|ran into)\s+(a|an|another|one|two|several)?"
    r"\s*(\w+\s+){0,2}bugs?\b",
    re.IGNORECASE,
)


def parse(text: str) -> tuple[Check, ...]:
    """`task,clean` -> the checks; `none` or empty -> none. Raises ValueError on a typo."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names in ([], ["none"]):
        return ()
    return tuple(Check(n) for n in names)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the Stop hook found out, gathered by hookrun.py."""

    claimed: Sequence[str] | None  # in-progress issues of this loop's actor; None without pn
    changed: Sequence[str]  # uncommitted paths the iteration made
    kept: bool  # the agent wrote why it leaves its changes for the human
    unchecked: str | None  # the file edited after the last passing check, if any
    last_check: str | None  # the last check that passed (before that edit)
    failed_check: str | None  # a check that failed after that edit
    last_message: str
    bug_filed: bool


def missing(checks: Sequence[Check], facts: Facts, *, keep_file: str) -> list[str]:
    """What the stage still requires, one line each (empty: the agent may stop)."""
    out: list[str] = []
    if Check.TASK in checks and facts.claimed:
        for issue in facts.claimed:
            out.append(
                f"task {issue} is still claimed: close it (`pn close {issue} --reason ...`) "
                f"or give it back (`pn release {issue} --reason ...`)"
            )
    if Check.CLEAN in checks and facts.changed and not facts.kept:
        shown = ", ".join(facts.changed[:5])
        more = f" and {len(facts.changed) - 5} more" if len(facts.changed) > 5 else ""
        out.append(
            f"uncommitted changes: {shown}{more}. Commit them, or if you leave them for the "
            f"human on purpose, write why into {keep_file}"
        )
    if Check.BACKPRESSURE in checks and facts.unchecked is not None:
        said = f"you edited {facts.unchecked} and no check passed after it"
        if facts.last_check:
            said = f"you edited {facts.unchecked} after the last passing check"
            said += f" (`{facts.last_check}`)"
        if facts.failed_check:
            said += f"; `{facts.failed_check}` failed"
        out.append(
            f"{said}: run the stack's checks (the commands in .sgf/backpressure.md, directly "
            "or quietly through run-silent) and fix what fails"
        )
    if Check.BUGS in checks and not facts.bug_filed and _FOUND_BUG.search(facts.last_message):
        out.append('you found a bug: file it (`pn create "..." -t bug`) before you stop')
    return out


def message(items: Sequence[str], *, blocks: int, limit: int) -> str:
    """The reason Claude Code shows the model when the Stop hook blocks."""
    lines = "\n".join(f"- {item}" for item in items)
    return f"Not done yet (stop checklist, {blocks} of {limit}). Before you end your turn:\n{lines}"

"""The machine-readable run record: one JSON object per line, appended as the loop
goes, so `sgf status` (or anyone) can tell what a loop is doing and what it did.

Lines: `start` (loop id, iterations, budgets), `iteration_start` (index of total),
`iteration` (start/end, exit, cost, tokens, turns, tasks claimed and closed, failure), `check`
(a landing's verdict and evidence, check/step.py) and `end` (stop reason, exit code,
totals). Tasks come from `pn list --all -a LOOP-ID` before and after each iteration (ralph
never imports pensa's tracker); without pn they are left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ralph import pncli, safefile


def now_iso() -> str:
    """The current time as RFC 3339 UTC with a Z."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Record:
    """Appends events to the record file (no file: nothing is written)."""

    def __init__(self, path: Path | None, *, loop_id: str) -> None:
        self.path = path
        self.loop_id = loop_id

    def write(self, event: str, **fields: Any) -> None:
        """Append one event line; a record that cannot be written is not worth a crash."""
        if self.path is None:
            return
        line = json.dumps({"event": event, "loop_id": self.loop_id, "at": now_iso(), **fields})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with safefile.append(self.path) as f:  # an agent's link there is refused
                f.write(line.encode() + b"\n")
        except OSError:
            self.path = None  # e.g. a read-only or full disk: stop trying, keep looping


def held(project: Path, actor: str, env: Mapping[str, str]) -> dict[str, str] | None:
    """The status of every issue assigned to `actor` ({id: status}); None without pn."""
    issues = pncli.listing(["list", "--all", "-a", actor], cwd=project, env=env)
    if issues is None:
        return None
    return {str(i["id"]): str(i["status"]) for i in issues if isinstance(i, dict)}


def changes(
    before: dict[str, str] | None, after: dict[str, str] | None
) -> tuple[list[str], list[str]]:
    """(claimed, closed) between two `held` snapshots."""
    if before is None or after is None:
        return [], []
    claimed = [i for i in after if i not in before]  # newly the loop's: claimed this time
    closed = [i for i, s in after.items() if s == "closed" and before.get(i) != "closed"]
    return claimed, closed

"""What `pn doctor` reports: each kind of finding, and the report's JSON output contract."""

from __future__ import annotations

from typing import Any, NamedTuple

# Every `check` a finding can carry. `claim` is informational: a loop that ran out of
# iterations mid-task leaves a fresh claim that a person must be able to see (ralph's
# "Exhausted"); only once it is stale does it become a problem `--fix` releases.
CHECKS = {
    "claim": "an issue in progress: who claimed it, how long ago (information, not a problem)",
    "stale_claim": "in progress for over 30 minutes since its latest claim; `--fix` releases it",
    "idle_assignee": (
        "an open issue assigned to an actor holding no live claim (no issue in progress "
        "under a claim younger than 30 minutes): no one else may claim it; `--fix` clears "
        "the assignee"
    ),
    "orphaned_dep": "a dependency naming a missing issue; `--fix` removes it",
    "dangling_fixes": "`fixes` naming something that is not a bug; `--fix` clears it",
    "orphaned_comment": "a comment on a missing issue; `--fix` removes it",
    "blocked_flag": (
        "issues whose stored blocked flag (what `ready` reads) contradicts their dependencies; "
        "`--fix` sets the flags again"
    ),
    "dep_cycle": (
        "a cycle of dependencies and parents; `pn dep remove` on one of its edges (or "
        '`pn update ID --parent ""`) breaks it'
    ),
    "jsonl_drift": (
        "a .pensa/*.jsonl file holds lines the database lacks (changed since the last sync): "
        "`pn sync` merges them in. Work not yet exported is not drift"
    ),
    "integrity": (
        "SQLite's integrity check failed; `--fix` rebuilds the database from the committed "
        "JSONL and keeps the damaged one"
    ),
    "damaged_database": (
        "the database is not SQLite, is corrupt or is a directory: no other check runs on it; "
        "`--fix` rebuilds it from the committed JSONL and keeps the damaged one beside it"
    ),
    "git_setup": "this clone lacks pensa's git hooks, merge driver or attributes; `pn init`",
    "foreign_schema": (
        "the database holds a trigger, view, table, index or column pensa did not create (it "
        "may have been tampered with): no other check runs on it; `--fix` rebuilds it from the "
        "committed JSONL"
    ),
}
INFORMATIONAL = frozenset({"claim"})


class Finding(NamedTuple):
    """A `doctor` observation (or, in `fixes`, what was repaired)."""

    check: str
    message: str
    issue_id: str | None = None

    @property
    def is_problem(self) -> bool:
        """False for information such as a fresh claim."""
        return self.check not in INFORMATIONAL

    def to_json(self) -> dict[str, str | None]:
        """The JSON object of the output contract."""
        return {"check": self.check, "message": self.message, "issue_id": self.issue_id}


class Report(NamedTuple):
    """What doctor found and, with `--fix`, what it repaired."""

    findings: list[Finding]
    fixes: list[Finding]

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the output contract."""
        return {
            "findings": [f.to_json() for f in self.findings],
            "fixes": [f.to_json() for f in self.fixes],
        }

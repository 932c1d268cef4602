"""`issues.blocked`: whether an issue waits on a dependency that is not closed.

`pn ready` and `pn claim-next` ask it of every open issue. Asked of the dependencies each
time, it was one lookup per open issue (most of `pn ready --json`'s time at 100k issues);
kept as a column, it is read from the ready index with the rest of the row. The column is
kept by triggers on every write that can change it (a dependency added or removed, an issue
closed, reopened, made or deleted), each recomputing the flag of the issues it touches from
the dependencies, so that no write path has to remember it; an import, which drops the
triggers while it loads, sets every flag at once (`BLOCKED_IDS`). `pn doctor` compares the
flags with the dependencies (`STALE`) and `--fix` sets them again.
"""

from __future__ import annotations


def waits_on_open(issue: str) -> str:
    """SQL: whether the issue whose id is the expression `issue` has a dependency that is not
    closed (1 or 0). `status > 'closed'` means `status != 'closed'` (the other statuses sort
    after it; a test keeps that true) and is the WHERE term of issues_unclosed, which answers
    without reading the dependency's row; CROSS JOIN keeps the planner from scanning every
    unclosed issue for each dependency."""
    return (
        "EXISTS (SELECT 1 FROM deps d CROSS JOIN issues p ON p.id = d.depends_on_id "  # noqa: S608 - pensa's own SQL
        f"WHERE d.issue_id = {issue} AND p.status > 'closed')"
    )


# The same rule for every issue at once: the ids of the issues that wait on one not closed.
BLOCKED_IDS = (
    "SELECT d.issue_id FROM issues p JOIN deps d ON d.depends_on_id = p.id "
    "WHERE p.status > 'closed'"
)
# Every flag set where the rule says so, in one statement, over rows whose flags are all 0
# (a migration, an import): only the blocked rows are written.
MARK_ALL = f"UPDATE issues SET blocked = 1 WHERE id IN ({BLOCKED_IDS})"  # noqa: S608 - constants
# The flags the dependencies contradict: how many, and setting them right (`doctor --fix`).
STALE = f"SELECT count(*) FROM issues WHERE blocked IS NOT (id IN ({BLOCKED_IDS}))"  # noqa: S608
REPAIR = (
    "UPDATE issues SET blocked = NOT blocked "  # noqa: S608 - constants
    f"WHERE blocked IS NOT (id IN ({BLOCKED_IDS}))"
)


def _recompute(where: str) -> str:
    """SQL: set the flag of the issues `where` selects to what the rule says, touching only
    the rows whose flag changes (an unchanged row is not rewritten, nor marked for export)."""
    return (
        f"UPDATE issues SET blocked = NOT blocked WHERE {where} "  # noqa: S608 - pensa's own SQL
        f"AND blocked IS NOT {waits_on_open('issues.id')}"
    )


def blocked_triggers() -> list[tuple[str, str, str]]:
    """(name, table, SQL) of the triggers that keep `issues.blocked`."""
    itself = "id = {row}.issue_id"
    dependents = "id IN (SELECT issue_id FROM deps WHERE depends_on_id = {row}.id)"
    changes = {
        "deps_blocked_insert": ("deps", "AFTER INSERT", "", [itself.format(row="NEW")]),
        "deps_blocked_delete": ("deps", "AFTER DELETE", "", [itself.format(row="OLD")]),
        "deps_blocked_update": (
            "deps",
            "AFTER UPDATE OF issue_id, depends_on_id",
            "",
            [itself.format(row="OLD"), itself.format(row="NEW")],
        ),
        # A new issue, open, blocks whoever already named it (a sync may add the dependency
        # first), and may itself wait on one added before it.
        "issues_blocked_insert": (
            "issues",
            "AFTER INSERT",
            "",
            ["id = NEW.id", dependents.format(row="NEW")],
        ),
        # Only a move into or out of `closed` changes what the issue's dependents wait on.
        "issues_blocked_status": (
            "issues",
            "AFTER UPDATE OF status",
            " WHEN (OLD.status = 'closed') IS NOT (NEW.status = 'closed')",
            [dependents.format(row="NEW")],
        ),
    }
    out = []
    for name, (table, event, when, wheres) in changes.items():
        body = " ".join(f"{_recompute(where)};" for where in wheres)
        sql = f"CREATE TRIGGER {name} {event} ON {table}{when} BEGIN {body} END"
        out.append((name, table, sql))
    return out

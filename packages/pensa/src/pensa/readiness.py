"""Why an issue is not ready: `pn ready --explain`.

`pn ready` answers with one query (`pensa.ready.READY`); this says, for every issue not closed that
the query leaves out, each reason it does, in the words a person acts on: a bug waits for the
task that fixes it, a held issue for its holder, a blocked one for its dependencies (or its
ancestors'), an epic or feature for its children, and, where the project asks for a Ready Contract
(`--require-verify`), a task for its verify commands. Not on the hot path: `pn ready` itself
never imports this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pensa.models import Issue, IssueType, Status
from pensa.shared.assignee import HUMAN
from pensa.views import Filters, list_query, open_blockers

if TYPE_CHECKING:
    from pensa.store import Store


class Reason(NamedTuple):
    """One reason: a stable code, the issues it names, and the phrase that says it."""

    code: str
    ids: tuple[str, ...]
    detail: str

    def to_json(self) -> dict[str, object]:
        """The JSON object of the output contract."""
        return {"code": self.code, "ids": list(self.ids), "detail": self.detail}


class NotReady(NamedTuple):
    """An issue that is not ready, and every reason why."""

    issue: Issue
    reasons: tuple[Reason, ...]

    def to_json(self) -> dict[str, object]:
        """The JSON object of the output contract."""
        i = self.issue
        return {
            "id": i.id,
            "title": i.title,
            "issue_type": i.issue_type.value,
            "status": i.status.value,
            "assignee": i.assignee,
            "reasons": [r.to_json() for r in self.reasons],
        }

    def line(self) -> str:
        """`pn-1a2b3c4d task "title": blocked by pn-…; has open children pn-…`."""
        why = "; ".join(r.detail for r in self.reasons)
        return f"{self.issue.id} {self.issue.issue_type.value} {self.issue.title!r}: {why}"


def _children(store: Store, ids: list[str]) -> dict[str, list[str]]:
    import json

    out: dict[str, list[str]] = {}
    for parent, child in store.rows(
        "SELECT parent, id FROM issues WHERE parent IN (SELECT value FROM json_each(?)) "
        "AND status != 'closed' ORDER BY seq",
        (json.dumps(ids),),
    ):
        out.setdefault(str(parent), []).append(str(child))
    return out


def _ancestors(store: Store) -> dict[str, str]:
    """Every issue's parent, for the issues that have one."""
    return {
        str(i): str(p)
        for i, p in store.rows("SELECT id, parent FROM issues WHERE parent IS NOT NULL")
    }


def _blocked_above(
    issue: Issue, parents: dict[str, str], blockers: dict[str, list[tuple[str, str]]]
) -> Reason | None:
    """The nearest ancestor that waits on an open dependency (its tasks wait with it)."""
    seen: set[str] = set()
    above = parents.get(issue.id)
    while above is not None and above not in seen:
        seen.add(above)
        if waits := [b for b, _ in blockers.get(above, [])]:
            return Reason(
                "parent_blocked", (above, *waits),
                f"its parent {above} is blocked by {', '.join(waits)}",
            )  # fmt: skip
        above = parents.get(above)
    return None


def _held(issue: Issue, filters: Filters) -> Reason | None:
    who = issue.assignee
    if issue.status is Status.IN_PROGRESS:
        return Reason("held", (), f"held by {who or 'nobody'} (in progress)")
    if who is None:
        return None
    if who == HUMAN:
        return Reason("needs_human", (), f"stuck: waiting for a human (`pn release {issue.id}`)")
    if filters.assignee is None:  # `ready -a WHO` lists what is assigned to WHO
        return Reason("assigned", (), f"assigned to {who}")
    return None


def explain(store: Store, filters: Filters, *, require_verify: bool = False) -> list[NotReady]:
    """Every issue not closed, among those `filters` select, that `pn ready` (with the same
    filters and `require_verify`) leaves out, with its reasons; by priority, then age."""
    issues = list_query(filters._replace(statuses=(Status.OPEN, Status.IN_PROGRESS))).issues(store)
    ids = [i.id for i in issues]
    parents = _ancestors(store)
    blockers = open_blockers(store, [*ids, *set(parents.values())])
    children = _children(store, ids)
    out = []
    for issue in issues:
        reasons: list[Reason] = []
        if issue.issue_type is IssueType.BUG:
            reasons.append(
                Reason("bug", (), f"a bug: plan the work as a task with `--fixes {issue.id}`")
            )
        if (held := _held(issue, filters)) is not None:
            reasons.append(held)
        if waits := [b for b, _ in blockers.get(issue.id, [])]:
            reasons.append(Reason("blocked", tuple(waits), f"blocked by {', '.join(waits)}"))
        if (above := _blocked_above(issue, parents, blockers)) is not None:
            reasons.append(above)
        if kids := children.get(issue.id, []):
            reasons.append(
                Reason("open_children", tuple(kids), f"has open children {', '.join(kids)}")
            )
        if require_verify and not issue.verify and issue.issue_type is not IssueType.BUG:
            reasons.append(
                Reason("no_verify", (), f"no verify commands (`pn update {issue.id} --verify`)")
            )
        if reasons:
            out.append(NotReady(issue, tuple(reasons)))
    return out

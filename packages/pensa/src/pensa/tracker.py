"""Issue lifecycle: create, update, claim, close, reopen, release, delete, comments, history.

Each mutation runs in one `BEGIN IMMEDIATE` transaction together with its audit event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pensa import ids
from pensa.changes import (
    NO_CHANGES,
    NO_SHAPE,
    Changes,
    Shape,
    check_fixes,
    clean_title,
    columns_of,
    moved,
    write_changes,
)
from pensa.errors import (
    AlreadyClaimed,
    InvalidArgument,
    InvalidStatusTransition,
)
from pensa.models import (
    Comment,
    Event,
    Issue,
    IssueDetail,
    IssueType,
    Priority,
    Status,
    clean_labels,
    encode_labels,
    timestamp,
    utcnow,
)
from pensa.store import (
    fetch_issue,
    find,
    get,
    log_event,
    resolve,
    set_fields,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from pensa.closing import Closed
    from pensa.store import Store


class Tracker:
    """The issue lifecycle over one store; `now` is injectable for tests."""

    def __init__(self, store: Store, *, now: Callable[[], datetime] = utcnow) -> None:
        self.store = store
        self.now = now

    def stamp(self) -> str:
        """The current time as stored."""
        return timestamp(self.now())

    def get(self, issue_id: str) -> Issue:
        """One issue (any unique spelling of its id), or NotFound."""
        return find(self.store.conn, issue_id)

    def show(self, issue_id: str) -> IssueDetail:
        """The issue with its dependencies, dependents and comments."""
        from pensa.views import CHILDREN_OF, DEPENDENCIES_OF, DEPENDENTS_OF, select

        issue = self.get(issue_id)
        issue_id = issue.id
        deps = select(self.store, [DEPENDENCIES_OF], [issue_id])
        dependents = select(self.store, [DEPENDENTS_OF], [issue_id])
        is_bug = issue.issue_type is IssueType.BUG
        fixed_by = select(self.store, ["fixes = ?"], [issue_id]) if is_bug else []
        return IssueDetail(
            issue,
            tuple(deps),
            tuple(dependents),
            tuple(self.comments(issue_id)),
            tuple(fixed_by),
            None if issue.parent is None else self.get(issue.parent),
            tuple(select(self.store, [CHILDREN_OF], [issue_id], order="seq")),
        )

    def create(
        self,
        title: str,
        *,
        issue_type: IssueType,
        actor: str,
        priority: Priority = Priority.P2,
        assignee: str | None = None,
        spec: str | None = None,
        fixes: str | None = None,
        description: str | None = None,
        deps: Sequence[str] = (),
        labels: Sequence[str] = (),
        shape: Shape = NO_SHAPE,
    ) -> Issue:
        """Create an open issue, optionally depending on `deps`, fixing bug `fixes`, under a
        parent and with a Ready Contract (`shape`)."""
        from pensa.changes import shape_columns

        title = clean_title(title)
        labels = clean_labels(labels)
        now = self.stamp()
        with self.store.write() as conn:
            if fixes:
                fixes = check_fixes(conn, fixes)
            deps = [resolve(conn, dep, flag="--dep") for dep in deps]
            shaped = shape_columns(conn, None, shape)
            issue_id = ids.new_id(lambda c: fetch_issue(conn, c) is not None)
            columns = {
                "id": issue_id,
                "title": title,
                "description": description or None,
                "issue_type": issue_type.value,
                "status": "open",
                "priority": priority.value,
                "spec": spec or None,
                "fixes": fixes or None,
                "assignee": assignee or None,
                "created_at": now,
                "updated_at": now,
                "labels": encode_labels(labels),
                **shaped,
            }
            conn.execute(
                f"INSERT INTO issues ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})",
                tuple(columns.values()),
            )
            log_event(conn, issue_id, "created", actor=actor, detail=title, at=now)
            for dep in dict.fromkeys(deps):
                conn.execute(
                    "INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)", (issue_id, dep)
                )
                log_event(
                    conn, issue_id, "dep_added", actor=actor, detail=f"depends on {dep}", at=now
                )
            return get(conn, issue_id)

    def update(
        self,
        issue_id: str,
        *,
        actor: str,
        title: str | None = None,
        status: Status | None = None,
        priority: Priority | None = None,
        assignee: str | None = None,
        description: str | None = None,
        spec: str | None = None,
        fixes: str | None = None,
        labels: Sequence[str] = (),
        replace_labels: Sequence[str] | None = None,
        shape: Shape = NO_SHAPE,
    ) -> Issue:
        """Change fields; `labels` are added, `replace_labels` (`pn edit`) become the whole
        set. Empty text clears. The status moves between open and in_progress only: closing
        and reopening have their own commands."""
        changes = Changes(title, priority, description, spec, fixes, labels, replace_labels, shape)
        now = self.stamp()
        with self.store.write() as conn:
            issue = find(conn, issue_id)
            columns = columns_of(conn, changes, issue.id)
            if assignee is not None:
                columns["assignee"] = assignee or None
            if status is not None and status is not issue.status:
                if status is Status.CLOSED:
                    raise InvalidStatusTransition(
                        f"close {issue.id} with `pn close {issue.id} --reason ...`"
                    )
                if issue.status is Status.CLOSED:
                    raise _is_closed(issue.id)
                columns["status"] = status.value
            # Setting in_progress by hand takes the issue as --claim does, so it logs a claim:
            # doctor's claim age and claim-next's stuck count read `claimed` events.
            event = "claimed" if columns.get("status") == Status.IN_PROGRESS.value else "updated"
            return write_changes(conn, issue, columns, changes, event=event, actor=actor, now=now)

    def claim(self, issue_id: str, *, actor: str, changes: Changes = NO_CHANGES) -> Issue:
        """Take an open issue: in_progress, assigned to `actor`, with `changes` in the same
        transaction and event (`pn update ID --claim -p p1`). Re-claiming an issue you hold
        changes only the fields; a closed one or one someone else holds is refused. An issue
        put in progress with no assignee (`update --status in_progress`) is held by nobody,
        so it is taken as an open one is."""
        now = self.stamp()
        with self.store.write() as conn:
            issue = find(conn, issue_id)
            columns = columns_of(conn, changes, issue.id)
            event = "updated"
            held_by_nobody = issue.status is Status.IN_PROGRESS and issue.assignee is None
            if issue.status is Status.OPEN or held_by_nobody:
                from pensa.claims import refuse_second_claim

                refuse_second_claim(conn, issue, actor)
                columns.update(status=Status.IN_PROGRESS.value, assignee=actor)
                event = "claimed"
            elif issue.status is Status.CLOSED:
                raise AlreadyClaimed(
                    f"{issue.id} is closed (holder: {issue.assignee or 'nobody'}); "
                    "only open issues can be claimed"
                )
            elif issue.assignee != actor:
                raise AlreadyClaimed(
                    f"{issue.id} is already claimed by {issue.assignee or 'nobody'}"
                )
            return write_changes(conn, issue, columns, changes, event=event, actor=actor, now=now)

    def release(self, issue_id: str, *, actor: str, changes: Changes = NO_CHANGES) -> Issue:
        """Give the issue back: open, no assignee, whoever held it, with `changes` in the
        same transaction and event (`pn release`, `pn update --unclaim`). A closed issue is
        refused: reopen it instead."""
        now = self.stamp()
        with self.store.write() as conn:
            issue = find(conn, issue_id)
            columns = columns_of(conn, changes, issue.id)
            if issue.status is Status.CLOSED:
                raise _is_closed(issue.id)
            columns.update(status=Status.OPEN.value, assignee=None)
            # A stuck issue handed back by a human starts a fresh count of claims.
            from pensa.shared.assignee import HUMAN

            event = "returned" if issue.assignee == HUMAN else "released"
            return write_changes(conn, issue, columns, changes, event=event, actor=actor, now=now)

    def relabel(
        self,
        issue_id: str,
        *,
        actor: str,
        add: Sequence[str] = (),
        remove: Sequence[str] = (),
    ) -> Issue:
        """Add and remove labels (`pn label add|remove`); one `labeled` event says which."""
        add, remove = clean_labels(add), clean_labels(remove)
        now = self.stamp()
        with self.store.write() as conn:
            issue = find(conn, issue_id)
            labels = tuple(x for x in clean_labels([*issue.labels, *add]) if x not in remove)
            if labels == issue.labels:
                return issue
            set_fields(conn, issue.id, {"labels": encode_labels(labels)}, now)
            detail = moved(issue.labels, labels)
            log_event(conn, issue.id, "labeled", actor=actor, detail=detail, at=now)
            return get(conn, issue.id)

    def release_held(
        self,
        holder: str,
        *,
        actor: str,
        reason: str | None = None,
        cut_short_since: datetime | None = None,
    ) -> list[Issue]:
        """Give back every in-progress issue held by `holder` (a loop that ended), in one
        transaction; each gets a `released` event saying why.

        With `cut_short_since` (when the attempt the loop's stop cut short began), an issue
        claimed since then gets an `interrupted` event instead: nobody gave up on it, so that
        claim does not count towards claim-next's stuck threshold (`claims_since_reset`)."""
        now = self.stamp()
        from pensa.claims import last_claim_at

        since = None if cut_short_since is None else timestamp(cut_short_since)
        with self.store.write() as conn:
            held = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM issues WHERE status = 'in_progress' AND assignee = ? "
                    "ORDER BY seq",
                    (holder,),
                )
            ]
            for issue_id in held:
                set_fields(conn, issue_id, {"status": "open", "assignee": None}, now)
                detail = f"assignee: {holder} -> none" + (f"; {reason}" if reason else "")
                event = "released"
                if since is not None and last_claim_at(conn, issue_id) >= since:
                    event = "interrupted"
                log_event(conn, issue_id, event, actor=actor, detail=detail, at=now)
            return [get(conn, issue_id) for issue_id in held]

    def close(
        self, issue_id: str, *, actor: str, reason: str | None = None, force: bool = False
    ) -> tuple[Issue, Issue | None]:
        """Close the issue; returns it and the bug it auto-closed, if its last fix closed."""
        done = self.close_many([issue_id], actor=actor, reason=reason, force=force)
        return done.closed[0], (done.also_closed[0] if done.also_closed else None)

    def close_many(
        self,
        issue_ids: Sequence[str],
        *,
        actor: str,
        reason: str | None = None,
        force: bool = False,
    ) -> Closed:
        """Close every issue named, all or none; also say what closed with them and what
        they made ready."""
        from pensa import closing

        now = self.stamp()
        with self.store.write() as conn:
            return closing.close(conn, issue_ids, actor=actor, now=now, reason=reason, force=force)

    def reopen(self, issue_id: str, *, actor: str, reason: str | None = None) -> Issue:
        """Reopen a closed issue, clearing `closed_at` and `close_reason`."""
        return self.reopen_many([issue_id], actor=actor, reason=reason)[0]

    def reopen_many(
        self, issue_ids: Sequence[str], *, actor: str, reason: str | None = None
    ) -> list[Issue]:
        """Reopen every closed issue named, all or none."""
        from pensa import closing

        now = self.stamp()
        with self.store.write() as conn:
            return closing.reopen(conn, issue_ids, actor=actor, now=now, reason=reason)

    def delete(self, issue_id: str, *, actor: str, force: bool = False) -> None:
        """Delete the issue; with `force` also its deps, comments and `fixes` links."""
        from pensa import closing

        now = self.stamp()
        with self.store.write() as conn:
            closing.delete(conn, issue_id, actor=actor, now=now, force=force)

    def add_comment(self, issue_id: str, text: str, *, actor: str) -> Comment:
        """Attach a comment to the issue."""
        from pensa import notes

        if not text.strip():
            raise InvalidArgument("the comment is empty")
        now = self.stamp()
        with self.store.write() as conn:
            return notes.add_comment(conn, find(conn, issue_id).id, text, actor=actor, now=now)

    def comments(self, issue_id: str) -> list[Comment]:
        """The issue's comments, oldest first."""
        from pensa import notes

        return notes.comments(self.store, self.get(issue_id).id)

    def history(self, issue_id: str) -> list[Event]:
        """The issue's audit log, newest first (also for a deleted issue)."""
        from pensa import notes

        return notes.history(self.store, issue_id)


def _is_closed(issue_id: str) -> InvalidStatusTransition:
    """The error for changing a closed issue's status other than by reopening it."""
    return InvalidStatusTransition(f"{issue_id} is closed; reopen it with `pn reopen {issue_id}`")


__all__ = ["Tracker"]

"""Issue lifecycle rules, on a real SQLite file."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from pensa.changes import Changes
from pensa.errors import (
    AlreadyClaimed,
    Conflict,
    InvalidArgument,
    InvalidStatusTransition,
    NotFound,
)
from pensa.graph import Graph
from pensa.models import Issue, IssueType, Priority, Status
from pensa.shared.assignee import HUMAN
from pensa.store import Store
from pensa.tracker import Tracker
from pensa.views import Filters, list_issues, ready

TASK = IssueType.TASK


def test_creation_order_is_kept_even_within_one_second(tracker: Tracker, store: Store) -> None:
    tracker.now = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # every issue in the same instant
    made = [tracker.create(f"t{n}", issue_type=TASK, actor="a").id for n in range(20)]
    assert [i.id for i in list_issues(store, Filters())] == made
    assert [i.id for i in ready(store, Filters())] == made


def test_every_mutation_is_in_the_audit_log(tracker: Tracker, graph: Graph) -> None:
    a = tracker.create("a", issue_type=TASK, actor="ann").id
    b = tracker.create("b", issue_type=TASK, actor="ann").id
    graph.add(a, b, actor="ann")
    graph.remove(a, b, actor="ann")
    tracker.update(a, actor="ann", priority=Priority.P1)
    tracker.claim(a, actor="bob")
    tracker.release(a, actor="bob")
    tracker.add_comment(a, "note", actor="ann")
    tracker.close(a, actor="ann", reason="done")
    tracker.reopen(a, actor="ann", reason="again")
    assert [e.event_type for e in tracker.history(a)] == [
        "reopened",
        "closed",
        "commented",
        "released",
        "claimed",
        "updated",
        "dep_removed",
        "dep_added",
        "created",
    ]
    assert tracker.history(a)[5].detail == "priority: p2 -> p1"


def last_event(tracker: Tracker, issue_id: str) -> tuple[str, str | None, str | None]:
    """The newest event of the issue: type, actor and detail."""
    event = tracker.history(issue_id)[0]
    return event.event_type, event.actor, event.detail


@pytest.mark.parametrize("assignee", [None, "bob", HUMAN])  # assigned is not claimed
def test_claim_takes_an_open_issue_whoever_it_is_assigned_to(
    tracker: Tracker, assignee: str | None
) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", assignee=assignee).id
    claimed = tracker.claim(issue, actor="ann")
    assert (claimed.status, claimed.assignee) == (Status.IN_PROGRESS, "ann")
    holder = assignee or "none"
    detail = f"status: open -> in_progress, assignee: {holder} -> ann"
    assert last_event(tracker, issue) == ("claimed", "ann", detail)


def test_re_claiming_your_own_issue_changes_only_the_fields_given(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    held = tracker.claim(issue, actor="ann")
    assert tracker.claim(issue, actor="ann") == held
    assert len(tracker.history(issue)) == 2  # a claim that changes nothing logs nothing
    again = tracker.claim(issue, actor="ann", changes=Changes(priority=Priority.P0))
    assert (again.status, again.assignee, again.priority) == (Status.IN_PROGRESS, "ann", "p0")
    assert last_event(tracker, issue) == ("updated", "ann", "priority: p2 -> p0")


def test_claim_of_an_issue_in_progress_under_someone_else_is_refused(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    before = tracker.update(issue, actor="a", status=Status.IN_PROGRESS, assignee="ann")
    with pytest.raises(AlreadyClaimed, match=f"^{issue} is already claimed by ann$"):
        tracker.claim(issue, actor="bob", changes=Changes(priority=Priority.P0))
    assert tracker.get(issue) == before  # nor are the changes that came with it written


def test_claim_takes_an_issue_put_in_progress_with_no_holder(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    tracker.update(issue, actor="a", status=Status.IN_PROGRESS)  # nobody holds it
    taken = tracker.claim(issue, actor="bob", changes=Changes(priority=Priority.P0))
    assert (taken.status, taken.assignee, taken.priority) == (
        Status.IN_PROGRESS, "bob", Priority.P0,
    )  # fmt: skip
    events = tracker.store.rows(
        "SELECT event_type, actor FROM events WHERE issue_id = ? ORDER BY seq", (issue,)
    )
    assert events[-1] == ("claimed", "bob")
    with pytest.raises(AlreadyClaimed, match=f"^{issue} is already claimed by bob$"):
        tracker.claim(issue, actor="carol")


@pytest.mark.parametrize("holder", ["ann", None])
def test_claim_of_a_closed_issue_is_refused_even_for_its_holder(
    tracker: Tracker, holder: str | None
) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", assignee=holder).id
    tracker.close(issue, actor="ann")
    message = rf"^{issue} is closed \(holder: {holder or 'nobody'}\); only open issues can be"
    with pytest.raises(AlreadyClaimed, match=message):
        tracker.claim(issue, actor="ann")
    assert tracker.get(issue).status is Status.CLOSED


def test_a_claim_and_its_changes_are_one_write_and_one_event(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", labels=["old"]).id
    bug = tracker.create("bug", issue_type=IssueType.BUG, actor="a").id
    changes = Changes(
        title="y", priority=Priority.P1, description="d", spec="auth", fixes=bug[:7], labels=["ui"]
    )
    claimed = tracker.claim(issue, actor="ann", changes=changes)
    assert (claimed.title, claimed.priority, claimed.description) == ("y", "p1", "d")
    assert (claimed.spec, claimed.fixes, claimed.labels) == ("auth", bug, ("old", "ui"))
    assert (claimed.status, claimed.assignee) == (Status.IN_PROGRESS, "ann")
    assert [e.event_type for e in tracker.history(issue)] == ["claimed", "created"]
    assert last_event(tracker, issue)[2] == (
        f"title: x -> y, priority: p2 -> p1, description: none -> d, spec: none -> auth, "
        f"fixes: none -> {bug}, status: open -> in_progress, assignee: none -> ann, labels: +ui"
    )


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        (Changes(title=" "), InvalidArgument),
        (Changes(fixes="pn-00000000"), NotFound),
        (Changes(labels=["a,b"]), InvalidArgument),
    ],
)
def test_a_claim_or_release_with_a_bad_change_writes_nothing(
    tracker: Tracker, changes: Changes, error: type[Exception]
) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    with pytest.raises(error):
        tracker.claim(issue, actor="ann", changes=changes)
    held = tracker.claim(issue, actor="ann")
    with pytest.raises(error):
        tracker.release(issue, actor="ann", changes=changes)
    assert tracker.get(issue) == held
    assert [e.event_type for e in tracker.history(issue)] == ["claimed", "created"]


def test_a_bad_change_is_named_before_a_refused_claim(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    tracker.claim(issue, actor="ann")
    with pytest.raises(InvalidArgument, match="the title is empty"):
        tracker.claim(issue, actor="bob", changes=Changes(title=""))


def test_release_gives_a_held_issue_back_whoever_asks(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    tracker.claim(issue, actor="ann")
    back = tracker.release(issue, actor="bob")
    assert (back.status, back.assignee) == (Status.OPEN, None)
    detail = "status: in_progress -> open, assignee: ann -> none"
    assert last_event(tracker, issue) == ("released", "bob", detail)


def test_release_from_the_human_is_a_return(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", assignee=HUMAN).id
    back = tracker.release(issue, actor="alice")
    assert (back.status, back.assignee) == (Status.OPEN, None)
    assert last_event(tracker, issue) == ("returned", "alice", "assignee: human -> none")


def test_release_and_its_changes_are_one_event(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    tracker.claim(issue, actor="ann")
    changes = Changes(priority=Priority.P3, labels=["z"])
    back = tracker.release(issue, actor="ann", changes=changes)
    assert (back.status, back.assignee, back.priority, back.labels) == (
        Status.OPEN,
        None,
        "p3",
        ("z",),
    )
    assert last_event(tracker, issue) == (
        "released",
        "ann",
        "priority: p2 -> p3, status: in_progress -> open, assignee: ann -> none, labels: +z",
    )


def test_release_of_an_issue_nobody_holds_changes_nothing(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a")
    assert tracker.release(issue.id, actor="a") == issue
    assert len(tracker.history(issue.id)) == 1


def test_release_of_a_closed_issue_is_refused(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    closed, _ = tracker.close(issue, actor="a")
    message = re.escape(f"{issue} is closed; reopen it with `pn reopen {issue}`")
    with pytest.raises(InvalidStatusTransition, match=f"^{message}$"):
        tracker.release(issue, actor="a", changes=Changes(priority=Priority.P0))
    assert tracker.get(issue) == closed


def test_update_refuses_to_close(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    message = re.escape(f"close {issue} with `pn close {issue} --reason ...`")
    with pytest.raises(InvalidStatusTransition, match=f"^{message}$"):
        tracker.update(issue, actor="a", status=Status.CLOSED, priority=Priority.P0)
    assert tracker.get(issue).priority is Priority.P2


@pytest.mark.parametrize("status", [Status.OPEN, Status.IN_PROGRESS])
def test_update_cannot_move_a_closed_issue(tracker: Tracker, status: Status) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    closed, _ = tracker.close(issue, actor="a")
    message = re.escape(f"{issue} is closed; reopen it with `pn reopen {issue}`")
    with pytest.raises(InvalidStatusTransition, match=f"^{message}$"):
        tracker.update(issue, actor="a", status=status)
    assert tracker.get(issue) == closed


def test_update_of_a_closed_issue_may_change_its_other_fields(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    tracker.close(issue, actor="a")
    renamed = tracker.update(issue, actor="a", title="y", status=Status.CLOSED)  # closed already
    assert (renamed.title, renamed.status) == ("y", Status.CLOSED)
    assert last_event(tracker, issue) == ("updated", "a", "title: x -> y")


def test_update_to_in_progress_is_logged_as_a_claim(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    started = tracker.update(issue, actor="ann", status=Status.IN_PROGRESS)
    assert (started.status, started.assignee) == (Status.IN_PROGRESS, None)
    assert last_event(tracker, issue) == ("claimed", "ann", "status: open -> in_progress")
    tracker.update(issue, actor="ann", status=Status.OPEN, assignee="bob")
    detail = "assignee: none -> bob, status: in_progress -> open"
    assert last_event(tracker, issue) == ("updated", "ann", detail)


def test_update_that_changes_nothing_logs_nothing(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", labels=["ui"])
    same = tracker.update(
        issue.id, actor="a", title=" x ", status=Status.OPEN, priority=Priority.P2, labels=["ui"]
    )
    assert same == issue
    assert len(tracker.history(issue.id)) == 1


def test_update_clears_a_field_given_empty_text(tracker: Tracker) -> None:
    bug = tracker.create("bug", issue_type=IssueType.BUG, actor="a").id
    issue = tracker.create(
        "x", issue_type=TASK, actor="a", assignee="bob", description="d", spec="s", fixes=bug
    ).id
    cleared = tracker.update(issue, actor="a", assignee="", description="", spec="", fixes="")
    assert (cleared.assignee, cleared.description, cleared.spec, cleared.fixes) == (None,) * 4
    assert last_event(tracker, issue)[2] == (
        f"description: d -> none, spec: s -> none, fixes: {bug} -> none, assignee: bob -> none"
    )


def test_update_replaces_the_labels_for_pn_edit_then_adds(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", labels=["a", "b"]).id
    relabelled = tracker.update(issue, actor="a", replace_labels=["b", "c"], labels=["d"])
    assert relabelled.labels == ("b", "c", "d")
    assert last_event(tracker, issue) == ("updated", "a", "labels: +c +d -a")
    assert tracker.update(issue, actor="a", replace_labels=[]).labels == ()


def test_claim_next_skips_issues_assigned_to_someone_else(tracker: Tracker) -> None:
    from pensa.claims import claim_next

    def claim(actor: str) -> Issue | None:
        return claim_next(tracker.store, actor=actor, now=tracker.now)

    tracker.create("for bob", issue_type=TASK, actor="a", assignee="bob", priority=Priority.P0)
    mine = tracker.create("free", issue_type=TASK, actor="a").id
    claimed = claim("ann")
    assert claimed is not None
    assert claimed.id == mine
    assert claim("cy") is None
    assert claim("ann") == claimed  # one claim per agent: ann gets the task she holds
    bobs = claim("bob")
    assert bobs is not None
    assert bobs.title == "for bob"


def test_closing_an_unclaimed_or_own_issue_needs_no_force(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", assignee="bob").id
    closed, fixed = tracker.close(issue, actor="ann")  # assigned but not claimed
    assert closed.status is Status.CLOSED
    assert fixed is None
    with pytest.raises(Conflict):
        tracker.close(issue, actor="ann")


def test_a_bug_closes_only_with_its_last_fix_and_says_which(tracker: Tracker) -> None:
    bug = tracker.create("bug", issue_type=IssueType.BUG, actor="a").id
    one = tracker.create("one", issue_type=TASK, actor="a", fixes=bug).id
    two = tracker.create("two", issue_type=TASK, actor="a").id
    tracker.update(two, actor="a", fixes=bug)
    assert tracker.close(one, actor="a")[1] is None
    _, fixed = tracker.close(two, actor="a")
    assert fixed is not None
    assert fixed.close_reason == f"fixed by {two}"


def test_fixes_must_exist_and_be_a_bug(tracker: Tracker) -> None:
    task = tracker.create("t", issue_type=TASK, actor="a").id
    with pytest.raises(InvalidArgument, match="must name a bug"):
        tracker.create("x", issue_type=TASK, actor="a", fixes=task)
    with pytest.raises(NotFound):
        tracker.update(task, actor="a", fixes="pn-00000000")


def test_force_delete_removes_deps_comments_and_fixes_links(
    tracker: Tracker, graph: Graph, store: Store
) -> None:
    bug = tracker.create("bug", issue_type=IssueType.BUG, actor="a").id
    fix = tracker.create("fix", issue_type=TASK, actor="a", fixes=bug).id
    other = tracker.create("other", issue_type=TASK, actor="a").id
    graph.add(other, bug, actor="a")
    tracker.add_comment(bug, "c", actor="a")
    with pytest.raises(Conflict, match="1 dependent, 1 comment, 1 issue fixing it"):
        tracker.delete(bug, actor="a")
    tracker.delete(bug, actor="a", force=True)
    assert tracker.get(fix).fixes is None
    assert store.rows("SELECT count(*) FROM deps") == [(0,)]
    assert store.rows("SELECT count(*) FROM comments") == [(0,)]
    assert [e.event_type for e in tracker.history(bug)] == ["deleted"]
    with pytest.raises(NotFound):
        tracker.get(bug)


def test_unknown_ids_hint_at_the_id_shape(tracker: Tracker) -> None:
    with pytest.raises(NotFound, match=r"no issue login \(ids look like pn-"):
        tracker.get("login")
    with pytest.raises(NotFound, match=r"^no issue 1a2b$"):  # a fine prefix of nothing
        tracker.get("1a2b")


def test_labels_are_kept_sorted_without_duplicates_and_each_change_is_logged(
    tracker: Tracker,
) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", labels=["ui", " backend", "ui"])
    assert issue.labels == ("backend", "ui")
    assert issue.to_json()["labels"] == ["backend", "ui"]
    relabelled = tracker.relabel(issue.id, actor="a", add=["zeta"], remove=["ui"])
    assert relabelled.labels == ("backend", "zeta")
    assert tracker.history(issue.id)[0].detail == "+zeta -ui"
    assert tracker.relabel(issue.id, actor="a", add=["zeta"]) == relabelled  # no change, no event
    updated = tracker.update(issue.id, actor="a", labels=["alpha"], priority=Priority.P1)
    assert updated.labels == ("alpha", "backend", "zeta")
    assert tracker.history(issue.id)[0].detail == "priority: p2 -> p1, labels: +alpha"
    assert tracker.create("y", issue_type=TASK, actor="a").labels == ()


@pytest.mark.parametrize("bad", ["", "  ", "a,b", "two\nlines"])
def test_a_label_must_be_a_non_empty_word_without_commas(tracker: Tracker, bad: str) -> None:
    with pytest.raises(InvalidArgument, match="invalid label"):
        tracker.create("x", issue_type=TASK, actor="a", labels=[bad])


def test_label_filters_keep_issues_carrying_every_label(tracker: Tracker, store: Store) -> None:
    both = tracker.create("both", issue_type=TASK, actor="a", labels=["ui", "web"]).id
    ui = tracker.create("ui", issue_type=TASK, actor="a", labels=["ui"]).id
    tracker.create("none", issue_type=TASK, actor="a")
    assert [i.id for i in ready(store, Filters(labels=("ui",)))] == [both, ui]
    assert [i.id for i in list_issues(store, Filters(labels=("ui", "web")))] == [both]
    assert list_issues(store, Filters(labels=("nope",))) == []


def test_history_details_never_show_python_reprs(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a", assignee="build-1").id
    tracker.update(issue, actor="a", assignee="")
    assert tracker.history(issue)[0].detail == "assignee: build-1 -> none"

"""Issue lifecycle rules, on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pensa.errors import (
    AlreadyClaimed,
    Conflict,
    InvalidArgument,
    InvalidStatusTransition,
    NotFound,
)
from pensa.graph import Graph
from pensa.models import Issue, IssueType, Priority, Status
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
    tracker.update(a, actor="bob", claim=True)
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


def test_claim_rules(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    assert tracker.update(issue, actor="ann", claim=True).assignee == "ann"
    assert tracker.update(issue, actor="ann", claim=True).status is Status.IN_PROGRESS
    with pytest.raises(AlreadyClaimed, match="already claimed by ann"):
        tracker.update(issue, actor="bob", claim=True)
    tracker.close(issue, actor="ann")
    with pytest.raises(AlreadyClaimed, match="is closed"):
        tracker.update(issue, actor="bob", claim=True)
    with pytest.raises(InvalidArgument):
        tracker.update(issue, actor="bob", claim=True, unclaim=True)


def test_claim_next_skips_issues_assigned_to_someone_else(tracker: Tracker) -> None:
    from pensa.claims import claim_next

    def claim(actor: str) -> Issue | None:
        return claim_next(tracker.store, actor=actor, now=tracker.now)

    tracker.create("for bob", issue_type=TASK, actor="a", assignee="bob", priority=Priority.P0)
    mine = tracker.create("free", issue_type=TASK, actor="a").id
    claimed = claim("ann")
    assert claimed is not None
    assert claimed.id == mine
    assert claim("ann") is None
    bobs = claim("bob")
    assert bobs is not None
    assert bobs.title == "for bob"


def test_release_of_a_closed_issue_is_refused(tracker: Tracker) -> None:
    issue = tracker.create("x", issue_type=TASK, actor="a").id
    tracker.close(issue, actor="a")
    with pytest.raises(InvalidStatusTransition):
        tracker.release(issue, actor="a")
    with pytest.raises(InvalidStatusTransition):
        tracker.update(issue, actor="a", status=Status.OPEN)


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

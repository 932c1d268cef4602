"""Tasks with a shape: types, parent and discovered-from links, the Ready Contract and size,
leaves-only readiness, parents closing with their last child, and one claim per agent."""

from __future__ import annotations

from typing import Any

import pytest

from pensa.changes import Shape
from pensa.claims import claim_next
from pensa.errors import (
    AlreadyClaimed,
    Conflict,
    CycleDetected,
    InvalidArgument,
    InvalidStatusTransition,
    NotFound,
)
from pensa.graph import Graph
from pensa.models import IssueType, LinkKind, Size, Status
from pensa.readiness import explain
from pensa.store import Store
from pensa.tracker import Tracker
from pensa.views import Filters, ready

EPIC, FEATURE, TASK = IssueType.EPIC, IssueType.FEATURE, IssueType.TASK
SPIKE, BUG = IssueType.SPIKE, IssueType.BUG


def make(tracker: Tracker, title: str, kind: IssueType = TASK, **shape: Any) -> str:
    return tracker.create(title, issue_type=kind, actor="ann", shape=Shape(**shape)).id


def ready_ids(store: Store, **kwargs: bool) -> list[str]:
    return [i.id for i in ready(store, Filters(), **kwargs)]


# --- types and the contract -----------------------------------------------------------------


@pytest.mark.parametrize("word", ["epic", "feature", "task", "bug", "spike", "test", "chore"])
def test_every_norma_type_is_a_type(word: str) -> None:
    assert IssueType.parse(word).value == word


@pytest.mark.parametrize(("typed", "meant"), [("story", "feature"), ("milestone", "epic")])
def test_a_near_miss_names_the_type_it_means(typed: str, meant: str) -> None:
    with pytest.raises(InvalidArgument, match=f"did you mean '{meant}'"):
        IssueType.parse(typed)


def test_a_task_carries_its_ready_contract_and_size(tracker: Tracker) -> None:
    issue = tracker.get(
        make(
            tracker,
            "hash passwords",
            size="m",
            objective=" no clear text ",
            artifact="src/auth.py",
            verify=["pytest -q tests/test_auth.py", "ruff check src"],
        )
    )
    assert issue.size is Size.M
    assert (issue.objective, issue.artifact) == ("no clear text", "src/auth.py")
    assert issue.verify == ("pytest -q tests/test_auth.py", "ruff check src")
    assert issue.to_json()["verify"] == ["pytest -q tests/test_auth.py", "ruff check src"]


def test_verify_is_an_empty_list_when_none_and_update_replaces_or_clears_it(
    tracker: Tracker,
) -> None:
    a = make(tracker, "a")
    assert tracker.get(a).to_json()["verify"] == []
    tracker.update(a, actor="ann", shape=Shape(verify=["make b", "make a"]))
    assert tracker.get(a).verify == ("make b", "make a")  # in order, not sorted
    tracker.update(a, actor="ann", shape=Shape(verify=["make c"]))
    assert tracker.get(a).verify == ("make c",)
    tracker.update(a, actor="ann", shape=Shape(verify=[]))
    assert tracker.get(a).verify == ()
    assert "verify: make c -> none" in tracker.history(a)[0].detail  # type: ignore[operator]


@pytest.mark.parametrize("bad", ["", "  ", "two\nlines"])
def test_a_verify_command_is_one_non_empty_line(tracker: Tracker, bad: str) -> None:
    with pytest.raises(InvalidArgument, match="verify command"):
        make(tracker, "a", verify=[bad])


def test_a_size_is_s_m_or_l(tracker: Tracker) -> None:
    with pytest.raises(InvalidArgument, match="invalid size 'XL'"):
        make(tracker, "a", size="XL")


# --- parent and discovered-from -------------------------------------------------------------


def test_show_lists_the_parent_and_the_children(tracker: Tracker) -> None:
    epic = make(tracker, "epic", EPIC)
    one = make(tracker, "one", parent=epic)
    two = make(tracker, "two", parent=epic[3:])  # any unique spelling of the id
    detail = tracker.show(epic)
    assert [c.id for c in detail.children] == [one, two]
    assert [c["id"] for c in detail.to_json()["children"]] == [one, two]
    assert tracker.show(one).parent == tracker.get(epic)
    assert tracker.get(two).parent == epic


def test_an_issue_found_while_working_on_another_names_it(tracker: Tracker) -> None:
    task = make(tracker, "task")
    found = make(tracker, "found", IssueType.CHORE, discovered_from=task)
    assert tracker.get(found).discovered_from == task
    assert task in ready_ids(tracker.store)  # nothing waits on where it was found


def test_a_bug_is_no_parent_and_a_closed_parent_takes_no_child(tracker: Tracker) -> None:
    bug = make(tracker, "bug", BUG)
    with pytest.raises(InvalidArgument, match="is a bug"):
        make(tracker, "a", parent=bug)
    done = make(tracker, "done", FEATURE)
    tracker.close(done, actor="ann")
    with pytest.raises(InvalidStatusTransition, match=f"reopen it first .*pn reopen {done}"):
        make(tracker, "b", parent=done)


def test_a_parent_cycle_is_refused_and_drawn_as_dep_add_draws_edges(tracker: Tracker) -> None:
    epic = make(tracker, "epic", EPIC)
    feature = make(tracker, "feature", FEATURE, parent=epic)
    with pytest.raises(CycleDetected) as caught:
        tracker.update(epic, actor="ann", shape=Shape(parent=feature))
    # the child is done first: feature -> epic; the new link (epic under feature) first
    assert str(caught.value) == (
        f"{epic} -> {feature} ({feature} waits for its child {epic}) would make a cycle: "
        f"{epic} -> {feature} -> {epic}"
    )
    with pytest.raises(InvalidArgument, match="cannot be its own parent"):
        tracker.update(epic, actor="ann", shape=Shape(parent=epic))


def test_a_task_cannot_wait_for_its_own_epic_but_an_epic_may_wait_for_its_child(
    tracker: Tracker, graph: Graph
) -> None:
    epic = make(tracker, "epic", EPIC)
    task = make(tracker, "task", parent=epic)
    with pytest.raises(CycleDetected, match=f"would make a cycle: {epic} -> {task} -> {epic}"):
        graph.add(task, epic, actor="ann")
    assert graph.add(epic, task, actor="ann").status == "added"  # says it twice, no cycle
    other = make(tracker, "other")
    graph.add(task, other, actor="ann")
    with pytest.raises(CycleDetected):  # under the issue it waits for
        tracker.update(task, actor="ann", shape=Shape(parent=other))
    assert graph.cycles() == []


def test_dep_add_with_a_kind_sets_the_link_and_dep_remove_clears_it(
    tracker: Tracker, graph: Graph
) -> None:
    epic, task = make(tracker, "epic", EPIC), make(tracker, "task")
    change = graph.add(task, epic, actor="ann", kind=LinkKind.PARENT)
    assert change.to_json() == {
        "status": "added",
        "issue_id": task,
        "depends_on_id": epic,
        "kind": "parent",
    }
    assert tracker.get(task).parent == epic
    assert graph.add(task, epic, actor="ann", kind=LinkKind.PARENT).status == "exists"
    assert tracker.history(task)[0].detail == f"parent: none -> {epic}"
    with pytest.raises(NotFound, match="no discovered-from link"):
        graph.remove(task, epic, actor="ann", kind=LinkKind.DISCOVERED_FROM)
    assert graph.remove(task, epic, actor="ann", kind=LinkKind.PARENT).status == "removed"
    assert tracker.get(task).parent is None
    graph.add(task, epic, actor="ann", kind=LinkKind.DISCOVERED_FROM)
    assert tracker.get(task).discovered_from == epic
    assert graph.lists(task).depends_on == ()  # a link, not a dependency


@pytest.mark.parametrize("typed", ["parent", "PARENT", "parent-child", "discovered_from"])
def test_link_kinds_read_as_beads_and_people_write_them(typed: str) -> None:
    assert LinkKind.parse(typed) in (LinkKind.PARENT, LinkKind.DISCOVERED_FROM)


def test_deleting_a_parent_needs_force_and_leaves_the_children(tracker: Tracker) -> None:
    epic = make(tracker, "epic", EPIC)
    task = make(tracker, "task", parent=epic, discovered_from=epic)
    with pytest.raises(Conflict, match="has 1 child"):
        tracker.delete(epic, actor="ann")
    tracker.delete(epic, actor="ann", force=True)
    assert (tracker.get(task).parent, tracker.get(task).discovered_from) == (None, None)


# --- ready: leaves only ---------------------------------------------------------------------


def test_ready_and_claim_next_offer_leaves_only(tracker: Tracker, store: Store) -> None:
    epic = make(tracker, "epic", EPIC)
    feature = make(tracker, "feature", FEATURE, parent=epic)
    task = make(tracker, "task", parent=feature)
    empty = make(tracker, "a feature not yet split", FEATURE)
    assert ready_ids(store) == [task, empty]
    assert claim_next(store, actor="a") == tracker.get(task)
    assert ready_ids(store) == [empty]  # the feature still has a child in progress
    assert claim_next(store, actor="b") == tracker.get(empty)
    assert claim_next(store, actor="c") is None


def test_require_verify_passes_over_issues_without_verify_commands(
    tracker: Tracker, store: Store
) -> None:
    make(tracker, "no contract")
    checked = make(tracker, "checked", verify=["true"])
    assert ready_ids(store, require_verify=True) == [checked]
    assert claim_next(store, actor="a", require_verify=True) == tracker.get(checked)
    assert claim_next(store, actor="b", require_verify=True) is None


def test_explain_says_why_each_issue_is_not_ready(tracker: Tracker, graph: Graph) -> None:
    epic = make(tracker, "epic", EPIC)
    first = make(tracker, "first", parent=epic, verify=["true"])
    second = make(tracker, "second", parent=epic)
    graph.add(second, first, actor="ann")
    bug = make(tracker, "bug", BUG)
    held = make(tracker, "held", verify=["true"])
    tracker.claim(held, actor="bob")
    found = {n.issue.id: n for n in explain(tracker.store, Filters(), require_verify=True)}
    assert {k: [r.code for r in n.reasons] for k, n in found.items()} == {
        epic: ["open_children", "no_verify"],
        second: ["blocked", "no_verify"],
        bug: ["bug"],
        held: ["held"],
    }
    assert found[epic].reasons[0].ids == (first, second)
    assert found[second].line() == (
        f"{second} task 'second': blocked by {first}; no verify commands "
        f"(`pn update {second} --verify`)"
    )
    assert found[held].to_json()["reasons"] == [
        {"code": "held", "ids": [], "detail": "held by bob (in progress)"}
    ]
    assert first not in found  # ready: nothing to explain
    assert [n.issue.id for n in explain(tracker.store, Filters())] == [epic, second, bug, held]


# --- a parent closes with its last child ----------------------------------------------------


def test_a_feature_and_its_epic_close_when_their_last_child_closes(tracker: Tracker) -> None:
    epic = make(tracker, "epic", EPIC)
    feature = make(tracker, "feature", FEATURE, parent=epic)
    one, two = make(tracker, "one", parent=feature), make(tracker, "two", parent=feature)
    done = tracker.close_many([one], actor="ann")
    assert done.also_closed == []
    assert tracker.get(feature).status is Status.OPEN
    done = tracker.close_many([two], actor="ann", reason="done")
    assert [i.id for i in done.also_closed] == [feature, epic]
    assert tracker.get(feature).close_reason == f"last child {two} closed"
    assert tracker.get(epic).close_reason == f"last child {feature} closed"
    assert next((e.event_type, e.actor) for e in tracker.history(epic)) == ("closed", "ann")


def test_a_parent_with_open_children_closes_only_with_force(tracker: Tracker) -> None:
    epic = make(tracker, "epic", EPIC)
    task = make(tracker, "task", parent=epic)
    with pytest.raises(Conflict, match=f"has open children \\({task}\\).*pass --force"):
        tracker.close(epic, actor="ann")
    assert tracker.close_many([epic, task], actor="ann").closed[0].id == epic  # all at once
    other = make(tracker, "other", FEATURE)
    make(tracker, "left open", parent=other)
    assert tracker.close(other, actor="ann", force=True)[0].status is Status.CLOSED


def test_a_feature_that_fixes_a_bug_closes_it_when_it_closes_by_itself(
    tracker: Tracker,
) -> None:
    bug = make(tracker, "bug", BUG)
    feature = tracker.create("fix", issue_type=FEATURE, actor="ann", fixes=bug).id
    task = make(tracker, "part", parent=feature)
    done = tracker.close_many([task], actor="ann")
    assert [i.id for i in done.also_closed] == [feature, bug]


# --- one claim per agent --------------------------------------------------------------------


def test_a_second_claim_is_refused_with_one_line(tracker: Tracker) -> None:
    a, b = make(tracker, "a"), make(tracker, "b")
    tracker.claim(a, actor="ann")
    with pytest.raises(AlreadyClaimed) as caught:
        tracker.claim(b, actor="ann")
    assert str(caught.value) == (
        f"ann already holds an issue in progress ({a}): one claim per agent, plus one spike; "
        f"close or release {a} first (`pn release {a}`)"
    )
    assert tracker.claim(a, actor="ann").assignee == "ann"  # re-claiming your own is fine
    tracker.claim(b, actor="bob")  # another agent's claim is its own


def test_a_spike_may_be_the_second_claim_but_not_a_second_spike(tracker: Tracker) -> None:
    task, spike, other = (
        make(tracker, "task"),
        make(tracker, "s", SPIKE),
        make(tracker, "s2", SPIKE),
    )
    tracker.claim(task, actor="ann")
    tracker.claim(spike, actor="ann")
    with pytest.raises(AlreadyClaimed, match="holds a spike in progress"):
        tracker.claim(other, actor="ann")


def test_claim_next_hands_an_agent_the_task_it_holds(tracker: Tracker, store: Store) -> None:
    make(tracker, "first")
    second = make(tracker, "second")
    tracker.claim(second, actor="ann")  # the host claims it for the agent
    assert claim_next(store, actor="ann") == tracker.get(second)
    assert claim_next(store, actor="ann") == tracker.get(second)
    assert [e.event_type for e in tracker.history(second)][:2] == ["resumed", "resumed"]
    from pensa.claims import claims_since_reset

    assert claims_since_reset(store.conn, second) == ["ann"]  # resuming is no new attempt


def test_claim_next_beside_a_held_spike_takes_a_task_not_a_spike(
    tracker: Tracker, store: Store
) -> None:
    spike = make(tracker, "spike", SPIKE)
    make(tracker, "another spike", SPIKE)
    task = make(tracker, "task")
    tracker.claim(spike, actor="ann")
    assert claim_next(store, actor="ann") == tracker.get(task)


def test_status_counts_as_ready_what_ready_lists(tracker: Tracker, store: Store) -> None:
    from pensa.stats import status

    epic = make(tracker, "epic", EPIC)
    make(tracker, "task", parent=epic)
    make(tracker, "alone", FEATURE)
    assert status(store).ready == len(ready_ids(store)) == 2


# --- blockers pass down, reopening passes up ------------------------------------------------


def test_a_child_waits_with_its_blocked_ancestor(
    tracker: Tracker, graph: Graph, store: Store
) -> None:
    from pensa.stats import status

    first = make(tracker, "first feature", FEATURE)
    early = make(tracker, "early", parent=first)
    second = make(tracker, "second feature", FEATURE)
    part = make(tracker, "part of the second", FEATURE, parent=second)
    late = make(tracker, "late", parent=part)
    graph.add(second, first, actor="ann")  # the second feature waits for the first
    assert ready_ids(store) == [early]
    assert status(store).ready == 1
    assert claim_next(store, actor="a") == tracker.get(early)
    assert claim_next(store, actor="b") is None  # `late` waits with its grandparent
    reasons = {n.issue.id: n.reasons for n in explain(store, Filters())}
    assert [(r.code, r.ids) for r in reasons[late]] == [("parent_blocked", (second, first))]
    tracker.close_many([early], actor="a")  # the first feature closes with its last child
    assert ready_ids(store) == [late]
    assert status(store).ready == 1


def test_reopening_a_child_reopens_the_parent_that_closed_with_it(tracker: Tracker) -> None:
    epic = make(tracker, "epic", EPIC)
    feature = make(tracker, "feature", FEATURE, parent=epic)
    task = make(tracker, "task", parent=feature)
    tracker.close_many([task], actor="ann")
    assert tracker.get(epic).status is Status.CLOSED
    tracker.reopen(task, actor="bob", reason="the check failed")
    assert [tracker.get(i).status for i in (task, feature, epic)] == [Status.OPEN] * 3
    assert tracker.get(epic).closed_at is None

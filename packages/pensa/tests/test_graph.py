"""Dependency edges: cycle refusal with the path, trees that list each issue once."""

from __future__ import annotations

import pytest

from pensa.cycles import find_cycles
from pensa.errors import CycleDetected, InvalidArgument, NotFound
from pensa.graph import Graph
from pensa.models import IssueType
from pensa.tracker import Tracker


def test_find_cycles_rotates_each_cycle_to_its_smallest_id_once() -> None:
    edges = {"c": ["a"], "a": ["b"], "b": ["c"], "x": ["y"], "y": ["x"], "z": []}
    assert find_cycles(edges) == [["a", "b", "c"], ["x", "y"]]
    assert find_cycles({"a": ["b"], "b": []}) == []


def test_a_cycle_is_refused_with_its_path(tracker: Tracker, graph: Graph) -> None:
    a, b, c = (tracker.create(n, issue_type=IssueType.TASK, actor="x").id for n in "abc")
    graph.add(a, b, actor="x")
    graph.add(b, c, actor="x")
    with pytest.raises(CycleDetected) as refused:
        graph.add(c, a, actor="x")
    # drawn as `dep add` and `pn graph` draw edges: from the issue to do first to its waiter
    assert str(refused.value) == (
        f"{a} -> {c} ({c} waits for {a}) would make a cycle: {a} -> {c} -> {b} -> {a}"
    )
    with pytest.raises(InvalidArgument):
        graph.add(a, a, actor="x")
    assert graph.add(a, b, actor="x").status == "exists"


def test_a_diamond_tree_lists_each_issue_once(tracker: Tracker, graph: Graph) -> None:
    top, left, right, bottom = (
        tracker.create(n, issue_type=IssueType.TASK, actor="x").id
        for n in ("top", "left", "right", "bottom")
    )
    for child, parent in ((top, left), (top, right), (left, bottom), (right, bottom)):
        graph.add(child, parent, actor="x")
    down = [(n.issue.id, n.depth) for n in graph.tree(top)]
    assert down == [(left, 1), (bottom, 2), (right, 1)]
    assert [n.issue.id for n in graph.tree(bottom, direction="up")] == [left, top, right]


def test_edges_to_unknown_issues_are_not_found(tracker: Tracker, graph: Graph) -> None:
    a = tracker.create("a", issue_type=IssueType.TASK, actor="x").id
    with pytest.raises(NotFound):
        graph.add(a, "pn-00000000", actor="x")
    with pytest.raises(NotFound, match="does not depend on"):
        graph.remove(a, a, actor="x")

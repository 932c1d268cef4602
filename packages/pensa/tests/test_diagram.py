"""`pn graph`'s pictures: which issues, which arrows, and text Mermaid and DOT can read."""

from __future__ import annotations

import pytest

from pensa.diagram import Format, Picture, dot, mermaid, render
from pensa.graph import Graph
from pensa.models import IssueType
from pensa.tracker import Tracker


@pytest.fixture
def chain(tracker: Tracker, graph: Graph) -> dict[str, str]:
    """first <- second (blocked), a bug fixed by second, and an unrelated issue."""
    bug = tracker.create('crash on <empty> "pw" #1', issue_type=IssueType.BUG, actor="a").id
    first = tracker.create("first", issue_type=IssueType.TASK, actor="a").id
    second = tracker.create("second", issue_type=IssueType.TASK, actor="a", fixes=bug).id
    graph.add(second, first, actor="a")
    done = tracker.create("done", issue_type=IssueType.TASK, actor="a").id
    graph.add(first, done, actor="a")
    tracker.close(done, actor="a")
    alone = tracker.create("alone", issue_type=IssueType.CHORE, actor="a").id
    return {"bug": bug, "first": first, "second": second, "done": done, "alone": alone}


def test_a_picture_of_one_issue_holds_everything_joined_to_it(
    graph: Graph, chain: dict[str, str]
) -> None:
    picture = graph.picture(chain["bug"][3:8])
    assert {i.id for i in picture.issues} == {chain[k] for k in ("bug", "first", "second", "done")}
    assert sorted(picture.deps) == sorted(
        [(chain["second"], chain["first"]), (chain["first"], chain["done"])]
    )
    assert picture.fixes == [(chain["second"], chain["bug"])]
    states = {i.id: picture.state(i) for i in picture.issues}
    assert states[chain["second"]] == "blocked"
    assert states[chain["first"]] == "open"
    assert states[chain["done"]] == "closed"


def test_the_whole_picture_leaves_closed_issues_out_unless_asked(
    graph: Graph, chain: dict[str, str]
) -> None:
    shown = {i.id for i in graph.picture().issues}
    assert shown == {chain[k] for k in ("bug", "first", "second", "alone")}
    assert (chain["first"], chain["done"]) not in graph.picture().deps
    assert chain["done"] in {i.id for i in graph.picture(include_closed=True).issues}


def test_mermaid_draws_work_order_status_colour_and_kind_shape(
    graph: Graph, chain: dict[str, str]
) -> None:
    text = mermaid(graph.picture(chain["first"]))
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    node = {k: "n_" + v.replace("-", "_") for k, v in chain.items()}
    assert f"  {node['first']} --> {node['second']}" in lines  # first, then second
    assert f"  {node['second']} -. fixes .-> {node['bug']}" in lines
    bug_line = next(line for line in lines if line.startswith(f"  {node['bug']}{{{{"))
    assert "crash on #lt;empty#gt; #quot;pw#quot; #35;1" in bug_line
    assert bug_line.endswith(":::open")
    assert f'{chain["first"]} · p2<br/>first"]:::open' in text
    assert f'(["{chain["done"]} · p2<br/>done"]):::closed' in text
    assert any(line.startswith("  classDef blocked fill:") for line in lines)


def test_dot_is_a_digraph_with_escaped_labels(graph: Graph, chain: dict[str, str]) -> None:
    text = dot(graph.picture(chain["first"]))
    assert text.startswith("digraph pensa {")
    assert text.endswith("}")
    assert f'"{chain["first"]}" -> "{chain["second"]}";' in text
    assert f'"{chain["second"]}" -> "{chain["bug"]}" [style=dashed, label="fixes"];' in text
    assert 'crash on <empty> \\"pw\\" #1", shape=hexagon' in text
    assert render(Picture([], [], [], frozenset()), Format.DOT).count("\n") == 3

"""Cycle finding: the fast search and the pruning in front of it find what the plain search
finds, the same cycles in the same order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from pensa.cycles import PRUNE_ROUNDS, cycles_among, drawn, find_cycles


def plain_find_cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The search as pensa first wrote it (before doctor had a time budget): the oracle."""
    white, grey, black = 0, 1, 2
    colour: dict[str, int] = {}
    found: dict[tuple[str, ...], list[str]] = {}
    for root in sorted(edges):
        if colour.get(root, white) != white:
            continue
        stack: list[tuple[str, list[str]]] = [(root, list(edges.get(root, ())))]
        path = [root]
        colour[root] = grey
        while stack:
            node, pending = stack[-1]
            if not pending:
                colour[node] = black
                stack.pop()
                path.pop()
                continue
            nxt = pending.pop(0)
            state = colour.get(nxt, white)
            if state == grey:
                cycle = path[path.index(nxt) :]
                start = cycle.index(min(cycle))
                rotated = cycle[start:] + cycle[:start]
                found.setdefault(tuple(rotated), rotated)
            elif state == white:
                colour[nxt] = grey
                path.append(nxt)
                stack.append((nxt, list(edges.get(nxt, ()))))
    return [found[k] for k in sorted(found)]


def as_edges(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    edges: dict[str, list[str]] = {}
    for child, parent in pairs:
        edges.setdefault(child, []).append(parent)
    return edges


nodes = st.sampled_from([f"n{i}" for i in range(9)])
graphs = st.lists(st.tuples(nodes, nodes), max_size=30)


@settings(max_examples=400, deadline=None)
@given(graphs)
def test_the_fast_search_finds_what_the_plain_one_finds(pairs: list[tuple[str, str]]) -> None:
    expected = plain_find_cycles(as_edges(pairs))
    assert find_cycles(as_edges(pairs)) == expected
    assert cycles_among(pairs) == expected


def test_pruning_stops_after_its_rounds_and_the_search_does_the_rest() -> None:
    """A chain longer than PRUNE_ROUNDS ending in a cycle: pruning alone cannot reach it."""
    chain = [(f"c{i:03d}", f"c{i + 1:03d}") for i in range(PRUNE_ROUNDS * 3)]
    tail = f"c{PRUNE_ROUNDS * 3:03d}"
    loop = [(tail, "z1"), ("z1", tail)]
    leaves = [(f"c{i:03d}", f"leaf{i}") for i in range(0, PRUNE_ROUNDS * 3, 2)]
    pairs = chain + leaves + loop
    assert cycles_among(pairs) == plain_find_cycles(as_edges(pairs)) == [[tail, "z1"]]
    assert cycles_among(chain + leaves) == []


def test_a_self_loop_is_a_cycle_of_one() -> None:
    assert cycles_among([("a", "b"), ("b", "b")]) == [["b"]]


def test_a_cycle_is_drawn_from_the_issue_to_do_first_to_its_waiter() -> None:
    # a depends on b, b on c, c on a: c is done before b, b before a, a before c
    assert drawn(["a", "b", "c"]) == "a -> c -> b -> a"
    assert drawn(["b", "c", "a"]) == "a -> c -> b -> a"
    assert drawn(["x", "y"]) == "x -> y -> x"

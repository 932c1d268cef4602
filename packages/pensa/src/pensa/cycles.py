"""Dependency cycles, found in plain data: no database, no tracker.

Kept apart from `pensa.graph` (which needs the tracker and the views) so that import, sync,
merge and doctor, which only ask "is there a cycle?", load nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

_ON_PATH, _DONE = 1, 2
# How many times `cycles_among` strips the edges into nodes without edges of their own
# before it searches what is left: a bound on its cost when a long chain would take one
# round per link.
PRUNE_ROUNDS = 16


def cycles_among(pairs: Sequence[tuple[str, str]]) -> list[list[str]]:
    """`find_cycles` over (child, parent) edges, each child's edges in the order given.

    A node without edges of its own reaches no cycle, and neither does one whose edges all
    lead to such nodes, so dropping them (a few rounds of set lookups) leaves the search the
    same cycles to find in the same order (a test holds the two answers equal). A graph
    without cycles, the usual case, is gone before the search starts."""
    for _ in range(PRUNE_ROUNDS):
        has_edges = {child for child, _ in pairs}
        kept = [pair for pair in pairs if pair[1] in has_edges]
        if len(kept) == len(pairs):
            break
        pairs = kept
    edges: dict[str, list[str]] = {}
    for child, parent in pairs:
        edges.setdefault(child, []).append(parent)
    return find_cycles(edges)


def find_cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Cycles found by depth-first search, each rotated to start at its smallest id.

    Roots are taken in sorted order and each node's edges in the order given; every edge
    back to a node on the current path closes one cycle. The search resumes each node's own
    iterator rather than copying its edges, and finishes a node without edges at once."""
    state: dict[str, int] = {}
    found: dict[tuple[str, ...], list[str]] = {}
    for root in sorted(edges):
        if root in state:
            continue
        state[root] = _ON_PATH
        path = [root]
        stack: list[Iterator[str]] = [iter(edges[root])]
        while stack:
            for nxt in stack[-1]:
                seen = state.get(nxt)
                if seen is None:
                    if nxt not in edges:  # a leaf: nothing below it, so no cycle through it
                        state[nxt] = _DONE
                        continue
                    state[nxt] = _ON_PATH
                    path.append(nxt)
                    stack.append(iter(edges[nxt]))
                    break
                if seen == _ON_PATH:
                    cycle = path[path.index(nxt) :]
                    start = cycle.index(min(cycle))
                    rotated = cycle[start:] + cycle[:start]
                    found.setdefault(tuple(rotated), rotated)
            else:  # every edge of the node on top is followed: it is done
                state[path.pop()] = _DONE
                stack.pop()
    return [found[k] for k in sorted(found)]


def drawn(cycle: Sequence[str]) -> str:
    """A cycle of `find_cycles` (each id depends on the next) as `pn graph` and `pn dep add`
    draw edges, from the issue to do first to the one waiting for it, from its smallest id
    back to it: `pn-1 -> pn-3 -> pn-2 -> pn-1`."""
    order = list(reversed(cycle))
    start = order.index(min(order))
    order = order[start:] + order[:start]
    return " -> ".join([*order, order[0]])

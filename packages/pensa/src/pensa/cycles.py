"""Dependency cycles, found in plain data: no database, no tracker.

Kept apart from `pensa.graph` (which needs the tracker and the views) so that import, sync,
merge and doctor, which only ask "is there a cycle?", load nothing more (issue 12).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def find_cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Cycles found by depth-first search, each rotated to start at its smallest id."""
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

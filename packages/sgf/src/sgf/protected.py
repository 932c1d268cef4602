"""Which changed paths `git status` shows in the control plane, by ralph's one rule
(`ralph.shared.protected`).

sgf never advises stashing or checking out a change to these without a review: stashing an
agent's uncommitted `.pre-commit-config.yaml` and popping it later, or taking a reviewed-by-
nobody `.sgf/config.toml`, would run the agent's choices on the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ralph.shared.protected import Protected, normalise


def covers(path: str, extra: Sequence[str] = ()) -> bool:
    """Whether `path` (relative to the repository's top, as git quotes it) is protected."""
    return _rules(extra).covers(path.strip('"'))


def in_status(lines: Iterable[str], extra: Sequence[str] = ()) -> list[str]:
    """The protected paths among `git status --porcelain` lines (both sides of a rename)."""
    rules = _rules(extra)
    return [
        path for line in lines for path in line[3:].split(" -> ") if rules.covers(path.strip('"'))
    ]


def _rules(extra: Sequence[str]) -> Protected:
    """The defaults and the project's own paths (one that names no path inside the
    repository adds nothing)."""
    added = []
    for spec in extra:
        try:
            added.append(normalise(spec))
        except ValueError:
            continue
    return Protected.with_extra(added)

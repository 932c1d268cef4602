"""Which changed paths belong to the control plane (ralph's protect.py holds the same rule).

sgf never advises stashing or checking out a change to these without a review: stashing an
agent's uncommitted `.pre-commit-config.yaml` and popping it later, or taking a reviewed-by-
nobody `.sgf/config.toml`, would run the agent's choices on the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

DEFAULTS = (".sgf/", ".pre-commit-config.yaml", ".gitattributes", ".gitmodules", ".claude/")


def covers(path: str, extra: Sequence[str] = ()) -> bool:
    """Whether `path` (relative to the repository's top) is protected; case-insensitive,
    `.gitattributes` in any folder."""
    folded = path.strip('"').casefold()
    if folded.rsplit("/", 1)[-1] == ".gitattributes":
        return True
    for entry in (*DEFAULTS, *extra):
        wanted = entry.casefold().removeprefix("./")
        if wanted.endswith("/"):
            if folded.startswith(wanted) or folded == wanted[:-1]:
                return True
        elif folded == wanted or folded.startswith(wanted + "/"):
            return True
    return False


def in_status(lines: Iterable[str], extra: Sequence[str] = ()) -> list[str]:
    """The protected paths among `git status --porcelain` lines (both sides of a rename)."""
    found: list[str] = []
    for line in lines:
        for path in line[3:].split(" -> "):
            if covers(path, extra):
                found.append(path)
    return found

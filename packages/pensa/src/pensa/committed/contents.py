"""The committed files read once and checked as a whole, for `pn import`.

Each file's records are checked on their own (`committed.records`); then what spans records and
files: ids are unique, `fixes` names a bug, deps join two different existing issues once and
close no cycle, comments are on existing issues with unique ids. Errors name file and line.
"""

from __future__ import annotations

from operator import eq, itemgetter
from typing import TYPE_CHECKING, NamedTuple

from pensa.committed.disk import read_file
from pensa.committed.records import COMMENT_FIELDS, Table, read_table
from pensa.cycles import find_cycles
from pensa.errors import InvalidData
from pensa.models import ISSUE_FIELDS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pensa.project import Project


class Contents(NamedTuple):
    """The committed files as read (the next sync's base) and their checked records."""

    files: dict[str, bytes]
    issues: Table
    deps: Table
    comments: Table
    tombstones: Table

    def counts(self) -> tuple[int, int, int]:
        """How many issues, deps and comments there are."""
        return len(self.issues.rows), len(self.deps.rows), len(self.comments.rows)


def read_contents(project: Project) -> Contents:
    """Read and check every file, in order, each read once: what is checked is what is
    imported and what is recorded as the base."""
    files: dict[str, bytes] = {}

    def table(name: str) -> Table:
        files[name] = read_file(project, name)
        return read_table(files[name], name)

    issues = table("issues.jsonl")
    kinds = _kinds(issues)
    deps = table("deps.jsonl")
    _check_deps(deps, kinds)
    comments = table("comments.jsonl")
    _check_comments(comments, kinds)
    return Contents(files, issues, deps, comments, table("deleted.jsonl"))


_ID, _TYPE, _FIXES = (ISSUE_FIELDS.index(key) for key in ("id", "issue_type", "fixes"))


def _kinds(issues: Table) -> dict[str, str]:
    """Each issue's type by id; ids are unique and `fixes` names a bug."""
    kinds = dict(map(itemgetter(_ID, _TYPE), issues.rows))
    if len(kinds) < len(issues.rows):  # an id twice: name the first repeat
        seen: set[str] = set()
        for number, row in zip(issues.numbers, issues.rows, strict=True):
            if row[_ID] in seen:
                raise InvalidData(f"issues.jsonl:{number}: duplicate id {row[_ID]}")
            seen.add(row[_ID])
    for number, row in zip(issues.numbers, issues.rows, strict=True):
        fixes = row[_FIXES]
        if fixes is not None and kinds.get(fixes) != "bug":
            why = "no such issue" if fixes not in kinds else f"a {kinds[fixes]}, not a bug"
            raise InvalidData(f"issues.jsonl:{number}: fixes {fixes}: {why}")
    return kinds


def _check_deps(deps: Table, kinds: dict[str, str]) -> None:
    """Both ends exist and differ, no edge twice, no cycle."""
    pairs: list[tuple[str, str]] = deps.rows  # (issue_id, depends_on_id)
    children, parents = list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))
    # All edges at once first (C loops); line by line only to name the line that is wrong.
    if not (
        kinds.keys() >= set(children)
        and kinds.keys() >= set(parents)
        and not any(map(eq, children, parents))
        and len(set(pairs)) == len(pairs)
    ):
        _check_deps_by_line(deps.numbers, pairs, kinds)
    edges: dict[str, list[str]] = {}
    for child, parent in pairs:
        edges.setdefault(child, []).append(parent)
    cycles = find_cycles(edges)
    if cycles:
        cycle = cycles[0]
        line = deps.numbers[pairs.index((cycle[0], cycle[1 % len(cycle)]))]
        path = " -> ".join([*cycle, cycle[0]])
        raise InvalidData(f"deps.jsonl:{line}: dependency cycle {path}")


def _check_deps_by_line(
    numbers: Sequence[int], pairs: list[tuple[str, str]], kinds: dict[str, str]
) -> None:
    first_line: dict[tuple[str, str], int] = {}
    for number, pair in zip(numbers, pairs, strict=True):
        where = f"deps.jsonl:{number}"
        for end in pair:
            if end not in kinds:
                raise InvalidData(f"{where}: dangling reference to {end} (no such issue)")
        if pair[0] == pair[1]:
            raise InvalidData(f"{where}: {pair[0]} depends on itself")
        if pair in first_line:
            raise InvalidData(f"{where}: duplicate of line {first_line[pair]}")
        first_line[pair] = number


def _check_comments(comments: Table, kinds: dict[str, str]) -> None:
    """Each comment is on an issue that exists, and no id comes twice."""
    at_id, at_issue = COMMENT_FIELDS.index("id"), COMMENT_FIELDS.index("issue_id")
    seen: set[str] = set()
    for number, row in zip(comments.numbers, comments.rows, strict=True):
        where = f"comments.jsonl:{number}"
        if row[at_issue] not in kinds:
            raise InvalidData(f"{where}: dangling reference to {row[at_issue]} (no such issue)")
        if row[at_id] in seen:
            raise InvalidData(f"{where}: duplicate id {row[at_id]}")
        seen.add(row[at_id])

"""The committed files read once and checked as a whole, for `pn import`.

Each file's records are checked on their own (`committed.records`); then what spans records and
files: ids are unique, `fixes` names a bug, `parent` and `discovered_from` name another issue,
deps join two different existing issues once and close no cycle (nor do they with the
parents), comments have unique ids. Errors name file and line. A comment or edge naming an
issue the files lack is no error: it waits in the files for its issue (`committed.waiting`)
and is not imported.

A kind's records come from its shards and its own file (`committed.disk`). A record twice is
an error, unless one copy is in the kind's own file and one in its shard (an earlier layout's
file merged beside the shards): then the shard's copy wins, as in every sync.
"""

from __future__ import annotations

from itertools import chain
from operator import eq, itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.committed.disk import fingerprints, kind_of, ordered, read_file
from pensa.committed.records import COMMENT_FIELDS, Table, read_table
from pensa.cycles import find_cycles
from pensa.errors import InvalidData
from pensa.models import ISSUE_FIELDS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pensa.committed.records import Record
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


class _Read(NamedTuple):
    """A kind's records from all its files, with where each came from."""

    parts: list[tuple[str, Table]]  # (file name, its records), in reading order
    table: Table  # the records kept; `numbers` index them into the parts, in order

    def where(self, at: int) -> str:
        """`file:line` of the record at position `at` of `table`."""
        index = self.table.numbers[at]
        for name, part in self.parts:
            if index < len(part.rows):
                return f"{name}:{part.numbers[index]}"
            index -= len(part.rows)
        raise IndexError(at)


def _read_kind(files: dict[str, bytes], kind: str, key: Callable[[tuple[Any, ...]], Any]) -> _Read:
    """Every record of `kind`, checked; a record that the kind's own file holds beside its
    shard (an earlier layout's file merged in) is the shard's copy alone."""
    parts = [(n, read_table(files[n], kind, label=n)) for n in files if kind_of(n) == kind]
    records: list[Record] = list(chain.from_iterable(part.records for _, part in parts))
    rows = list(chain.from_iterable(part.rows for _, part in parts))
    own = len(parts[0][1].rows) if parts and parts[0][0] == kind else 0
    if own:
        in_shards = set(map(key, rows[own:]))
        kept = [at for at, row in enumerate(rows) if at >= own or key(row) not in in_shards]
        if len(kept) < len(rows):
            return _Read(
                parts, Table(kept, [records[at] for at in kept], [rows[at] for at in kept])
            )
    return _Read(parts, Table(range(len(rows)), records, rows))


def read_contents(project: Project, names: Iterable[str] | None = None) -> Contents:
    """Read and check every file (`names`: the files on disk, if listed already), each read
    once: what is checked is what is imported and what is recorded as the base."""
    files = read_files(project, names)
    read = read_rest(files, read_issues(files))
    read.check()
    return read.contents


def read_files(project: Project, names: Iterable[str] | None = None) -> dict[str, bytes]:
    """Each committed file's bytes, by name, in reading order."""
    listed = fingerprints(project) if names is None else names
    return {name: read_file(project, name) for name in ordered(listed)}


# `read_contents` in steps, for `pn import`, which writes the issues while it reads the rest
# and makes the checks across records while SQLite builds the indexes.


class Issues(NamedTuple):
    """The issues' records, each checked, ids unique, `fixes` naming a bug; and each type."""

    read: _Read
    kinds: dict[str, str]


class Unchecked(NamedTuple):
    """Every file's records, each checked: the rows to import. What spans records (`check`)
    is still to be checked before they may be committed."""

    contents: Contents
    issues: Issues
    deps: _Read
    comments: _Read

    def check(self) -> None:
        """Links name other existing issues, deps join two issues once and close no cycle,
        comment ids are unique; `InvalidData` names the first line that is wrong."""
        _check_deps(self.deps, _parents(self.issues.read, self.issues.kinds))
        _check_comments(self.comments)


def read_issues(files: dict[str, bytes]) -> Issues:
    read = _read_kind(files, "issues.jsonl", itemgetter(0))
    return Issues(read, _kinds(read))


def read_rest(files: dict[str, bytes], issues: Issues) -> Unchecked:
    """The other kinds' records: those whose issues exist (`_present`)."""
    kinds = issues.kinds
    deps = _present(_read_kind(files, "deps.jsonl", itemgetter(0, 1)), kinds, (0, 1))
    comments = _read_kind(files, "comments.jsonl", itemgetter(COMMENT_FIELDS.index("id")))
    comments = _present(comments, kinds, (COMMENT_FIELDS.index("issue_id"),))
    tombstones = _read_kind(files, "deleted.jsonl", itemgetter(0))
    tables = (issues.read.table, deps.table, comments.table, tombstones.table)
    return Unchecked(Contents(files, *tables), issues, deps, comments)


_ID, _TYPE, _FIXES = (ISSUE_FIELDS.index(key) for key in ("id", "issue_type", "fixes"))
_LINKS = tuple((key, ISSUE_FIELDS.index(key)) for key in ("parent", "discovered_from"))
_PARENT = ISSUE_FIELDS.index("parent")


def _parents(read: _Read, kinds: dict[str, str]) -> list[tuple[str, str, str]]:
    """(parent, child, where the child's line is) of every issue with a parent: the parent
    waits for the child. Each link names another issue that exists."""
    for at, row in enumerate(read.table.rows):
        for key, column in _LINKS:
            other = row[column]
            if other is None:
                continue
            if other not in kinds:
                raise InvalidData(f"{read.where(at)}: {key} {other}: no such issue")
            if other == row[_ID]:
                raise InvalidData(f"{read.where(at)}: {key} {other}: the issue itself")
    return [
        (row[_PARENT], row[_ID], read.where(at))
        for at, row in enumerate(read.table.rows)
        if row[_PARENT] is not None
    ]


def _kinds(read: _Read) -> dict[str, str]:
    """Each issue's type by id; ids are unique and `fixes` names a bug."""
    issues = read.table
    kinds = dict(map(itemgetter(_ID, _TYPE), issues.rows))
    if len(kinds) < len(issues.rows):  # an id twice: name the first repeat
        seen: set[str] = set()
        for at, row in enumerate(issues.rows):
            if row[_ID] in seen:
                raise InvalidData(f"{read.where(at)}: duplicate id {row[_ID]}")
            seen.add(row[_ID])
    for at, row in enumerate(issues.rows):
        fixes = row[_FIXES]
        if fixes is not None and kinds.get(fixes) != "bug":
            why = "no such issue" if fixes not in kinds else f"a {kinds[fixes]}, not a bug"
            raise InvalidData(f"{read.where(at)}: fixes {fixes}: {why}")
    return kinds


def _check_deps(read: _Read, hierarchy: list[tuple[str, str, str]]) -> None:
    """Both ends differ, no edge twice, no cycle (through the `hierarchy` of (parent, child,
    where) too: a parent waits for its children, `pensa.links`)."""
    pairs: list[tuple[str, str]] = read.table.rows  # (issue_id, depends_on_id)
    children, parents = list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))
    # All edges at once first (C loops); line by line only to name the line that is wrong.
    if any(map(eq, children, parents)) or len(set(pairs)) < len(pairs):
        _check_deps_by_line(read, pairs)
    edges: dict[str, list[str]] = {}
    for child, parent in chain(pairs, ((p, c) for p, c, _ in hierarchy)):
        edges.setdefault(child, []).append(parent)
    cycles = find_cycles(edges)
    if cycles:
        cycle = cycles[0]
        on_cycle = [(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))]
        path = " -> ".join([*cycle, cycle[0]])
        known = set(pairs)
        first = next((pair for pair in on_cycle if pair in known), None)
        if first is None:  # parents alone: named by the line of a child on it
            where = {(p, c): w for p, c, w in hierarchy}[on_cycle[0]]
            raise InvalidData(f"{where}: parent cycle {path}")
        raise InvalidData(f"{read.where(pairs.index(first))}: dependency cycle {path}")


def _check_deps_by_line(read: _Read, pairs: list[tuple[str, str]]) -> None:
    first: dict[tuple[str, str], int] = {}
    for at, pair in enumerate(pairs):
        where = read.where(at)
        if pair[0] == pair[1]:
            raise InvalidData(f"{where}: {pair[0]} depends on itself")
        if pair in first:
            line = read.where(first[pair])
            same = line.rsplit(":", 1)[0] == where.rsplit(":", 1)[0]
            raise InvalidData(
                f"{where}: duplicate of line {line.rsplit(':', 1)[1] if same else line}"
            )
        first[pair] = at


def _present(read: _Read, kinds: dict[str, str], columns: tuple[int, ...]) -> _Read:
    """The records whose issues (the ids in `columns`) all exist. The others wait in the
    files for their issue (`committed.waiting`: a cherry-pick brings a comment without the
    commit that made its issue); the database cannot hold them, and the export keeps them."""
    rows = read.table.rows
    if all(kinds.keys() >= set(map(itemgetter(c), rows)) for c in columns):
        return read
    kept = [at for at, row in enumerate(rows) if all(row[c] in kinds for c in columns)]
    table = read.table
    return read._replace(
        table=Table(
            [table.numbers[at] for at in kept],
            [table.records[at] for at in kept],
            [rows[at] for at in kept],
        )
    )


def _check_comments(read: _Read) -> None:
    """No comment id comes twice."""
    at_id = COMMENT_FIELDS.index("id")
    seen: set[str] = set()
    for at, row in enumerate(read.table.rows):
        if row[at_id] in seen:
            raise InvalidData(f"{read.where(at)}: duplicate id {row[at_id]}")
        seen.add(row[at_id])

"""Output at the edge: JSON for agents, aligned plain text when piped or NO_COLOR, rich
tables and colours on a terminal (rich is imported only then).

For people: list tables carry a header, fit the terminal by shortening titles
(ids, loop ids and other single words are never split), and times read "3 min ago"; JSON
keeps the exact stamps and the canonical words.
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import TYPE_CHECKING, Any

from pensa.shared.inert import inert

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime

    from pensa.closing import Closed
    from pensa.graph import TreeNode
    from pensa.models import Comment, Event, Issue, IssueDetail

PRIORITY_STYLE = {"p0": "bold red", "p1": "yellow", "p2": "default", "p3": "dim"}
STATUS_STYLE = {"open": "green", "in_progress": "cyan", "closed": "dim"}
COLUMNS = ("id", "pri", "status", "type", "title", "assignee")
TITLE = COLUMNS.index("title")
GAP = "  "
# The narrowest a title is cut to, however narrow the terminal: a few words still tell
# issues apart, and the line may then wrap rather than lose them.
MIN_TITLE = 12


# How many buffers one writev may take: 1024 on Linux and macOS; POSIX promises 16 (and
# sysconf says -1 when it does not know).
IOV_MAX = max(16, os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 16)


def dumps(data: Any) -> str:
    """Compact JSON, UTF-8 as is: the stdout contract of `--json`."""
    import json

    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def write_all(
    fd: int, pieces: Sequence[bytes], *, writev: Callable[[int, Sequence[bytes]], int] = os.writev
) -> None:
    """Write the pieces to `fd`, in order, in as few system calls as the kernel allows.

    `pn ready --json` may print thousands of issues: one `writev` takes up to IOV_MAX pieces
    as they are, where joining them first built a second copy. A short write (a signal, a
    full pipe) goes on from the byte where it stopped."""
    pending = list(pieces)
    done = 0
    while done < len(pending):
        batch = pending[done : done + IOV_MAX]
        written = writev(fd, batch)
        if written == sum(map(len, batch)):  # the usual case, without a loop in Python
            done += len(batch)
            continue
        while written >= len(pending[done]):
            written -= len(pending[done])
            done += 1
        pending[done] = pending[done][written:]


def ago(stamp: str, now: datetime) -> str:
    """How long before `now` the stamp was, the way people say it: "3 min ago"."""
    from pensa.models import parse_timestamp

    try:
        seconds = int((now - parse_timestamp(stamp)).total_seconds())
    except ValueError:
        return stamp
    if seconds < 60:
        return "just now"
    for size, unit in ((86400 * 30, ""), (86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= size:
            n = seconds // size
            if not unit:
                return stamp[:10]  # over a month: the date says more than "47 days ago"
            plural = "s" if unit == "day" and n > 1 else ""
            return f"{n} {unit}{plural} ago"
    raise AssertionError("unreachable")  # pragma: no cover


def shorten(text: str, width: int) -> str:
    """`text` cut to `width` characters, the cut marked with an ellipsis."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def issue_cells(issue: Issue) -> tuple[str, ...]:
    """An issue's cells in a list table."""
    return (
        issue.id,
        issue.priority.value,
        issue.status.value,
        issue.issue_type.value,
        inert(issue.title),
        f"@{inert(issue.assignee)}" if issue.assignee else "",
    )


def table(
    rows: Sequence[Sequence[str]], *, width: int | None = None, shrink: int | None = None
) -> str:
    """Columns padded to their widest cell; no trailing spaces. With `width`, the column
    `shrink` is shortened (never below MIN_TITLE) so that lines fit."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    if width is not None and shrink is not None:
        widths[shrink] = room(widths, shrink, width)
        rows = [
            [shorten(cell, widths[shrink]) if i == shrink else cell for i, cell in enumerate(r)]
            for r in rows
        ]
    return "\n".join(
        GAP.join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def room(widths: Sequence[int], shrink: int, width: int) -> int:
    """How wide column `shrink` may be for columns of `widths` to fit in `width`."""
    others = sum(w for i, w in enumerate(widths) if i != shrink) + len(GAP) * (len(widths) - 1)
    return min(widths[shrink], max(width - others, MIN_TITLE))


def issue_line(issue: Issue) -> str:
    """One issue on one line."""
    return table([issue_cells(issue)])


def _stamp(stamp: str, now: datetime) -> str:
    return f"{stamp} ({ago(stamp, now)})"


def detail_text(d: IssueDetail, now: datetime) -> str:
    """`show` for people: exact stamps, each with how long ago it was."""
    i = d.issue
    lines = [
        f"{i.id}  [{i.issue_type.value}] {inert(i.title)}",
        f"  status: {i.status.value}  priority: {i.priority.value}  "
        f"assignee: {inert(i.assignee or '-')}",
        f"  created: {_stamp(i.created_at, now)}",
        f"  updated: {_stamp(i.updated_at, now)}",
    ]
    for label, value in (
        ("labels", ", ".join(i.labels)),
        ("spec", i.spec),
        ("fixes", i.fixes),
        ("parent", d.parent and f"{d.parent.id} [{d.parent.status.value}] {d.parent.title}"),
        ("discovered from", i.discovered_from),
        ("size", i.size and i.size.value),
        ("closed", i.closed_at and _stamp(i.closed_at, now)),
        ("reason", i.close_reason),
        ("description", i.description),
        ("objective", i.objective),
        ("artifact", i.artifact),
        ("verify", "\n".join(i.verify)),  # the commands one a line, in order
    ):
        if value:
            many = label in ("description", "verify")
            lines.append(f"  {label}: {_indented(value, '    ') if many else inert(value)}")
    for label, group in (
        ("children", d.children),
        ("depends on", d.deps),
        ("dependents", d.dependents),
        ("fixed by", d.fixed_by),
    ):
        if group:
            lines.append(f"  {label}:")
            lines.extend(f"    {x.id} [{x.status.value}] {inert(x.title)}" for x in group)
    if d.comments:
        lines.append("  comments:")
        lines.extend(
            f"    {c.id} {inert(c.actor)}, {_stamp(c.created_at, now)}: "
            f"{_indented(c.text, '      ')}"
            for c in d.comments
        )
    return "\n".join(lines)


def _indented(text: str, indent: str) -> str:
    """Several lines of untrusted text, inert, each line after the first indented below its
    field: a comment's "\n  status: closed" must not read as a line of pn's own."""
    return inert(text, multiline=True).replace("\n", "\n" + indent)


def closed_text(done: Closed) -> str:
    """`close` for people: what closed, what closed with it, what is ready now."""
    lines = [issue_line(i) for i in done.closed]
    lines += [f"also closed {b.id}: {inert(b.close_reason or '')}" for b in done.also_closed]
    lines += [f"now ready: {issue_line(i)}" for i in done.now_ready]
    return "\n".join(lines)


def comment_line(c: Comment, now: datetime) -> str:
    """One comment on one line."""
    return f"{c.id}  {ago(c.created_at, now)}  {inert(c.actor)}: {inert(c.text)}"


def events_text(events: Sequence[Event], now: datetime) -> str:
    """`history` for people: when, what, who and the detail, aligned."""
    rows = [
        (ago(e.created_at, now), e.event_type, f"by {inert(e.actor or '-')}", inert(e.detail or ""))
        for e in events
    ]
    return table(rows) if rows else ""


def tree_text(nodes: Sequence[TreeNode]) -> str:
    """`dep tree` for people, indented by depth."""
    return "\n".join(
        "  " * n.depth + f"{n.issue.id} [{n.issue.status.value}] {inert(n.issue.title)}"
        for n in nodes
    )


BAR_WIDTH = 24
BAR_STYLE = {"open": "green", "in_progress": "cyan", "blocked": "yellow", "closed": "bright_black"}


def segments(counts: Sequence[int], width: int) -> list[int]:
    """Split `width` cells in proportion to `counts`: every non-zero count gets at least one
    cell, and the sizes always add up to `width` (largest remainders get the spare cells)."""
    total = sum(counts)
    exact = [width * c / total for c in counts]
    sizes = [max(1, int(e)) if c else 0 for e, c in zip(exact, counts, strict=True)]
    while sum(sizes) < width:
        spare = max(
            (e - s, i) for i, (e, s) in enumerate(zip(exact, sizes, strict=True)) if counts[i]
        )
        sizes[spare[1]] += 1
    while sum(sizes) > width:
        sizes[sizes.index(max(sizes))] -= 1
    return sizes


def status_bars(bars: Mapping[str, Mapping[str, int]]) -> str:
    """`status` on a terminal: one bar per type, as rich markup, split into open, in
    progress, blocked and closed, each segment as wide as its share of the type."""
    name_width = max(len(t) for t in bars)
    lines = []
    for issue_type, counts in bars.items():
        if not sum(counts.values()):
            continue
        sizes = segments(list(counts.values()), BAR_WIDTH)
        cells = "".join(
            f"[{BAR_STYLE[state]}]{'█' * size}[/]"
            for state, size in zip(counts, sizes, strict=True)
            if size
        )
        said = " · ".join(f"{c} {s.replace('_', ' ')}" for s, c in counts.items() if c)
        lines.append(f"{issue_type.ljust(name_width)}  {cells}  {said}")
    legend = "  ".join(f"[{BAR_STYLE[s]}]█[/] {s.replace('_', ' ')}" for s in BAR_STYLE)
    return "\n".join([*lines, legend])


class Output:
    """Where a command's result goes: JSON, plain text or rich, chosen once per run.

    `width` is the terminal's, or None when stdout is not a terminal (nothing is cut then:
    a pipe wants every character)."""

    def __init__(self, *, as_json: bool, color: bool, width: int | None = None) -> None:
        self.as_json = as_json
        self.color = color and not as_json
        self.width = width

    def emit(self, data: Any, text: str) -> None:
        """Print `data` as JSON, or `text` for people (never a raw control character)."""
        sys.stdout.write((dumps(data) if self.as_json else inert(text, multiline=True)) + "\n")

    def rich(self, markup: str) -> None:
        """Print rich markup (only on a terminal with colour)."""
        from rich.console import Console

        Console(width=self.width, highlight=False).print(markup)

    def raw(self, pieces: list[bytes]) -> None:
        """Print JSON already rendered by SQLite, in pieces of UTF-8, as is.

        Under a UTF-8 stdout, which would encode the decoded text back into the same bytes,
        the pieces go straight to its file descriptor; any other stdout gets text."""
        stream = sys.stdout
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
            fd = -1
        if fd < 0 or codecs.lookup(stream.encoding or "ascii").name != "utf-8":
            stream.write(b"".join(pieces).decode())
            stream.write("\n")
            return
        stream.flush()  # whatever was written as text comes first
        write_all(fd, [*pieces, b"\n"])

    def issue(self, issue: Issue | None, *, empty: str = "(nothing)") -> None:
        """Print one issue (or JSON null / the `empty` text when there is none)."""
        if self.as_json:
            self.emit(None if issue is None else issue.to_json(), "")
        elif issue is None:
            self.emit(None, empty)
        elif self.color:
            self._rich_issues([issue], header=False)
        else:
            self.emit(None, table([issue_cells(issue)], width=self.width, shrink=TITLE))

    def issues(
        self, issues: Sequence[Issue], *, extra: tuple[str, Mapping[str, str]] | None = None
    ) -> None:
        """Print a list of issues under a header; `extra` adds a last column: its name and
        each issue's cell by id."""
        if self.as_json:
            self.emit([i.to_json() for i in issues], "")
        elif not issues:
            self.emit(None, "(no issues)")
        elif self.color:
            self._rich_issues(issues, header=True, extra=extra)
        else:
            header = (*COLUMNS, extra[0]) if extra else COLUMNS
            rows = [
                (*issue_cells(i), extra[1].get(i.id, "")) if extra else issue_cells(i)
                for i in issues
            ]
            self.emit(None, table([header, *rows], width=self.width, shrink=TITLE))

    def _rich_issues(
        self,
        issues: Sequence[Issue],
        *,
        header: bool,
        extra: tuple[str, Mapping[str, str]] | None = None,
    ) -> None:
        from rich.console import Console
        from rich.table import Table

        console = Console(width=self.width)
        names = (*COLUMNS, *(extra[:1] if extra else ()))
        plain = [issue_cells(i) for i in issues]
        widths = [max(len(names[c]), *(len(r[c]) for r in plain)) for c in range(len(COLUMNS))]
        if extra:
            widths.append(max(len(names[-1]), *(len(extra[1].get(i.id, "")) for i in issues)))
        grid = Table(box=None, show_header=header, header_style="bold", pad_edge=False)
        for name in names:
            if name == "title":
                # the one column that gives way: cut with an ellipsis to the room the others
                # leave (rich would otherwise squeeze every column, ids included)
                grid.add_column(
                    name,
                    overflow="ellipsis",
                    no_wrap=True,
                    max_width=room(widths, TITLE, console.width),
                )
            elif name in COLUMNS:
                grid.add_column(name, no_wrap=True)  # ids and loop ids are never split
            else:
                grid.add_column(name, overflow="fold")  # wraps between ids, at ", "
        for i in issues:
            cells = list(issue_cells(i))
            cells[1] = f"[{PRIORITY_STYLE[cells[1]]}]{cells[1]}[/]"
            cells[2] = f"[{STATUS_STYLE[cells[2]]}]{cells[2]}[/]"
            more = [_escape(extra[1].get(i.id, ""))] if extra else []
            grid.add_row(*cells[:4], _escape(cells[4]), _escape(cells[5]), *more)
        console.print(grid)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)

"""Output at the edge: JSON for agents, aligned plain text when piped or NO_COLOR, rich
tables and colours on a terminal (rich is imported only then)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from pensa.inert import inert

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pensa.graph import TreeNode
    from pensa.models import Comment, Event, Issue, IssueDetail

PRIORITY_STYLE = {"p0": "bold red", "p1": "yellow", "p2": "default", "p3": "dim"}
STATUS_STYLE = {"open": "green", "in_progress": "cyan", "closed": "dim"}
COLUMNS = ("id", "pri", "status", "type", "title", "assignee")


def dumps(data: Any) -> str:
    """Compact JSON, UTF-8 as is: the stdout contract of `--json`."""
    import json  # lists print JSON built by SQLite and never need the module

    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


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


def table(rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; no trailing spaces."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def issue_line(issue: Issue) -> str:
    """One issue on one line."""
    return table([issue_cells(issue)])


def detail_text(d: IssueDetail) -> str:
    """`show` for people."""
    i = d.issue
    lines = [
        f"{i.id}  [{i.issue_type.value}] {inert(i.title)}",
        f"  status: {i.status.value}  priority: {i.priority.value}  "
        f"assignee: {inert(i.assignee or '-')}",
        f"  created: {i.created_at}  updated: {i.updated_at}",
    ]
    for label, value in (
        ("spec", i.spec),
        ("fixes", i.fixes),
        ("closed", i.closed_at),
        ("reason", i.close_reason),
        ("description", i.description),
    ):
        if value:
            lines.append(f"  {label}: {inert(value, multiline=label == 'description')}")
    for label, group in (("depends on", d.deps), ("dependents", d.dependents)):
        if group:
            lines.append(f"  {label}:")
            lines.extend(f"    {x.id} [{x.status.value}] {inert(x.title)}" for x in group)
    if d.comments:
        lines.append("  comments:")
        lines.extend(
            f"    [{c.created_at}] {inert(c.actor)}: {inert(c.text, multiline=True)}"
            for c in d.comments
        )
    return "\n".join(lines)


def comment_line(c: Comment) -> str:
    """One comment on one line."""
    return f"{c.id}  [{c.created_at}] {inert(c.actor)}: {inert(c.text)}"


def event_line(e: Event) -> str:
    """One audit-log entry on one line."""
    return f"{e.created_at}  {e.event_type} by {inert(e.actor or '-')}" + (
        f": {inert(e.detail)}" if e.detail else ""
    )


def tree_text(nodes: Sequence[TreeNode]) -> str:
    """`dep tree` for people, indented by depth."""
    return "\n".join(
        "  " * n.depth + f"{n.issue.id} [{n.issue.status.value}] {inert(n.issue.title)}"
        for n in nodes
    )


class Output:
    """Where a command's result goes: JSON, plain text or rich, chosen once per run."""

    def __init__(self, *, as_json: bool, color: bool) -> None:
        self.as_json = as_json
        self.color = color and not as_json

    def emit(self, data: Any, text: str) -> None:
        """Print `data` as JSON, or `text` for people (never a raw control character)."""
        sys.stdout.write((dumps(data) if self.as_json else inert(text, multiline=True)) + "\n")

    def raw(self, json_text: str) -> None:
        """Print JSON text already rendered (by SQLite) as is."""
        sys.stdout.write(json_text + "\n")

    def issue(self, issue: Issue | None, *, empty: str = "(nothing)") -> None:
        """Print one issue (or JSON null / the `empty` text when there is none)."""
        if self.as_json:
            self.emit(None if issue is None else issue.to_json(), "")
        elif issue is None:
            self.emit(None, empty)
        elif self.color:
            self._rich_issues([issue], header=False)
        else:
            self.emit(None, issue_line(issue))

    def issues(self, issues: Sequence[Issue]) -> None:
        """Print a list of issues."""
        if self.as_json:
            self.emit([i.to_json() for i in issues], "")
        elif not issues:
            self.emit(None, "(no issues)")
        elif self.color:
            self._rich_issues(issues, header=True)
        else:
            self.emit(None, table([issue_cells(i) for i in issues]))

    def _rich_issues(self, issues: Sequence[Issue], *, header: bool) -> None:
        from rich.console import Console
        from rich.table import Table

        grid = Table(box=None, show_header=header, header_style="bold", pad_edge=False)
        for name in COLUMNS:
            grid.add_column(name, overflow="fold")
        for i in issues:
            cells = list(issue_cells(i))
            cells[1] = f"[{PRIORITY_STYLE[cells[1]]}]{cells[1]}[/]"
            cells[2] = f"[{STATUS_STYLE[cells[2]]}]{cells[2]}[/]"
            grid.add_row(*cells[:4], _escape(cells[4]), _escape(cells[5]))
        Console().print(grid)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)

"""`sgf status --watch`: the loop table of `sgf top`, for terminals where a TUI is unwelcome.

On a terminal it is a rich Live table redrawn in place; piped, it prints the table as plain
text each time it changes (never the same table twice in a row), so `| tee` or a log file
gets a readable history rather than a flood. Cells are rich Text objects made inert: titles,
reasons and paths are never read as markup (issue 12) nor allowed to move the cursor (issue 9).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from sgf.render import inert
from sgf.top import columns
from sgf.top.collect import Snapshot

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from sgf.top.app import Source

STYLE = {"running": "green", "waiting": "yellow", "stopped": "dim"}


def pensa_line(snap: Snapshot) -> str:
    """One line per project: what pensa has ready, in progress, blocked, closed today."""
    lines = []
    for project, board in snap.boards.items():
        name = columns.project_name(project)
        if board.error:
            lines.append(f"pensa ({name}): unavailable ({board.error})")
            continue
        lines.append(
            f"pensa ({name}): {board.ready} ready · {len(board.working)} in progress · "
            f"{board.blocked} blocked · {board.needs_human} needing a human · "
            f"{len(board.closed_today)} closed today"
        )
    return "\n".join(lines)


def table(snap: Snapshot) -> Table:
    """The loop table, every cell a Text (never markup)."""
    from rich.table import Table
    from rich.text import Text

    out = Table(title=f"Loops at {snap.taken.astimezone():%H:%M:%S}", title_justify="left")
    for name in columns.COLUMNS:
        out.add_column(name, no_wrap=name != "task")
    for row in snap.rows:
        cells = [Text(inert(c)) for c in columns.cells(row, snap.taken)]
        cells[columns.COLUMNS.index("state")].stylize(STYLE[row.state.value])
        out.add_row(*cells)
    if not snap.rows:
        out.add_row(Text("no loops", style="dim"), *[""] * (len(columns.COLUMNS) - 1))
    return out


def plain(snap: Snapshot) -> str:
    """The table as aligned plain text (the full cells: nothing is cut when piped)."""
    rows = [list(columns.COLUMNS)] + [
        [inert(c) for c in columns.cells(r, snap.taken, wide=True)] for r in snap.rows
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns.COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if not snap.rows:
        lines.append("no loops")
    return "\n".join(lines)


def run(
    source: Source,
    *,
    console: Console,
    interval: float = 1.0,
    stop: threading.Event | None = None,
    stamp: Callable[[Snapshot], str] = lambda s: f"{s.taken.astimezone():%Y-%m-%d %H:%M:%S}",
) -> None:
    """Show the table until `stop` is set (or Ctrl+C): live on a terminal, plain otherwise."""
    stop = stop or threading.Event()
    interval = max(1.0, interval)  # as cheap as `sgf top`: at most once a second
    if not console.is_terminal:
        last = None
        while True:
            snap = source.snapshot()
            body = plain(snap) + ("\n" + pensa_line(snap) if snap.boards else "")
            if body != last:
                console.file.write(f"# {stamp(snap)}\n{body}\n\n")
                console.file.flush()
                last = body
            if stop.wait(interval):
                return
    from rich.console import Group
    from rich.live import Live
    from rich.text import Text

    def view() -> Group:
        snap = source.snapshot()
        return Group(table(snap), Text(inert(pensa_line(snap), multiline=True), style="dim"))

    with Live(view(), console=console, auto_refresh=False, transient=False) as live:
        while not stop.wait(interval):
            live.update(view(), refresh=True)

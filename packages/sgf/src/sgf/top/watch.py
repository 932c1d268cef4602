"""`sgf status --watch`: the loop table of `sgf top`, for terminals where a TUI is unwelcome.

On a terminal it is a rich Live table redrawn in place; piped, it prints one header and then a
plain row for each loop whose row changed (see PlainLog), so `| tee` or a log file gets a
readable history rather than a flood. Cells are rich Text objects made inert: titles,
reasons and paths are never read as markup nor allowed to move the cursor.
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


PLAIN = ("at", "loop id", *columns.COLUMNS)
# Cells that change every second on their own: a row is printed again only when one of the
# others changed (a piped watch printed the whole table every second).
TICKING = frozenset({"time", "active"})


def plain_rows(snap: Snapshot, stamp: str) -> list[tuple[tuple[str, str], tuple[str, ...]]]:
    """Each row's key and its whole cells in PLAIN order (nothing is cut when piped)."""
    return [
        (
            r.key,
            (stamp, inert(r.loop_id), *(inert(c) for c in columns.cells(r, snap.taken, wide=True))),
        )
        for r in snap.rows
    ]


class PlainLog:
    """A piped watch: one header, then a row whenever a loop's row changed, aligned on the
    widths seen so far (a later, wider cell pushes the rest of its line, never cuts)."""

    def __init__(self) -> None:
        self.widths = [len(h) for h in PLAIN]
        self.shown: dict[tuple[str, str], tuple[str, ...]] = {}
        self.pensa = ""
        self.header = False

    def _line(self, cells: tuple[str, ...]) -> str:
        self.widths = [max(w, len(c)) for w, c in zip(self.widths, cells, strict=True)]
        return "  ".join(c.ljust(w) for c, w in zip(cells, self.widths, strict=True)).rstrip()

    def lines(self, snap: Snapshot, stamp: str) -> list[str]:
        """What to print for this snapshot: nothing when nothing changed."""
        out = []
        if not self.header:
            out.append(self._line(PLAIN))
            self.header = True
        for key, cells in plain_rows(snap, stamp):
            steady = tuple(c for h, c in zip(PLAIN[1:], cells[1:], strict=True) if h not in TICKING)
            if self.shown.get(key) != steady:
                self.shown[key] = steady
                out.append(self._line(cells))
        if snap.boards and (line := pensa_line(snap)) != self.pensa:
            self.pensa = line
            out.extend(f"# {x}" for x in inert(line, multiline=True).splitlines())
        return out


def run(
    source: Source,
    *,
    console: Console,
    interval: float = 1.0,
    stop: threading.Event | None = None,
    stamp: Callable[[Snapshot], str] = lambda s: f"{s.taken.astimezone():%H:%M:%S}",
) -> None:
    """Show the table until `stop` is set (or Ctrl+C): live on a terminal, plain otherwise."""
    stop = stop or threading.Event()
    interval = max(1.0, interval)  # as cheap as `sgf top`: at most once a second
    if not console.is_terminal:
        log = PlainLog()
        while True:
            snap = source.snapshot()
            if lines := log.lines(snap, stamp(snap)):
                console.file.write("\n".join(lines) + "\n")
                console.file.flush()
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

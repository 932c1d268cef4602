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

from pensa.shared.inert import inert

from sgf import tablefit
from sgf.top import columns, layout
from sgf.top.collect import Snapshot

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

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


# What a narrow terminal does without, first to last: the loop id and the figures stay.
OPTIONAL = ("trend", "project", "active", "tokens", "spec", "time", "task")


def table(snap: Snapshot, width: int) -> Table | Text:
    """The loop table of `sgf top` in `width` characters, fitted as it is (`sgf.tablefit`):
    every loop id whole; every cell a Text (never markup). Narrower than the table can get,
    its aligned lines, which the terminal wraps."""
    from rich.text import Text

    wide = [tuple(map(inert, layout.cells(row, snap.taken))) for row in snap.rows]
    title = f"Loops at {snap.taken.astimezone():%H:%M:%S}"
    sizes = tablefit.fit(layout.NAMES, wide, width, shrink=layout.SHRINK, optional=OPTIONAL)
    if sizes is None:
        return Text("\n".join([title, *tablefit.aligned(layout.NAMES, wide)]))
    shown = sizes.heads(layout.NAMES)
    rows = []
    for row, cells in zip(snap.rows, wide, strict=True):
        texts = [Text(c) for c in sizes.row(cells)]
        texts[shown.index("state")].stylize(STYLE[row.state.value])
        rows.append(texts)
    if not snap.rows:
        rows.append([Text("no loops", style="dim"), *[Text("")] * (len(shown) - 1)])
    return tablefit.table(title, layout.NAMES, rows, sizes)


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
        shown = table(snap, console.width)
        return Group(shown, Text(inert(pensa_line(snap), multiline=True), style="dim"))

    with Live(view(), console=console, auto_refresh=False, transient=False) as live:
        while not stop.wait(interval):
            live.update(view(), refresh=True)

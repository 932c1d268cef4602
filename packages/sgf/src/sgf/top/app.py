"""The Textual view of `sgf top`: loop table, log pane, pensa pane, cost sparkline.

Only `sgf top` imports this module (textual is heavy; `sgf status` must stay quick). All the
data comes from a Source (collect.Collector in real use), read in a worker thread at most once
per `interval`; the view never writes to a project except through the stop and restart
actions, each behind a confirmation. Every piece of untrusted text (titles, agent output,
paths) reaches the screen as a rich Text, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from pensa.shared.inert import inert
from rich.text import Text  # noqa: TID253 - this module is imported by `sgf top` alone
from textual import events, on, work  # noqa: TID253
from textual.app import App, ComposeResult  # noqa: TID253
from textual.binding import Binding, BindingType  # noqa: TID253
from textual.containers import Horizontal, Vertical  # noqa: TID253
from textual.screen import ModalScreen  # noqa: TID253
from textual.widgets import DataTable, Footer, Header, Input, Sparkline, Static  # noqa: TID253

from sgf.errors import SgfError
from sgf.loop.loopstate import LoopRow
from sgf.top import columns, control, layout
from sgf.top.collect import Snapshot
from sgf.top.logview import LogFollower, style_of
from sgf.top.widgets import (
    STATE_STYLE,
    Confirm,
    Help,
    LogPane,
    LoopTable,
    board_text,
    details_text,
    plain,
)

if TYPE_CHECKING:
    import subprocess


class Source(Protocol):
    """Where snapshots come from."""

    def snapshot(self) -> Snapshot:
        """Everything to show, now."""
        ...


class TopApp(App[None]):
    """`sgf top`."""

    TITLE = "sgf top"
    CSS = """
    #loops { height: 1fr; min-height: 6; }
    #bottom { height: 2fr; }
    #log { width: 2fr; border: round $primary; }
    #log:focus { border: round $accent; }
    #side { width: 1fr; min-width: 36; }
    #details { height: auto; border: round $secondary; padding: 0 1; }
    #pensa { height: 1fr; border: round $secondary; padding: 0 1; }
    #spark { height: 3; border: round $secondary; }
    #filter { dock: bottom; display: none; }
    #filter.shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("s", "stop", "stop"),
        Binding("r", "restart", "restart"),
        Binding("enter", "focus_log", "log"),
    ]
    MODAL_FREE: ClassVar[set[str]] = {"help", "filter", "stop", "restart", "focus_log"}

    def __init__(
        self,
        source: Source,
        *,
        scope: str,
        interval: float = 1.0,
        sgf: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.scope = scope
        self.interval = max(1.0, interval)  # cheap by design: never more than once a second
        self.sgf = list(sgf)
        self.env = dict(env or {})
        self.now = now
        self.snap: Snapshot | None = None
        self.rows: list[LoopRow] = []
        self.filter_text = ""
        self.selected: tuple[str, str] | None = None
        self.follower: LogFollower | None = None
        self.restarts: list[tuple[subprocess.Popen[bytes], Path, str]] = []
        self._busy = False
        self._shown: dict[str, list[Text]] = {}  # cells on screen, by row key
        self._widths: list[int] = []  # the table's column widths (layout.py)
        self._panes: tuple[object, ...] = ()  # what the side panes show

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The dashboard's keys are off while a question or the help is open."""
        return not (action in self.MODAL_FREE and isinstance(self.screen, ModalScreen))

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="≋")
        # its columns come with the first snapshot, sized to it and to the terminal
        yield LoopTable(id="loops", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="bottom"):
            yield LogPane(id="log", max_lines=2000, wrap=False, markup=False, highlight=False)
            with Vertical(id="side"):
                yield Static(details_text(None), id="details")
                yield Static(board_text(None, None), id="pensa")
                yield Sparkline([], id="spark")
        yield Input(placeholder="filter loops (esc: clear, enter: done)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.scope
        self.query_one("#log", LogPane).border_title = "log"
        self.query_one("#details", Static).border_title = "loop"
        self.query_one("#pensa", Static).border_title = "pensa"
        self.query_one("#spark", Sparkline).border_title = "cost per iteration"
        self.query_one(LoopTable).focus()
        self.tick()
        self.set_interval(self.interval, self.tick)

    # -- refresh ---------------------------------------------------------------------------

    def tick(self) -> None:
        """Start a refresh unless one is still running; follow the log; watch restarts."""
        if not self._busy:
            self._busy = True
            self.collect()
        self.follow_log()
        self.check_restarts()

    @work(thread=True, exit_on_error=False, group="collect")
    def collect(self) -> None:
        """Read a snapshot off the UI thread (pn runs and file reads), then show it."""
        try:
            snap = self.source.snapshot()
        except (OSError, SgfError) as e:
            self.call_from_thread(self.notify, inert(str(e)), severity="error", markup=False)
            snap = None
        finally:
            self._busy = False
        if snap is not None:
            self.call_from_thread(self.show, snap)

    def show(self, snap: Snapshot) -> None:
        """Put a snapshot on screen, keeping the selected loop selected."""
        self.snap = snap
        needle = self.filter_text.lower()
        wide = {_row_key(r): layout.cells(r, snap.taken) for r in snap.rows}
        self.rows = [
            r for r in snap.rows if not needle or needle in " ".join(wide[_row_key(r)]).lower()
        ]
        table = self.query_one(LoopTable)
        keys = [_row_key(r) for r in self.rows]
        # the scrollbar may take two columns of the table's width
        room = (table.size.width or self.size.width) - 2
        sizes = layout.widths([wide[key] for key in keys], room)
        resized = sizes != self._widths
        same = keys == [str(k.value) for k in table.rows] and not resized
        if not same:
            table.clear(columns=resized)
            if resized:
                for name, size in zip(layout.NAMES, sizes, strict=True):
                    table.add_column(name, key=name, width=size)
                self._widths = sizes
            self._shown = {}
        for row in self.rows:
            key = _row_key(row)
            styled = self._cells(row, layout.fitted(wide[key], sizes))
            if not same:
                table.add_row(*styled, key=key)
            else:  # only what changed: a quiet table costs nothing to redraw
                old = self._shown.get(key, [])
                for i, (name, cell) in enumerate(zip(layout.NAMES, styled, strict=True)):
                    if i >= len(old) or old[i] != cell:
                        table.update_cell(key, name, cell)
            self._shown[key] = styled
        if not same and self.selected is not None and _join(self.selected) in keys:
            table.move_cursor(row=keys.index(_join(self.selected)))
        running = sum(r.live for r in snap.rows)
        projects = len(snap.projects)
        self.sub_title = (
            f"{self.scope} · {projects} project{'s' * (projects != 1)} · {running} running"
        )
        self.select(self.current_row())

    def _cells(self, row: LoopRow, fitted: list[str]) -> list[Text]:
        cells = [plain(c) for c in fitted]
        cells[layout.NAMES.index("state")].stylize(STATE_STYLE[row.state])
        cells[layout.NAMES.index("trend")].stylize("cyan")
        return cells

    def on_resize(self, event: events.Resize) -> None:
        """Fit the table to the terminal's new width."""
        if self.snap is not None:
            self.show(self.snap)

    def current_row(self) -> LoopRow | None:
        """The loop under the table's cursor."""
        index = self.query_one(LoopTable).cursor_row
        return self.rows[index] if 0 <= index < len(self.rows) else None

    def select(self, row: LoopRow | None) -> None:
        """Show the panes of `row`'s loop (its log from near the end when it changed)."""
        key = row.key if row else None
        log = self.query_one("#log", LogPane)
        if key != self.selected:
            self.selected = key
            log.clear()
            self.follower = LogFollower(row.log) if row and row.log else None
            log.border_title = Text("log · ") + plain(row.loop_id) if row else "log"
            self.follow_log()
        data = list(row.costs) if row and row.costs else [0.0]
        spent = f" · {columns.cost(row)} over {len(row.costs)}" if row else ""
        project = row.project if row else None
        if project is None and self.snap and self.snap.projects:
            project = self.snap.projects[0]  # no loop yet: the current project's picture
        board = self.snap.boards.get(project) if self.snap and project else None
        panes = (data, spent, details_text(row), board_text(project, board))
        if panes == self._panes:  # unchanged: no redraw (cheap when nothing happens)
            return
        self._panes = panes
        spark = self.query_one("#spark", Sparkline)
        spark.data = data
        spark.border_title = f"cost per iteration{spent}"
        self.query_one("#details", Static).update(panes[2])
        self.query_one("#pensa", Static).update(panes[3])

    def follow_log(self) -> None:
        """Append the selected loop's new log lines."""
        if self.follower is None:
            return
        lines = self.follower.read()
        if lines:
            log = self.query_one("#log", LogPane)
            for line in lines:
                log.write(plain(line, style_of(line) or ""))

    def check_restarts(self) -> None:
        """Say when a restarted sgf failed (a dirty tree, a missing spec…), with its words."""
        for entry in list(self.restarts):
            child, output, loop_id = entry
            code = child.poll()
            if code is None:
                continue
            self.restarts.remove(entry)
            if code not in (0, 2, 130):
                try:
                    words = output.read_text(errors="replace").strip().splitlines()[-1:]
                except OSError:
                    words = []
                message = f"restart of {loop_id} failed (exit {code}): {' '.join(words)}"
                self.notify(inert(message), severity="error", markup=False, timeout=15)

    # -- events and actions ----------------------------------------------------------------

    @on(DataTable.RowHighlighted)
    def _highlighted(self) -> None:
        self.select(self.current_row())

    @on(DataTable.RowSelected)
    def _selected(self) -> None:
        self.action_focus_log()

    def action_focus_log(self) -> None:
        """Focus the log pane."""
        self.query_one("#log", LogPane).focus()

    def action_focus_table(self) -> None:
        """Back to the loop table."""
        self.query_one(LoopTable).focus()

    def action_help(self) -> None:
        """Show the keys."""
        self.push_screen(Help())

    def action_filter(self) -> None:
        """Open the filter line."""
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        if self.snap is not None:
            self.show(self.snap)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.value:
            box.remove_class("shown")
        self.action_focus_table()

    def on_key(self, event: events.Key) -> None:
        """Esc in the filter line clears it."""
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.value = ""
            box.remove_class("shown")
            self.action_focus_table()

    def action_stop(self) -> None:
        """Stop the selected loop (SIGINT, the Ctrl+C path), after a confirmation."""
        row = self.current_row()
        if row is None or not row.live:
            self.notify("select a running loop to stop", severity="warning", markup=False)
            return
        question = Text("Stop ") + plain(row.loop_id, "bold") + Text(" in ")
        question += plain(columns.project_name(row.project), "bold")
        question += Text(
            "?\nralph stops the agent, releases the loop's claims and records why "
            "(the same as Ctrl+C in its terminal)."
        )

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                control.stop(row)
            except SgfError as e:
                self.notify(inert(str(e)), severity="error", markup=False)
                return
            self.notify(inert(f"asked {row.loop_id} to stop (SIGINT)"), markup=False)

        self.push_screen(Confirm(question), answered)

    def action_restart(self) -> None:
        """Restart the selected stopped loop with its original arguments, after a
        confirmation."""
        row = self.current_row()
        if row is None:
            return
        try:
            request = control.restart_request(row)
        except SgfError as e:
            self.notify(inert(str(e)), severity="warning", markup=False)
            return
        from sgf.loop import relaunch

        command = " ".join(["sgf", *relaunch.sgf_args(request)])
        question = Text("Restart ") + plain(row.loop_id, "bold") + Text(" as\n  ")
        question += plain(command, "bold") + Text("\nin ") + plain(row.project) + Text("?")

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                child, output = control.restart(row, sgf=self.sgf, env=self.env)
            except SgfError as e:
                self.notify(inert(str(e)), severity="error", markup=False)
                return
            self.restarts.append((child, output, row.loop_id))
            self.notify(inert(f"restarted {row.loop_id}: {command}"), markup=False)

        self.push_screen(Confirm(question), answered)


def _join(key: tuple[str, str]) -> str:
    return "\0".join(key)


def _row_key(row: LoopRow) -> str:
    return _join(row.key)

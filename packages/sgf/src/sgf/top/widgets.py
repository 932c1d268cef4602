"""`sgf top`'s widgets and the text of its panes: the loop table, the log pane, the
questions and the help, the selected loop's details and the pensa pane.

Every piece of untrusted text (titles, agent output, paths) becomes a rich Text through
`plain`, never markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pensa.shared.inert import inert
from rich.text import Text  # noqa: TID253 - imported by `sgf top` alone
from textual.app import ComposeResult  # noqa: TID253
from textual.binding import Binding, BindingType  # noqa: TID253
from textual.screen import ModalScreen  # noqa: TID253
from textual.widgets import DataTable, RichLog, Static  # noqa: TID253

from sgf.loop.loopstate import LoopRow, State
from sgf.top import columns
from sgf.top.board import Board

KEYS = (
    ("j / k", "move down / up (in the log pane: scroll)"),
    ("enter", "focus the selected loop's log pane (esc: back to the table)"),
    ("/", "filter loops by any text in their row (esc: clear)"),
    ("s", "stop the selected loop gracefully (SIGINT, as Ctrl+C), after a confirmation"),
    ("r", "restart a stopped loop with its original arguments, after a confirmation"),
    ("?", "this help"),
    ("q", "quit (loops keep running)"),
)
STATE_STYLE = {State.RUNNING: "green", State.WAITING: "yellow", State.STOPPED: "dim"}


def plain(value: object, style: str = "") -> Text:
    """Untrusted text for the screen: control characters escaped, never read as markup."""
    return Text(inert(value), style=style)


class LoopTable(DataTable[Text]):
    """The loops, one per row; j/k move like the arrow keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "down", show=False),
        Binding("k", "cursor_up", "up", show=False),
    ]


class LogPane(RichLog):
    """The selected loop's one-liners; j/k scroll, esc goes back to the table."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll_down", "down", show=False),
        Binding("k", "scroll_up", "up", show=False),
        Binding("g", "scroll_home", "top", show=False),
        Binding("G", "scroll_end", "end", show=False),
        Binding("escape", "app.focus_table", "table"),
    ]


class Confirm(ModalScreen[bool]):
    """A yes/no question; nothing destructive happens without a yes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no"),
    ]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Static { width: 72; height: auto; border: thick $warning; padding: 1 2;
                       background: $surface; }
    """

    def __init__(self, question: Text) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Static(self.question + Text("\n\n[y] yes   [n] no", style="bold"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class Help(ModalScreen[None]):
    """The keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,enter", "app.pop_screen", "close"),
    ]
    DEFAULT_CSS = """
    Help { align: center middle; }
    Help > Static { width: 80; height: auto; border: thick $accent; padding: 1 2;
                    background: $surface; }
    """

    def compose(self) -> ComposeResult:
        text = Text("sgf top: every loop, live\n\n", style="bold")
        for key, what in KEYS:
            text.append(f"  {key:<7}", style="bold cyan")
            text.append(f" {what}\n")
        yield Static(text)


def details_text(row: LoopRow | None) -> Text:
    """The selected loop in full: id, project, state and why, task, spend."""
    if row is None:
        return Text("no loop selected", style="dim")
    text = plain(row.loop_id, "bold") + Text("\n") + plain(row.project, "dim") + Text("\n")
    text += plain(columns.state(row), STATE_STYLE[row.state])
    if row.pid is not None:
        text.append(f" · pid {row.pid}", style="dim")
    text.append("\n")
    text += plain(f"task {columns.task(row)}")
    text.append(f"\n{columns.cost(row)} · {columns.tokens(row.tokens, row.max_tokens)} tokens")
    return text


def board_text(project: Path | None, board: Board | None) -> Text:
    """The pensa pane: counts, what is in progress by whom, what closed today."""
    if project is None:
        return Text("no project selected", style="dim")
    text = Text("pensa · ", style="bold") + plain(columns.project_name(project), "bold")
    if board is None:
        return text + Text("\n(not read yet)", style="dim")
    if board.error:
        return text + Text("\nunavailable: ", style="red") + plain(board.error)
    text.append(
        f"\nready {board.ready}   blocked {board.blocked}   needs a human {board.needs_human}"
    )
    text.append(f"\nin progress {len(board.working)}", style="bold")
    for claim in board.working[:8]:
        text.append("\n  ")
        text += plain(claim.id, "cyan") + Text(" ") + plain(columns.cut(claim.title, 40))
        text += Text(" ← ", style="dim") + plain(columns.cut(claim.assignee, 28), "dim")
    text.append(f"\nclosed today {len(board.closed_today)}", style="bold")
    for task in board.closed_today[:5]:
        text.append("\n  ")
        text += plain(task.id, "green") + Text(" ") + plain(columns.cut(task.title, 40))
    return text

"""The loop table's columns as plain strings, shared by `sgf top` and `sgf status --watch`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from sgf import figures, tablefit
from sgf.loop.loopstate import LoopRow, State

COLUMNS = (
    "project",
    "stage",
    "spec",
    "iterations",
    "task",
    "cost",
    "tokens",
    "time",
    "active",
    "state",
    "trend",
)
BARS = "▁▂▃▄▅▆▇█"


duration = figures.duration


def ago(when: datetime | None, now: datetime) -> str:
    """How long ago, `12s`; `-` when unknown."""
    if when is None:
        return "-"
    return duration((now - when).total_seconds())


cut = tablefit.cut


tokens = figures.tokens


def cost(row: LoopRow) -> str:
    """`$0.4213` or `$0.4213/$2.0000` against the loop's budget."""
    return figures.cost(row.cost, row.max_cost)


def iteration(row: LoopRow) -> str:
    """`3/10`, `3/?`, or `-` before the first iteration."""
    return figures.iterations(row.iteration, row.iterations)


def state(row: LoopRow) -> str:
    """`running`, `waiting: usage limit…`, `stopped: interrupted`."""
    if row.state is State.RUNNING or not row.reason:
        return row.state.value
    return f"{row.state.value}: {row.reason}"


def spark(values: tuple[float, ...], width: int = 8) -> str:
    """The last `width` values as block characters scaled to the largest (per-iteration cost)."""
    shown = values[-width:]
    top = max(shown, default=0.0)
    if top <= 0:
        return BARS[0] * len(shown)
    return "".join(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1)))] for v in shown)


def project_name(path: Path) -> str:
    """A project as its folder's name."""
    return path.name or str(path)


def task(row: LoopRow) -> str:
    """`pn-1a2b3c4d add the login form`, or `-`."""
    return f"{row.task.id} {row.task.title}" if row.task else "-"


def cells(row: LoopRow, now: datetime, *, wide: bool = False) -> tuple[str, ...]:
    """One row's cells in COLUMNS order (untrusted text: render without markup). Long
    titles, reasons and names are cut unless `wide`."""

    def fit(text: str, width: int) -> str:
        return text if wide else cut(text, width)

    return (
        fit(project_name(row.project), 16),
        row.stage,
        fit(row.spec or "-", 16),
        iteration(row),
        fit(task(row), 32),
        cost(row),
        tokens(row.tokens, row.max_tokens),
        duration(row.elapsed),
        ago(row.last_activity, now),
        fit(state(row), 22),
        spark(row.costs),
    )

"""The loop table's columns as plain strings, shared by `sgf top` and `sgf status --watch`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from sgf.loopstate import LoopRow, State

COLUMNS = (
    "project",
    "stage",
    "spec",
    "iter",
    "task",
    "cost",
    "tokens",
    "elapsed",
    "active",
    "state",
    "trend",
)
BARS = "▁▂▃▄▅▆▇█"


def duration(seconds: float | None) -> str:
    """`42s`, `3m12s`, `1h02m`, `2d04h`; `-` when unknown."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def ago(when: datetime | None, now: datetime) -> str:
    """How long ago, `12s`; `-` when unknown."""
    if when is None:
        return "-"
    return duration((now - when).total_seconds())


def cut(text: str, width: int) -> str:
    """At most `width` characters, ending in `…` when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def tokens(n: int, budget: int | None = None) -> str:
    """`12.3k`, `1.2M`, with `/budget` when there is one."""

    def short(v: int) -> str:
        if v >= 1_000_000:
            return f"{v / 1_000_000:.1f}M"
        return f"{v / 1000:.1f}k" if v >= 1000 else str(v)

    return short(n) + (f"/{short(budget)}" if budget else "")


def cost(row: LoopRow) -> str:
    """`$0.42` or `$0.42/$2.00` against the loop's budget."""
    spent = f"${row.cost:.2f}"
    return spent + (f"/${row.max_cost:.2f}" if row.max_cost is not None else "")


def iteration(row: LoopRow) -> str:
    """`3/10`, `3/?`, or `-` before the first iteration."""
    if row.iteration is None:
        return "-"
    return f"{row.iteration}/{row.iterations if row.iterations is not None else '?'}"


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

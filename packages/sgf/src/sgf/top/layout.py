"""`sgf top`'s table fitted to the terminal as `sgf.tablefit` fits every table: the free
text (the task's id and title, the state and its reason, the spec, the project) gives up
width first; the loop id, which tells five `--parallel` loops apart, is never cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sgf import tablefit
from sgf.loop.loopstate import LoopRow
from sgf.top import columns

NAMES = ("loop", *columns.COLUMNS)
SHRINK = {"task": 12, "state": 9, "spec": 6, "project": 8}  # the least each keeps
PADDING = 2  # the table's cell padding, one character each side


def cells(row: LoopRow, now: datetime) -> tuple[str, ...]:
    """One row's cells in NAMES order, uncut (untrusted text: render without markup)."""
    return (row.loop_id, *columns.cells(row, now, wide=True))


def widths(rows: Sequence[Sequence[str]], total: int) -> list[int]:
    """Each column's width for `rows` (cells in NAMES order) in `total` characters."""
    return tablefit.widths(NAMES, rows, total - PADDING * len(NAMES), shrink=SHRINK)


def fitted(row: Sequence[str], sizes: Sequence[int]) -> list[str]:
    """The row's cells cut to `sizes`, ending in `…` where cut."""
    return [tablefit.cut(cell, size) for cell, size in zip(row, sizes, strict=True)]

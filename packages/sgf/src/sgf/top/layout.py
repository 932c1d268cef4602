"""`sgf top`'s table fitted to the terminal: column widths from the content and the width.

Every column is as wide as its widest cell (uncut) while the table fits. When it does not,
the columns that hold free text (the task's id and title, the state and its reason, the
spec, the project) give up width, the widest first, down to a readable least. Identifiers
and numbers are never cut: the loop id tells five `--parallel` loops apart, and a cost or a
count cut short would lie.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sgf.loopstate import LoopRow
from sgf.top import columns

NAMES = ("loop", *columns.COLUMNS)
SHRINK = {"task": 12, "state": 9, "spec": 6, "project": 8}  # the least each keeps
PADDING = 2  # the table's cell padding, one character each side


def cells(row: LoopRow, now: datetime) -> tuple[str, ...]:
    """One row's cells in NAMES order, uncut (untrusted text: render without markup)."""
    return (row.loop_id, *columns.cells(row, now, wide=True))


def widths(rows: Sequence[Sequence[str]], total: int) -> list[int]:
    """Each column's width for `rows` (cells in NAMES order) in `total` characters."""
    natural = [max([len(name), *(len(r[i]) for r in rows)]) for i, name in enumerate(NAMES)]
    over = sum(natural) + PADDING * len(NAMES) - total
    least = {NAMES.index(name): max(size, len(name)) for name, size in SHRINK.items()}
    while over > 0:  # the widest free-text column gives a character, until the table fits
        room = [i for i in least if natural[i] > least[i]]
        if not room:
            break
        widest = max(room, key=lambda i: natural[i])
        natural[widest] -= 1
        over -= 1
    return natural


def fitted(row: Sequence[str], sizes: Sequence[int]) -> list[str]:
    """The row's cells cut to `sizes`, ending in `…` where cut."""
    return [columns.cut(cell, size) for cell, size in zip(row, sizes, strict=True)]

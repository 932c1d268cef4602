"""Tables fitted to a terminal's width, one way for every view: `sgf top`, `sgf status` and
`sgf status --watch`.

Every column is as wide as its widest cell (uncut) while the table fits. When it does not,
the columns that hold free text (a task's title, a state's reason, a path) give up width,
the widest first, down to a readable least; when that is not enough, whole columns the view
can do without are left out, least useful first. Identifiers and numbers are never cut: a
loop id cut to `build-202…` cannot tell two `--parallel` loops apart, and a cost cut short
would lie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

GAP = 2  # between two columns of `table()`: one space of padding on each side


def cut(text: str, width: int) -> str:
    """At most `width` characters, ending in `…` when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def widths(
    heads: Sequence[str], rows: Sequence[Sequence[str]], room: int, *, shrink: Mapping[str, int]
) -> list[int]:
    """Each column's width for `rows` (cells in `heads` order) in `room` characters of cells
    (padding and rules already taken off). `shrink` names the free-text columns and the
    least each keeps; the others keep their widest cell."""
    natural = [max([len(head), *(len(r[i]) for r in rows)]) for i, head in enumerate(heads)]
    over = sum(natural) - room
    least = {
        heads.index(name): max(size, len(name)) for name, size in shrink.items() if name in heads
    }
    while over > 0:  # the widest free-text column gives a character, until the table fits
        roomy = [i for i in least if natural[i] > least[i]]
        if not roomy:
            break
        widest = max(roomy, key=lambda i: natural[i])
        natural[widest] -= 1
        over -= 1
    return natural


class Fit(NamedTuple):
    """The columns a table shows, by index, and their widths."""

    shown: tuple[int, ...]
    widths: tuple[int, ...]

    def heads(self, heads: Sequence[str]) -> list[str]:
        """The shown columns' names."""
        return [heads[i] for i in self.shown]

    def row(self, cells: Sequence[str]) -> list[str]:
        """The shown cells, each cut to its column's width."""
        return [cut(cells[i], w) for i, w in zip(self.shown, self.widths, strict=True)]


def fit(
    heads: Sequence[str],
    rows: Sequence[Sequence[str]],
    total: int,
    *,
    shrink: Mapping[str, int],
    optional: Sequence[str] = (),
) -> Fit | None:
    """The columns of `table()` in `total` characters: fitted by `widths`, leaving out the
    `optional` columns in their order until the table fits; None when it does not fit even
    so (then `aligned` lines, which the terminal wraps, lose nothing)."""
    shown = list(range(len(heads)))
    for leave in (None, *optional):
        if leave is not None and leave in heads:
            shown.remove(heads.index(leave))
        room = total - GAP * (len(shown) - 1)
        sizes = widths(
            [heads[i] for i in shown], [[r[i] for i in shown] for r in rows], room, shrink=shrink
        )
        if sum(sizes) <= room:
            return Fit(tuple(shown), tuple(sizes))
    return None


def aligned(heads: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header and the rows as lines of whole cells, two spaces apart (like `gh`)."""
    lines = [tuple(heads), *(tuple(r) for r in rows)]
    sizes = [max(len(r[i]) for r in lines) for i in range(len(heads))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, sizes, strict=True)).rstrip() for r in lines]


def table(
    title: str | None, heads: Sequence[str], rows: Sequence[Sequence[Text]], sizes: Fit
) -> Table:
    """A rich table in the look of `sgf top`: no rules, a bold header, each column exactly
    as wide as `sizes` says (cells already cut to it)."""
    from rich.table import Table

    out = Table(
        title=title,
        title_justify="left",
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="bold",
    )
    for head, width in zip(sizes.heads(heads), sizes.widths, strict=True):
        out.add_column(head, width=width, no_wrap=True, overflow="ellipsis")
    for row in rows:
        out.add_row(*row)
    return out

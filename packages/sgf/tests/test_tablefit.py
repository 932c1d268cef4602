"""Tables fitted to a terminal: free text gives way first, then the optional columns in
order; identifiers and numbers are never cut."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from sgf import tablefit

HEADS = ("loop id", "cost", "task", "log")
ROWS = [
    ("build-20260301T110000", "$0.1200", "pn-1a2b3c4d add the login form", ".sgf/logs/b.log"),
    ("build-20260301T110001", "$0.0100", "-", ".sgf/logs/c.log"),
]
SHRINK = {"task": 12, "log": 8}


def test_a_table_that_fits_keeps_every_cell_whole() -> None:
    sizes = tablefit.fit(HEADS, ROWS, 200, shrink=SHRINK, optional=("log",))
    assert sizes == tablefit.Fit((0, 1, 2, 3), (21, 7, 30, 15))
    assert sizes.row(ROWS[0]) == list(ROWS[0])


def test_free_text_gives_way_widest_first_down_to_its_least() -> None:
    # 21 + 7 + 30 + 15 cells and 3 gaps of 2 make 79: four characters too many
    sizes = tablefit.fit(HEADS, ROWS, 75, shrink=SHRINK)
    assert sizes is not None
    assert sizes.widths == (21, 7, 26, 15)
    assert sizes.row(ROWS[0])[2] == "pn-1a2b3c4d add the login…"
    narrower = tablefit.fit(HEADS, ROWS, 58, shrink=SHRINK)
    assert narrower is not None
    assert narrower.widths == (21, 7, 12, 12)


def test_then_the_optional_columns_go_in_their_order_and_the_ids_stay_whole() -> None:
    sizes = tablefit.fit(HEADS, ROWS, 45, shrink=SHRINK, optional=("log", "task"))
    assert sizes is not None
    assert sizes.heads(HEADS) == ["loop id", "cost", "task"]
    assert sizes.widths == (21, 7, 13)
    assert [sizes.row(r)[0] for r in ROWS] == [r[0] for r in ROWS]
    assert tablefit.fit(HEADS, ROWS, 40, shrink=SHRINK, optional=("log",)) is None


def test_aligned_lines_hold_every_cell_whole() -> None:
    lines = tablefit.aligned(("a", "bb"), [("long cell", "x"), ("y", "")])
    assert lines == ["a          bb", "long cell  x", "y"]


def test_the_rich_table_is_exactly_as_wide_as_the_fit() -> None:
    sizes = tablefit.fit(HEADS, ROWS, 58, shrink=SHRINK)
    assert sizes is not None
    rows = [[Text(c) for c in sizes.row(r)] for r in ROWS]
    out = io.StringIO()
    Console(file=out, width=58, color_system=None).print(tablefit.table(None, HEADS, rows, sizes))
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["loop", "id", "cost", "task", "log"]
    assert lines[1].startswith("build-20260301T110000  $0.1200  pn-1a2b3c4d…  .sgf/logs/b…")
    assert max(len(line.rstrip()) for line in lines) <= 58

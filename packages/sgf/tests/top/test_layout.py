"""`sgf top`'s columns follow the terminal and their content (layout.py, through the pilot)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from sgf.loop.loopstate import LoopRow, State, Task
from sgf.top import layout
from sgf.top.app import TopApp
from sgf.top.collect import Snapshot

from .conftest import NOW, until

PROJECT = Path("/work/my-project")  # shown, never read
TITLE = "add the login form that rejects empty passwords and says why"


class Changing:
    """A source whose snapshot the test replaces."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def snapshot(self) -> Snapshot:
        return self.snap


def parallel_rows(count: int, *, title: str = "x") -> tuple[LoopRow, ...]:
    """`count` loops of one `--parallel` run: one project, stage and spec; ids apart."""
    return tuple(
        LoopRow(
            PROJECT, f"build-20260301T11300{n}", "build", None, State.STOPPED,
            reason="budget reached: group budget $10.0000 for 5 loops, $10.0200 spent",
            iteration=2, iterations=10, task=Task(f"pn-{n}a2b3c4d", title), cost=2.0,
        )
        for n in range(count)
    )  # fmt: skip


def table_text(app: TopApp) -> list[list[str]]:
    table = app.query_one("#loops")
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]  # type: ignore[attr-defined]


def shown(app: TopApp, column: int) -> list[str]:
    """Each row's cell in `column` as wide as the screen shows it (cut to its column)."""
    table = app.query_one("#loops")
    width = list(table.columns.values())[column].width  # type: ignore[attr-defined]
    return [cell[:width] for cell in (r[column] for r in table_text(app))]


def test_widths_are_the_content_while_it_fits_and_free_text_gives_way_first() -> None:
    row = ["build-20260301T113000", "shop", "build", "auth", "2/10", "pn-1 " + "t" * 60]
    row += ["$0.14", "7.4k", "30m00s", "3s", "stopped: " + "r" * 40, "▁"]
    natural = layout.widths([row], 1000)
    assert natural == [max(len(c), len(n)) for c, n in zip(row, layout.NAMES, strict=True)]
    tight = layout.widths([row], 120)
    assert sum(tight) + layout.PADDING * len(layout.NAMES) <= 120
    changed = {
        layout.NAMES[i] for i, (a, b) in enumerate(zip(natural, tight, strict=True)) if a != b
    }
    assert changed <= {"task", "state", "spec", "project"}
    assert tight[0] == len("build-20260301T113000")  # the loop id is never cut
    assert layout.fitted(row, tight)[5].endswith("…")


def test_the_table_follows_the_terminal_and_a_cell_that_grows() -> None:
    snap = Snapshot(NOW, (PROJECT,), parallel_rows(5), {})
    source = Changing(snap)
    app = TopApp(source, scope="this project")

    async def drive() -> None:
        async with app.run_test(size=(300, 40)) as pilot:
            await until(pilot, lambda: len(app.rows) == 5, "the rows")
            rows = table_text(app)
            # five loops of one run told apart by their ids, each state with its whole reason
            assert len({r[0] for r in rows}) == 5
            reason = "stopped: " + str(parallel_rows(1)[0].reason)
            assert shown(app, len(layout.NAMES) - 2) == [reason] * 5
            # a title that grows after the first draw widens its column: nothing stays `pn-…`
            source.snap = dataclasses.replace(snap, rows=parallel_rows(5, title=TITLE))
            await until(pilot, lambda: TITLE in shown(app, 5)[0], "the whole title")
            await pilot.resize_terminal(120, 40)
            await until(pilot, lambda: shown(app, 5)[0].endswith("…"), "a cut title")
            narrow = table_text(app)
            assert shown(app, 0) == [r[0] for r in narrow] == [r[0] for r in rows]  # ids whole
            await pilot.resize_terminal(300, 40)
            await until(pilot, lambda: TITLE in shown(app, 5)[0], "the title again")

    asyncio.run(drive())

"""The loop table's cells: the same strings in `sgf top` and `sgf status --watch`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sgf.loop.loopstate import LoopRow, State, Task
from sgf.top import columns

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (-3, "0s"), (42.9, "42s"), (192, "3m12s"), (3720, "1h02m"), (187200, "2d04h")],
)
def test_duration(seconds: float | None, text: str) -> None:
    assert columns.duration(seconds) == text


@pytest.mark.parametrize(
    ("n", "budget", "text"),
    [
        (0, None, "0"),
        (999, None, "999"),
        (12345, 100000, "12.3k/100.0k"),
        (2_500_000, None, "2.5M"),
    ],
)
def test_tokens(n: int, budget: int | None, text: str) -> None:
    assert columns.tokens(n, budget) == text


def test_spark_scales_to_the_largest_of_the_last_values() -> None:
    assert columns.spark(()) == ""
    assert columns.spark((0.0, 0.0)) == "▁▁"
    assert columns.spark((0.1, 0.2, 0.4)) == "▂▄█"
    assert len(columns.spark(tuple(float(i) for i in range(20)), width=5)) == 5


def test_cells_of_a_running_and_a_stopped_loop() -> None:
    running = LoopRow(
        Path("/work/shop"),
        "build-auth-20260301T110000",
        "build",
        "auth",
        State.RUNNING,
        iteration=3,
        iterations=10,
        task=Task("pn-1a2b", "add login"),
        cost=0.4213,
        max_cost=5.0,
        tokens=48200,
        elapsed=754,
        last_activity=NOW - timedelta(seconds=4),
        costs=(0.1, 0.2),
    )
    assert columns.cells(running, NOW) == (
        "shop", "build", "auth", "3/10", "pn-1a2b add login", "$0.4213/$5.0000", "48.2k",
        "12m34s", "4s", "running", "▄█",
    )  # fmt: skip
    stopped = LoopRow(Path("/work/shop"), "verify-1", "verify", None, State.STOPPED, "interrupted")
    assert columns.cells(stopped, NOW) == (
        "shop", "verify", "-", "-", "-", "$0.0000", "0", "-", "-", "stopped: interrupted", "",
    )  # fmt: skip
    assert len(columns.COLUMNS) == len(columns.cells(stopped, NOW))


def test_long_text_is_cut_unless_wide() -> None:
    reason = "budget reached: --max-cost 5.00 (spent 5.03)"
    row = LoopRow(Path("/p"), "verify-1", "verify", None, State.STOPPED, reason)
    assert columns.cells(row, NOW)[9] == "stopped: budget reache…"[:21] + "…"
    assert columns.cells(row, NOW, wide=True)[9] == f"stopped: {reason}"

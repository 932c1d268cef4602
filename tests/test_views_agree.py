"""ralph and sgf print a run's figures in one form: ralph's totals line and AFK
summaries, and every sgf view, show the same strings for the same numbers. sgf's figures.py
formats through ralph.shared.figures, their one owner; this test holds that it still does."""

from __future__ import annotations

import pytest
from ralph.shared import figures as ralph_figures
from sgf import figures


@pytest.mark.parametrize("seconds", [0, 0.4, 4.25, 59.9, 60, 192, 3599, 3600, 3720, 187200])
def test_durations_agree(seconds: float) -> None:
    assert ralph_figures.duration(seconds) == figures.duration(seconds)


@pytest.mark.parametrize("usd", [0.0, 0.0046, 0.25, 0.5, 1.23456, 40.0])
def test_costs_agree(usd: float) -> None:
    assert ralph_figures.cost(usd) == figures.cost(usd)


@pytest.mark.parametrize("n", [0, 547, 999, 1000, 48_200, 999_999, 2_500_000])
def test_tokens_agree(n: int) -> None:
    assert ralph_figures.tokens(n) == figures.tokens(n)

"""ralph.shared.figures: a run's time, cost and tokens in the one form ralph and sgf print."""

from __future__ import annotations

import pytest

from ralph.shared.figures import cost, duration, tokens


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (4.25, "4s"), (-3, "0s"), (192, "3m12s"), (3720, "1h02m"), (187200, "2d04h")],
)
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_cost_has_four_decimals() -> None:
    assert cost(0.0046) == "$0.0046"
    assert cost(40) == "$40.0000"


@pytest.mark.parametrize(("n", "text"), [(547, "547"), (48_200, "48.2k"), (2_500_000, "2.5M")])
def test_tokens(n: int, text: str) -> None:
    assert tokens(n) == text

"""The figures of a run — iterations, cost, tokens, time — in the one form every sgf view
shows them: `sgf status` (piped or not), `sgf status --watch` and `sgf top`.

The strings are ralph's (`ralph.shared.figures`, their one owner: ralph's totals line and AFK
summaries print them too); sgf adds `-` for a figure not known yet and `/budget`.
"""

from __future__ import annotations

from ralph.shared import figures

NAMES = ("iterations", "cost", "tokens", "time")  # the column names, in every view


def duration(seconds: float | None) -> str:
    """`42s`, `3m12s`, `1h02m`, `2d04h`; `-` when unknown."""
    return "-" if seconds is None else figures.duration(seconds)


def cost(usd: float | None, budget: float | None = None) -> str:
    """`$0.0046`, or `$0.0046/$2.0000` against a budget; `-` when unknown."""
    if usd is None:
        return "-"
    return figures.cost(usd) + (f"/{figures.cost(budget)}" if budget is not None else "")


def tokens(n: int | None, budget: int | None = None) -> str:
    """`547`, `48.2k`, `2.5M`, with `/budget` when there is one; `-` when unknown."""
    if n is None:
        return "-"
    return figures.tokens(n) + (f"/{figures.tokens(budget)}" if budget else "")


def iterations(done: int | None, of: int | None) -> str:
    """`3/10` (the latest iteration started, of how many), `3/?`, or `-` before the first."""
    if done is None:
        return "-"
    return f"{done}/{of if of is not None else '?'}"

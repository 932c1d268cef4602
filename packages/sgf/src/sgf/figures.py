"""The figures of a run — iterations, cost, tokens, time — in the one form every sgf view
shows them: `sgf status` (piped or not), `sgf status --watch` and `sgf top`.

ralph's totals line and AFK summaries print the same strings (its format.py has the same few
lines: packages share no code; tests/test_views_agree.py holds them to each other).
"""

from __future__ import annotations

NAMES = ("iterations", "cost", "tokens", "time")  # the column names, in every view


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


def cost(usd: float | None, budget: float | None = None) -> str:
    """`$0.0046`, or `$0.0046/$2.0000` against a budget; `-` when unknown."""
    if usd is None:
        return "-"
    return f"${usd:.4f}" + (f"/${budget:.4f}" if budget is not None else "")


def tokens(n: int | None, budget: int | None = None) -> str:
    """`547`, `48.2k`, `2.5M`, with `/budget` when there is one; `-` when unknown."""
    if n is None:
        return "-"

    def short(v: int) -> str:
        if v >= 1_000_000:
            return f"{v / 1_000_000:.1f}M"
        return f"{v / 1000:.1f}k" if v >= 1000 else str(v)

    return short(n) + (f"/{short(budget)}" if budget else "")


def iterations(done: int | None, of: int | None) -> str:
    """`3/10` (the latest iteration started, of how many), `3/?`, or `-` before the first."""
    if done is None:
        return "-"
    return f"{done}/{of if of is not None else '?'}"

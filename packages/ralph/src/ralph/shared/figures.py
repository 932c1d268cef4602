"""The figures of a run (time, cost, tokens) in the one form every view shows them: ralph's
totals line and AFK summaries, and `sgf status`, `sgf status --watch` and `sgf top`.

A published contract module (see `ralph.shared`): sgf's figures.py formats through it, adding
only its `-` for an unknown figure and `/budget`. Pure functions, no I/O.
"""

from __future__ import annotations


def duration(seconds: float) -> str:
    """`42s`, `3m12s`, `1h02m`, `2d04h`."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def cost(usd: float) -> str:
    """`$0.0046`: four decimals, as claude reports a small iteration's cost."""
    return f"${usd:.4f}"


def tokens(n: int) -> str:
    """`547`, `48.2k`, `2.5M`."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)

"""Command line for pensa (skeleton: filled in by its own issue)."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the pensa command line and return its exit code."""
    return 0

"""One budget for a group of loops: `sgf build --parallel N --max-cost/--max-tokens`.

ralph enforces a budget per loop and knows nothing of other loops, and sgf never imports
ralph; so sgf watches the group itself. Every second it sums the finished iterations' cost
and tokens from each loop's run record (`.sgf/runs/<loop-id>.jsonl`, which ralph appends one
`iteration` line to when an iteration ends, read with the same fold as `sgf status`), and
once a total reaches its budget it stops every loop the way `s` in `sgf top` and Ctrl+C do:
SIGINT to each ralph, which stops its agent and gives its claims back. Iterations still
running in the other loops at that moment are interrupted, so the group spends at most its
budget plus what ended in the second before sgf looked and what those iterations had spent.
A wall-time budget needs no watching: the loops start together, so each ralph's own
`--max-time` ends the group at the same moment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sgf import runs
from sgf.loopstate import Progress


@dataclass
class GroupBudget:
    """The group's cost and token budget over the loops' run records."""

    root: Path
    loop_ids: Sequence[str]
    max_cost: float | None = None
    max_tokens: int | None = None
    reason: str | None = field(default=None, init=False)  # set once the budget is reached

    def spent(self) -> tuple[float, int]:
        """The group's cost (USD) and tokens so far, over finished iterations."""
        cost, tokens = 0.0, 0
        for loop_id in self.loop_ids:
            progress = Progress.from_events(runs.read_record(self.root, loop_id))
            cost += progress.cost
            tokens += progress.tokens
        return cost, tokens

    def reached(self) -> bool:
        """Tell whether a total has reached its budget; the first time, say which in
        `reason` (`budget reached: group cost $10.20 of $10.00 over 4 loops`)."""
        if self.reason is not None:
            return True
        if self.max_cost is None and self.max_tokens is None:
            return False
        cost, tokens = self.spent()
        over = len(self.loop_ids)
        if self.max_cost is not None and cost >= self.max_cost:
            spent = f"cost ${cost:.2f} of ${self.max_cost:.2f}"
        elif self.max_tokens is not None and tokens >= self.max_tokens:
            spent = f"tokens {tokens} of {self.max_tokens}"
        else:
            return False
        self.reason = f"budget reached: group {spent} over {over} loops"
        return True

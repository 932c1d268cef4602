"""One budget for a group of loops: `sgf build --parallel N --max-cost/--max-tokens`.

ralph enforces a budget per loop and knows nothing of other loops, and sgf never imports
ralph; so sgf watches the group itself. Every second it sums the finished iterations' cost
and tokens from each loop's run record (`.sgf/runs/<loop-id>.jsonl`, which ralph appends one
`iteration` line to when an iteration ends, read with the same fold as `sgf status`), and
once a total reaches its budget it asks every loop to stop after its running iteration: a
stop file per loop (runs.request_stop, ralph's `--stop-file`), which ralph reads between
iterations only. Never a signal: one would cut an iteration short, perhaps while it lands
its commits. Each loop then finishes its iteration, lands its work and exits 2 with the
group's reason, so the group spends its budget, plus what ended in the second before sgf
looked, plus what the iterations running then spend to finish.
A wall-time budget needs no watching: the loops start together, so each ralph's own
`--max-time` ends the group at the same moment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sgf import figures
from sgf.loop import runs
from sgf.loop.loopstate import Progress


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
        `reason` (`budget reached: group budget $10.0000 for 4 loops, $10.2000 spent`)."""
        if self.reason is not None:
            return True
        if self.max_cost is None and self.max_tokens is None:
            return False
        cost, tokens = self.spent()
        over = len(self.loop_ids)
        if self.max_cost is not None and cost >= self.max_cost:
            spent = f"{figures.cost(self.max_cost)} for {over} loops, {figures.cost(cost)} spent"
        elif self.max_tokens is not None and tokens >= self.max_tokens:
            spent = f"{self.max_tokens} tokens for {over} loops, {tokens} spent"
        else:
            return False
        self.reason = f"budget reached: group budget {spent}"
        return True

    def enforce(self) -> bool:
        """Look at the totals; once reached, ask every loop to stop after its running
        iteration. True while there is still something to watch."""
        if not self.reached():
            return True
        assert self.reason is not None
        for loop_id in self.loop_ids:
            runs.request_stop(self.root, loop_id, self.reason)
        return False

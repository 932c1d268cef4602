"""afk.py: the summary line says how an iteration ended, in the words every view uses."""

from __future__ import annotations

from ralph.afk import Attempt, summary_line
from ralph.stream import Result
from ralph.watchdog import Expiry


def test_a_finished_iteration_ends_with_the_agent_s_exit_status() -> None:
    result = Result(num_turns=2, input_tokens=10, output_tokens=5, cost_usd=0.001)
    line = summary_line(1, Attempt(0, result, seconds=12))
    assert line == "Iteration 1 done: 12s · 2 turns · 10 in / 5 out tokens · $0.0010 · exit 0"
    assert summary_line(2, Attempt(None)).endswith(" · exit ?")


def test_an_interrupted_iteration_says_so_whatever_the_agent_exited_with() -> None:
    """Agents stopped by SIGINT often exit 0 (gemini, codex's `exec`): "exit 0" would read as
    a success."""
    assert summary_line(3, Attempt(0, interrupted=True, seconds=4)) == (
        "Iteration 3 done: 4s · interrupted"
    )


def test_an_iteration_ralph_stopped_names_the_deadline_and_the_exit_status() -> None:
    stopped = Attempt(-9, expiry=Expiry.IDLE, seconds=61)
    assert summary_line(1, stopped) == "Iteration 1 done: 1m01s · stopped (idle) · exit -9"
    failing = Attempt(1, expiry=Expiry.API_FAILING, seconds=21)
    assert summary_line(1, failing).endswith(" · stopped (api-failing) · exit 1")

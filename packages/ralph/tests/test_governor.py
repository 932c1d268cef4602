"""A loop that governs itself: circuit breaker, budgets, totals and stop reasons."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from ralph.governor import Budgets, Governor, failure_of, parse_duration
from ralph.stream import NOTHING_DONE, Result
from ralph.watchdog import Expiry

from .conftest import Run, Script, Spawn, WaitFor


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("90m", 5400), ("8h", 28800), ("1.5h", 5400), ("45", 45)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5m", "0s", "3w"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_budget_verdicts_come_from_result_totals() -> None:
    now = [0.0]
    gov = Governor(Budgets(max_cost=0.01, max_tokens=100, max_time=60), clock=lambda: now[0])
    assert gov.over_budget() is None
    gov.record(
        Result(cost_usd=0.004, input_tokens=10, output_tokens=5, cache_tokens=20), failure=None
    )
    assert (gov.cost, gov.tokens) == (0.004, 35)
    assert gov.over_budget() is None
    gov.record(Result(cost_usd=0.007), failure=None)
    assert (gov.over_budget() or "").startswith("budget reached: cost $0.0110")
    gov = Governor(Budgets(max_time=60), clock=lambda: now[0])
    now[0] = 61
    assert (gov.over_budget() or "").startswith("budget reached: 61 s of --max-time 60")


def test_the_breaker_opens_after_consecutive_failures_only() -> None:
    gov = Governor(Budgets(max_failed=3))
    for failure in ("a", "b", None, "c", "d"):
        gov.record(None, failure=failure)
    assert gov.breaker_open() is None
    gov.record(None, failure="the last one")
    assert gov.breaker_open() == "3 iterations in a row failed; the last: the last one"


def test_what_counts_as_a_failed_iteration() -> None:
    assert failure_of(0, Result()) is None
    assert failure_of(1, None) == "the agent exited (status 1) without a result"
    assert "reported an error" in (failure_of(0, Result(is_error=True, text="x")) or "")
    assert failure_of(3, Result()) == "the agent exited with status 3"
    assert failure_of(0, Result(), expiry=Expiry.IDLE) == "the watchdog stopped the agent"
    assert failure_of(1, None, expiry=Expiry.API_FAILING) == "the agent's API calls kept failing"
    # --max-time and the grace after `result` fail nothing by themselves: the result decides
    assert failure_of(-2, Result(), expiry=Expiry.POST_RESULT) == "the agent exited with status -2"
    assert failure_of(0, Result(), expiry=Expiry.MAX_TIME) is None


def test_a_run_that_did_nothing_fails_in_ralph_s_words_not_the_agent_s() -> None:
    did_nothing = Result(subtype=NOTHING_DONE, is_error=True, text="the model made no tool call")
    assert failure_of(0, did_nothing) == "the model made no tool call"


@pytest.mark.process
def test_bin_false_stops_after_three_failed_iterations_with_exit_1(ralph: Run) -> None:
    done = ralph("-a", "--command", "/bin/false", "10", "do the work")
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(re.findall(r"Iteration \d+ of", done.stdout)) == 3
    assert (
        "error: stopping: 3 iterations in a row failed; the last: the agent exited (status 1) "
        "without a result" in done.stderr
    )
    assert "stopped: 3 iterations in a row failed" in done.stdout
    assert "reached max iterations" not in done.stdout


@pytest.mark.process
@pytest.mark.parametrize("iterations", ["1", "2"])
def test_a_loop_whose_every_iteration_failed_exits_1_without_run_again_advice(
    ralph: Run, iterations: str
) -> None:
    """Fewer iterations than the breaker needs: still no "work may remain"."""
    done = ralph("-a", "--command", "/bin/false", iterations, "do the work")
    assert done.returncode == 1, done.stdout + done.stderr
    reason = (
        f"every iteration failed ({iterations}); the last: the agent exited (status 1) "
        "without a result"
    )
    assert f"error: stopping: {reason}" in done.stderr
    assert f"stopped: {reason}" in done.stdout


@pytest.mark.process
def test_a_loop_with_one_good_iteration_is_exhausted_not_failed(ralph: Run, script: Script) -> None:
    done = ralph("-a", "2", script(_1=[["result"]], default=[["exit", 3]]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "stopped: iterations exhausted" in done.stdout


def test_all_failed_needs_every_iteration_to_have_failed() -> None:
    gov = Governor(Budgets(max_failed=3))
    assert gov.all_failed() is None  # nothing ran
    gov.record(None, failure=None)
    gov.record(None, failure="boom")
    assert gov.all_failed() is None
    gov = Governor(Budgets(max_failed=3))
    gov.record(None, failure="boom")
    assert gov.all_failed() == "every iteration failed (1); the last: boom"


@pytest.mark.process
def test_max_cost_stops_before_an_iteration_over_budget(ralph: Run, script: Script) -> None:
    steps = [["result", {"total_cost_usd": 0.0015}]]
    done = ralph("-a", "--max-cost", "0.002", "10", script(default=steps))
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(re.findall(r"Iteration \d+ of", done.stdout)) == 2
    assert "stopping before iteration 3: budget reached: cost $0.0030 of --max-cost $0.002" in (
        done.stdout + done.stderr
    )
    assert re.search(r"totals: 2 iteration\(s\), (0 task\(s\) closed, )?\$0\.0030", done.stdout)


@pytest.mark.process
def test_max_tokens_counts_input_output_and_cache(ralph: Run, script: Script) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100}
    done = ralph("-a", "--max-tokens", "200", "10", script(default=[["result", {"usage": usage}]]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(re.findall(r"Iteration \d+ of", done.stdout)) == 2
    assert "budget reached: 230 tokens of --max-tokens 200" in done.stdout + done.stderr


@pytest.mark.process
def test_max_time_ends_a_running_iteration_like_the_watchdog(ralph: Run, script: Script) -> None:
    done = ralph("-a", "--max-time", "1s", "5", script(default=[["say", "working"], ["hang"]]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(re.findall(r"Iteration \d+ of", done.stdout)) == 1
    assert "the --max-time budget ran out: stopped the agent" in done.stdout + done.stderr
    assert "totals: 1 iteration(s)" in done.stdout
    assert "stopped: budget reached" in done.stdout


@pytest.mark.process
def test_a_bad_max_time_is_a_one_line_usage_error(ralph: Run) -> None:
    done = ralph("-a", "--max-time", "soon", "1", "do it")
    assert done.returncode == 1
    assert "--max-time" in done.stderr
    assert "not a duration" in done.stderr


@pytest.mark.process
@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is about running as root")
def test_root_with_sandbox_none_and_claude_is_refused_before_any_iteration(
    ralph_env: dict[str, str], fake_agent: Path, project: Path, tmp_path: Path
) -> None:
    """Not three failed iterations, one clear line."""
    import subprocess
    import sys

    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.symlink_to(fake_agent)
    env = {k: v for k, v in ralph_env.items() if k != "IS_SANDBOX"}
    argv = [sys.executable, "-m", "ralph", "-a", "--sandbox", "none", "--command", str(claude)]

    def run(extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, "1", "do the work"],
            cwd=project,
            env={**env, **extra},
            capture_output=True,
            text=True,
            check=False,
        )

    done = run({})
    assert done.returncode == 1
    assert "claude refuses to bypass permissions as root" in done.stderr
    assert "Iteration 1" not in done.stdout
    assert "claude refuses" not in run({"IS_SANDBOX": "1"}).stderr


def _end(record: Path) -> dict[str, object]:
    ends = [e for e in map(json.loads, record.read_text().splitlines()) if e["event"] == "end"]
    assert len(ends) == 1
    return ends[0]  # type: ignore[no-any-return]  # a JSON object


@pytest.mark.process
def test_the_iteration_that_completes_the_loop_is_in_its_totals(
    ralph: Run, script: Script, tmp_path: Path
) -> None:
    paid = [["result", {"total_cost_usd": 0.25, "usage": {"input_tokens": 100}}]]
    done_ = [["touch", ".ralph-complete"], *paid]
    record = tmp_path / "run.jsonl"
    done = ralph("-a", "--record", str(record), "5", script(_1=paid, _2=done_))
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(
        r"totals: 2 iteration\(s\), (\d task\(s\) closed, )?\$0\.5000, 200 tokens, ", done.stdout
    ), done.stdout
    end = _end(record)
    assert (end["iterations"], end["cost"], end["tokens"]) == (2, 0.5, 200)
    assert end["stop_reason"] == "complete"


@pytest.mark.process
def test_the_iteration_interrupted_is_in_the_totals(
    project: Path,
    ralph_env: dict[str, str],
    script: Script,
    wait_for: WaitFor,
    spawn_ralph: Spawn,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    paid = ["result", {"total_cost_usd": 0.25, "usage": {"input_tokens": 100}}]
    # the second iteration has its result and then hangs, until the signal
    second = [paid, ["ready", str(ready)], ["hang"]]
    record = tmp_path / "run.jsonl"
    env = {**ralph_env, "RALPH_RESULT_GRACE": "60"}
    args = ("-a", "--record", str(record), "5", script(_1=[paid], _2=second))
    ralph = spawn_ralph(project, env, *args)
    wait_for(ready.exists, what="the second iteration to start")
    ralph.send_signal(signal.SIGINT)
    out, err = ralph.communicate(timeout=30)
    assert ralph.returncode == 130, err
    assert re.search(
        r"totals: 2 iteration\(s\), (\d task\(s\) closed, )?\$0\.5000, 200 tokens", out
    )
    assert out.rstrip().endswith("stopped: interrupted"), out
    end = _end(record)
    assert (end["iterations"], end["cost"], end["tokens"]) == (2, 0.5, 200)
    iterations = list(map(json.loads, record.read_text().splitlines()))
    assert [e["index"] for e in iterations if e["event"] == "iteration"] == [1, 2]

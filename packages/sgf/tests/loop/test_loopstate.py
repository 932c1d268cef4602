"""Loop rows from the files loops write: PID files, history, run records and log tails."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from ralph.shared import pids

from sgf.loop import runs
from sgf.loop.loopstate import LoopRow, Progress, Reader, State, Task, tail, waiting

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
LIVE = "build-auth-20260301T115000"


def write_record(root: Path, loop_id: str, *events: dict[str, object]) -> None:
    path = runs.record_path(root, loop_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for e in events:
            f.write(json.dumps({"loop_id": loop_id, **e}) + "\n")


def write_log(root: Path, loop_id: str, text: str) -> None:
    path = runs.log_path(root, loop_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def live_pid_file(root: Path, loop_id: str) -> None:
    """A PID file naming this very test process, as a running sgf's would."""
    path = runs.pid_path(root, loop_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{os.getpid()} {pids.start_time(os.getpid())}\n")


START: dict[str, object] = {
    "event": "start",
    "at": "2026-03-01T11:50:00Z",
    "iterations": 5,
    "max_cost": 2.5,
}


def test_progress_folds_iterations_cost_tokens_and_budgets() -> None:
    events: list[dict[str, object]] = [
        START,
        {"event": "iteration_start", "index": 1, "total": 5},
        {"event": "iteration", "index": 1, "cost": 0.25, "tokens": 1000},
        {"event": "iteration_start", "index": 2, "total": 5},
        {"event": "iteration", "index": 2, "cost": None, "tokens": "many"},
        {"event": "iteration_start", "index": 3, "total": 5},
        {"event": "nonsense"},
    ]
    p = Progress.from_events(events)
    assert (p.iteration, p.iterations) == (3, 5)
    assert (p.cost, p.tokens, p.costs) == (0.25, 1000, (0.25, 0.0))
    assert (p.max_cost, p.max_tokens, p.started_at) == (2.5, None, NOW.replace(minute=50, hour=11))
    assert not p.ended


def test_progress_reads_the_end_line() -> None:
    end = {"event": "end", "exit": 130, "stop_reason": "interrupted", "seconds": 42.5}
    p = Progress.from_events([START, end])
    assert (p.ended, p.stop_reason, p.exit_code, p.seconds) == (True, "interrupted", 130, 42.5)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["-> Read(a.py)", "Iteration 1 done: 3s · exit 0"], None),
        (
            [
                "warning: usage limit reached; it resets at 2026-03-01 15:00 UTC",
                "waiting 2h59m (Ctrl+C to stop)",
                "",
            ],
            "usage limit, resets at 2026-03-01 15:00 UTC",
        ),
        (["warning: rate limited (429) with no reset time: retry 1 in 30.0s"], "usage limit"),
        (["waiting 3m00s (Ctrl+C to stop)", "retrying the same iteration"], None),
        ([], None),
    ],
)
def test_waiting_is_read_from_the_logs_last_line(lines: list[str], expected: str | None) -> None:
    assert waiting(lines) == expected


def test_tail_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_text("".join(f"line {i}\n" for i in range(5000)))
    lines = tail(path, size=100)
    assert lines[-1] == "line 4999"
    assert len(lines) < 20
    assert tail(tmp_path / "missing.log") == []


def test_running_loop_row_has_iteration_task_cost_and_activity(tmp_path: Path) -> None:
    live_pid_file(tmp_path, LIVE)
    write_record(
        tmp_path,
        LIVE,
        START,
        {"event": "iteration_start", "index": 1, "total": 5},
        {"event": "iteration", "index": 1, "cost": 0.5, "tokens": 700},
        {"event": "iteration_start", "index": 2, "total": 5},
    )
    write_log(tmp_path, LIVE, "-> Bash(make test)\n")

    [row] = Reader().rows(tmp_path, now=NOW, held={LIVE: Task("pn-1", "add login")})

    assert (row.stage, row.spec, row.state, row.reason) == ("build", "auth", State.RUNNING, None)
    assert (row.pid, row.process_start) == (os.getpid(), pids.start_time(os.getpid()))
    assert (row.iteration, row.iterations, row.task) == (2, 5, Task("pn-1", "add login"))
    assert (row.cost, row.max_cost, row.tokens, row.costs) == (0.5, 2.5, 700, (0.5,))
    assert row.elapsed == 600.0
    assert row.last_activity is not None
    assert row.live


def test_a_loop_waiting_for_a_usage_limit_says_so(tmp_path: Path) -> None:
    live_pid_file(tmp_path, LIVE)
    write_log(tmp_path, LIVE, "warning: usage limit reached; it resets at 15:00\n")
    [row] = Reader().rows(tmp_path, now=NOW)
    assert (row.state, row.reason) == (State.WAITING, "usage limit, resets at 15:00")
    assert row.live


@pytest.mark.process
def test_a_stale_pid_file_is_a_crashed_loop_never_running(tmp_path: Path, dead_pid: int) -> None:
    path = runs.pid_path(tmp_path, LIVE)
    path.parent.mkdir(parents=True)
    path.write_text(f"{dead_pid} 1\n")
    [row] = Reader().rows(tmp_path, now=NOW)
    assert row.state is State.STOPPED
    assert (row.reason or "").startswith("crashed")
    assert row.pid is None


def test_a_reused_pid_is_not_a_running_loop(tmp_path: Path) -> None:
    path = runs.pid_path(tmp_path, LIVE)
    path.parent.mkdir(parents=True)
    path.write_text(f"{os.getpid()} 1\n")  # alive, but another start time: not our sgf
    [row] = Reader().rows(tmp_path, now=NOW)
    assert row.state is State.STOPPED


def test_stopped_loops_show_their_stop_reason_newest_first(tmp_path: Path) -> None:
    for n, reason in enumerate(["complete", "budget reached: --max-cost", None]):
        loop_id = f"verify-2026030{n + 1}T100000"
        if reason:
            write_record(tmp_path, loop_id, START, {"event": "end", "stop_reason": reason})
        outcome = runs.Outcome(loop_id, "2026-03-01T10:00:00Z", "2026-03-01T10:05:00Z", 1, "error")
        runs.record(tmp_path, outcome)

    rows = Reader(recent=2).rows(tmp_path, now=NOW)

    assert [(r.loop_id, r.state, r.reason) for r in rows] == [
        ("verify-20260303T100000", State.STOPPED, "error"),  # no record: the outcome
        ("verify-20260302T100000", State.STOPPED, "budget reached: --max-cost"),
    ]
    assert rows[0].elapsed == 300.0
    assert not any(r.live for r in rows)


def test_running_loops_come_before_stopped_ones_and_are_not_repeated(tmp_path: Path) -> None:
    live_pid_file(tmp_path, LIVE)
    runs.record(tmp_path, runs.Outcome(LIVE, "x", "y", None, "error"))  # odd, but possible
    runs.record(tmp_path, runs.Outcome("verify-20260301T100000", "x", "y", 0, "complete"))
    rows = Reader().rows(tmp_path, now=NOW)
    assert [(r.loop_id, r.state) for r in rows] == [
        (LIVE, State.RUNNING),
        ("verify-20260301T100000", State.STOPPED),
    ]


def test_the_reader_reparses_a_record_only_when_it_changed(tmp_path: Path) -> None:
    reader = Reader()
    write_record(tmp_path, LIVE, START)
    first = reader.progress(tmp_path, LIVE)
    assert reader.progress(tmp_path, LIVE) is first  # unchanged: the cached object
    write_record(tmp_path, LIVE, {"event": "iteration_start", "index": 1, "total": 5})
    assert reader.progress(tmp_path, LIVE).iteration == 1


def test_a_project_without_loops_has_no_rows(tmp_path: Path) -> None:
    assert Reader().rows(tmp_path, now=NOW) == []


def test_row_key_names_project_and_loop() -> None:
    row = LoopRow(Path("/p"), LIVE, "build", "auth", State.RUNNING)
    assert row.key == ("/p", LIVE)


def test_the_history_is_read_again_only_when_it_grew(tmp_path: Path) -> None:
    reader = Reader()
    runs.record(tmp_path, runs.Outcome("verify-20260301T100000", "x", "y", 0, "complete"))
    first = reader.history(tmp_path, 5)
    assert reader.history(tmp_path, 5) is first
    runs.record(tmp_path, runs.Outcome("verify-20260301T110000", "x", "y", 0, "complete"))
    assert [o.loop_id for o in reader.history(tmp_path, 5)] == [
        "verify-20260301T110000",
        "verify-20260301T100000",
    ]

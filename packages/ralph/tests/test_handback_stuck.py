"""What counts towards --stuck-threshold: real attempts, never a claim a stop cut short."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Run, Script, pn, status

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

Spawn = Callable[..., "subprocess.Popen[str]"]
WaitFor = Callable[..., None]


def next_claim(project: Path) -> object:
    """What a third loop's agent gets from claim-next at threshold 2."""
    claimed = pn(project, "claim-next", "--stuck-after", "2", "--actor", "build-next")
    return claimed["id"] if isinstance(claimed, dict) else claimed


def interrupted_by(project: Path, issue: str) -> list[str]:
    history = pn(project, "history", issue)
    assert isinstance(history, list)
    return [e["actor"] for e in history if e["event_type"] == "interrupted"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_two_interrupted_loops_do_not_make_a_task_stuck(
    project: Path,
    env: dict[str, str],
    script: Script,
    task: str,
    tmp_path: Path,
    spawn_ralph: Spawn,
    wait_for: WaitFor,
    sig: signal.Signals,
) -> None:
    for loop in ("build-i1", "build-i2"):
        ready = tmp_path / f"{loop}.ready"
        steps = [["sh", "pn claim-next --json"], ["ready", str(ready)], ["hang"]]
        args = ("-a", "--loop-id", loop, "--stuck-threshold", "2", "3", script(default=steps))
        ralph = spawn_ralph(project, env, *args)
        wait_for(ready.exists, what=f"{loop}'s agent to claim")
        assert status(project, task) == ("in_progress", loop)
        ralph.send_signal(sig)
        _, err = ralph.communicate(timeout=30)
        assert ralph.returncode == 130, err
        assert status(project, task) == ("open", None)
    assert interrupted_by(project, task) == ["build-i2", "build-i1"]  # newest first
    assert next_claim(project) == task


def test_two_loops_stopped_by_max_time_do_not_make_a_task_stuck(
    project: Path, env: dict[str, str], ralph: Run, script: Script, task: str
) -> None:
    steps = [["sh", "pn claim-next --json"], ["hang"]]
    for loop in ("build-t1", "build-t2"):
        args = ("-a", "--loop-id", loop, "--stuck-threshold", "2", "--max-time", "2s", "3")
        done = ralph(*args, script(default=steps), env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "budget reached" in done.stdout
    assert interrupted_by(project, task) == ["build-t2", "build-t1"]
    assert next_claim(project) == task


def test_iterations_that_ended_holding_the_task_count_even_when_a_later_one_is_cut_short(
    project: Path,
    env: dict[str, str],
    script: Script,
    task: str,
    tmp_path: Path,
    spawn_ralph: Spawn,
    wait_for: WaitFor,
) -> None:
    """Each loop's first iteration claims the task and ends without closing it (a real
    attempt); its second is interrupted before it claims anything."""
    env = {**env, "FAKE_AGENT_COUNT": str(tmp_path / "agent-runs")}  # counted across loops
    for first, loop in ((1, "build-e1"), (3, "build-e2")):
        ready = tmp_path / f"{loop}.ready"
        steps = {
            f"_{first}": [["sh", "pn claim-next --json"], ["result"]],
            f"_{first + 1}": [["ready", str(ready)], ["hang"]],
        }
        args = ("-a", "--loop-id", loop, "--stuck-threshold", "2", "3", script(**steps))
        ralph = spawn_ralph(project, env, *args)
        wait_for(ready.exists, what=f"{loop}'s second iteration")
        ralph.send_signal(signal.SIGINT)
        _, err = ralph.communicate(timeout=30)
        assert ralph.returncode == 130, err
    assert interrupted_by(project, task) == []
    assert next_claim(project) is None  # two real attempts: a human's now
    assert status(project, task) == ("open", "human")

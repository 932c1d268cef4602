"""Claims end with the loop: however ralph ends, the loop's tasks go back."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import BIN, Run, Script, pn, status

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

Spawn = Callable[..., "subprocess.Popen[str]"]
WaitFor = Callable[..., None]


def released_by_loop(project: Path, issue: str, loop_id: str) -> list[str]:
    history = pn(project, "history", issue)
    assert isinstance(history, list)
    given_back = ("released", "interrupted")  # interrupted: a stop cut the attempt short
    return [e["detail"] for e in history if e["event_type"] in given_back and e["actor"] == loop_id]


def test_exhausted_iterations_give_the_claim_back(
    project: Path, env: dict[str, str], ralph: Run, script: Script, task: str
) -> None:
    steps = [["sh", "pn claim-next --json"], ["result"]]
    done = ralph("-a", "--loop-id", "build-x", "1", script(default=steps), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert status(project, task) == ("open", None)
    assert f"released claims of build-x (iterations exhausted): {task}" in done.stdout
    [detail] = released_by_loop(project, task, "build-x")
    assert detail.endswith("loop build-x ended: iterations exhausted")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_gives_the_claim_back(
    project: Path,
    env: dict[str, str],
    script: Script,
    task: str,
    tmp_path: Path,
    spawn_ralph: Spawn,
    wait_for: WaitFor,
    sig: signal.Signals,
) -> None:
    ready = tmp_path / "ready"
    steps = [["sh", "pn claim-next --json"], ["ready", str(ready)], ["hang"]]
    ralph = spawn_ralph(project, env, "-a", "--loop-id", "build-y", "3", script(default=steps))
    wait_for(ready.exists, what="the agent to claim")
    assert status(project, task) == ("in_progress", "build-y")
    ralph.send_signal(sig)
    _, err = ralph.communicate(timeout=30)
    assert ralph.returncode == 130, err
    assert status(project, task) == ("open", None)
    assert released_by_loop(project, task, "build-y")


def test_a_user_chosen_actor_is_never_released_wholesale(
    project: Path, env: dict[str, str], ralph: Run, script: Script, task: str
) -> None:
    steps = [["sh", "pn claim-next --json"], ["result"]]
    done = ralph(
        "-a", "--loop-id", "build-z", "1", script(default=steps), env={**env, "PN_ACTOR": "alice"}
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert status(project, task) == ("in_progress", "alice")


def test_a_task_released_every_iteration_leaves_the_queue_after_three_claims(
    project: Path, env: dict[str, str], ralph: Run, script: Script, task: str
) -> None:
    """An agent that gives up on the same task each iteration does not eat the loop:
    after 3 claims the task goes to a human with a comment, and the loop moves on."""
    second = pn(project, "create", "the next task", "-t", "task")
    assert isinstance(second, dict)
    give_up = (
        "pn claim-next --json > claimed.json && pn release "
        "$(python3 -c \"import json; print(json.load(open('claimed.json'))['id'])\")"
    )
    steps = [["sh", give_up], ["result"]]
    done = ralph("-a", "--loop-id", "build-s", "4", script(default=steps), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    shown = pn(project, "show", task)
    assert isinstance(shown, dict)
    assert (shown["status"], shown["assignee"]) == ("open", "human")
    [comment] = [c for c in shown["comments"] if c["text"].startswith("stuck:")]
    assert "claimed 3 times without being closed (by build-s)" in comment["text"]
    history = pn(project, "history", second["id"])
    assert isinstance(history, list)
    assert [e["event_type"] for e in history if e["event_type"] == "claimed"] == ["claimed"]
    status_text = subprocess.run(
        [str(BIN / "pn"), "status"], cwd=project, capture_output=True, text=True, check=True
    ).stdout
    assert "needing a human: 1 stuck" in status_text
    handed_back = pn(project, "release", task)  # one command hands it back
    assert isinstance(handed_back, dict)
    assert handed_back["assignee"] is None
    again = pn(project, "claim-next", "--stuck-after", "3")
    assert isinstance(again, dict)
    assert again["id"] == task  # the count starts afresh


def test_the_run_record_has_every_iteration_its_tasks_cost_and_the_stop_reason(
    project: Path, env: dict[str, str], ralph: Run, script: Script, task: str, tmp_path: Path
) -> None:
    record = tmp_path / "runs" / "build-r.jsonl"
    close = (
        "pn claim-next --json > c.json && pn close "
        "$(python3 -c \"import json; print(json.load(open('c.json'))['id'])\") --reason done"
    )
    steps = [["sh", close], ["result", {"total_cost_usd": 0.25, "num_turns": 4}]]
    done = ralph(
        "-a", "--loop-id", "build-r", "--record", str(record), "2", script(default=steps), env=env
    )
    assert done.returncode == 2, done.stdout + done.stderr
    events = [json.loads(line) for line in record.read_text().splitlines()]
    assert [e["event"] for e in events] == [
        "start", "iteration_start", "iteration", "iteration_start", "iteration", "end",
    ]  # fmt: skip
    first = events[2]
    assert (first["claimed"], first["closed"]) == ([task], [task])
    assert (first["cost"], first["turns"], first["exit"]) == (0.25, 4, 0)
    assert events[4]["claimed"] == []  # nothing left to claim
    end = events[-1]
    assert (end["stop_reason"], end["exit"], end["iterations"], end["cost"]) == (
        "iterations exhausted", 2, 2, 0.5,
    )  # fmt: skip
    assert end["tasks_closed"] == [task]
    assert "totals: 2 iteration(s), 1 task(s) closed, $0.5000, 30 tokens, " in done.stdout
    assert done.stdout.rstrip().endswith("; stopped: iterations exhausted")


def test_an_error_is_recorded_as_the_stop_reason_with_the_totals(
    project: Path, env: dict[str, str], ralph: Run, script: Script, tmp_path: Path
) -> None:
    record = tmp_path / "runs" / "build-f.jsonl"
    steps = [
        ["rate_limit", {"status": "rejected", "errorCode": "credits_required"}],
        ["result", {"is_error": True, "result": "credit balance too low"}],
    ]
    done = ralph(
        "-a", "--loop-id", "build-f", "--record", str(record), "3", script(default=steps), env=env
    )
    assert done.returncode == 1, done.stdout + done.stderr
    end = json.loads(record.read_text().splitlines()[-1])
    assert end["event"] == "end"
    assert end["exit"] == 1
    assert end["stop_reason"].startswith("error: usage limit that waiting cannot lift")
    # the iteration that started ended too, failed: counted and recorded like any other
    assert "totals: 1 iteration(s)" in done.stdout
    (iteration,) = [json.loads(x) for x in record.read_text().splitlines() if '"iteration"' in x]
    assert iteration["failure"].startswith("usage limit that waiting cannot lift")
    assert end["iterations"] == 1
    assert "; stopped: error: usage limit that waiting cannot lift" in done.stdout


@pytest.mark.parametrize(
    ("why", "args", "steps", "code"),
    [
        (
            "a budget",
            ["--max-cost", "0.001"],
            [["sh", "pn claim-next --json"], ["result", {"total_cost_usd": 0.002}]],
            2,
        ),
        (
            "complete, the task still held",
            [],
            [
                ["sh", "pn claim-next --json"],
                ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
                ["result"],
            ],
            0,
        ),
        (
            "--max-time, ending the iteration like the watchdog",
            ["--max-time", "2s"],
            [["sh", "pn claim-next --json"], ["say", "working"], ["hang"]],
            2,
        ),
        (
            "the watchdog (three times: the breaker opens)",
            ["--idle-timeout", "0.5"],
            [["sh", "pn claim-next --json"], ["hang"]],
            1,
        ),
        (
            "an error",
            [],
            [
                ["sh", "pn claim-next --json"],
                ["rate_limit", {"status": "rejected", "errorCode": "credits_required"}],
                ["result"],
            ],
            1,
        ),
    ],
)
def test_every_other_ending_gives_the_claim_back_too(
    project: Path,
    env: dict[str, str],
    ralph: Run,
    script: Script,
    task: str,
    why: str,
    args: list[str],
    steps: list[list[object]],
    code: int,
) -> None:
    done = ralph("-a", "--loop-id", "build-e", *args, "3", script(default=steps), env=env)
    assert done.returncode == code, (why, done.stdout + done.stderr)
    assert status(project, task) == ("open", None), why
    assert released_by_loop(project, task, "build-e"), why

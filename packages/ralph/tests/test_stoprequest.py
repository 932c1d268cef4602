"""stoprequest.py and `--stop-file`: a stop asked for from outside ends the loop between
iterations, the running iteration finished and its commits landed first; never mid-way."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph.stoprequest import REQUESTED, reason

Run = Callable[..., subprocess.CompletedProcess[str]]
Script = Callable[..., str]
Git = Callable[..., str]
Spawn = Callable[..., "subprocess.Popen[str]"]

GROUP = "budget reached: group budget $0.0500 for 2 loops, $0.0512 spent"


def test_no_file_is_no_request(tmp_path: Path) -> None:
    assert reason(tmp_path / "stop") is None
    assert reason(None) is None


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (f"{GROUP}\nmore\n", GROUP),
        ("", REQUESTED),
        ("  \n", REQUESTED),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("x" * 10_000, "x" * 297 + "..."),
    ],
)
def test_the_first_line_is_the_reason_made_inert_and_short(
    tmp_path: Path, content: str, said: str
) -> None:
    path = tmp_path / "stop"
    path.write_text(content)
    assert reason(path) == said


def test_a_link_a_folder_or_a_fifo_asks_for_the_stop_without_being_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("not a reason to show\n")
    link = tmp_path / "link"
    link.symlink_to(secret)
    folder = tmp_path / "folder"
    folder.mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: an open that blocked would hang the loop
    assert [reason(p) for p in (link, folder, fifo)] == [REQUESTED] * 3


def ends(record: Path) -> list[dict[str, object]]:
    events = [json.loads(line) for line in record.read_text().splitlines()]
    return [e for e in events if e["event"] == "end"]


@pytest.mark.process
def test_a_stop_asked_for_during_an_iteration_lets_it_finish_and_land(
    ralph: Run, script: Script, project: Path, remote: Path, git: Git, tmp_path: Path
) -> None:
    stop, record = tmp_path / "loop.stop", tmp_path / "run.jsonl"
    # the stop arrives while the agent works: it still commits and ends its turn as usual
    steps = [
        ["commit", "a.txt", "feat: first"],
        ["write", str(stop), GROUP],
        ["commit", "b.txt", "feat: second"],
        ["result"],
    ]
    done = ralph(
        "-a", "--stop-file", str(stop), "--record", str(record), "5", script(default=steps)
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Iteration 2" not in done.stdout
    assert "interrupted" not in done.stdout.lower()
    assert f"warning: stopping before iteration 2: {GROUP}" in done.stderr + done.stdout
    assert f"stopped: {GROUP}" in done.stdout  # the totals line
    subjects = git(project, "log", "--format=%s", "-2", "main").splitlines()
    assert subjects == ["feat: second", "feat: first"]  # landed on the branch, and pushed
    assert git(remote, "log", "-1", "--format=%s", "main") == "feat: second"
    [end] = ends(record)
    assert (end["exit"], end["stop_reason"], end["iterations"]) == (2, GROUP, 1)


@pytest.mark.process
def test_a_stop_asked_for_during_a_usage_limit_wait_ends_the_wait_without_a_retry(
    project: Path,
    ralph_env: dict[str, str],
    script: Script,
    spawn_ralph: Spawn,
    tmp_path: Path,
) -> None:
    stop, count = tmp_path / "loop.stop", tmp_path / "agent-runs"
    steps = [["rate_limit", {"status": "rejected", "resets_in": 3600}], ["result"]]
    env = {**ralph_env, "FAKE_AGENT_COUNT": str(count)}
    ralph = spawn_ralph(project, env, "-a", "--stop-file", str(stop), "3", script(default=steps))
    assert ralph.stdout is not None
    for line in ralph.stdout:
        if "waiting" in line:
            break
    stop.write_text(GROUP + "\n")
    out, err = ralph.communicate(timeout=60)
    assert ralph.returncode == 2, out + err
    assert f"stopped waiting: {GROUP}" in out + err
    assert "retrying the same iteration" not in out
    assert count.read_text() == "1"  # the agent never ran again

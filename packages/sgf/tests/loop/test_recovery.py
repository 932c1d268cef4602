"""Pre-launch recovery with real git, real pn and real PID files: nothing is ever destroyed,
and the human's tree is the human's (agents work in workspaces of their own)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Git = Callable[..., str]
Spawn = Callable[..., "subprocess.Popen[str]"]


def make_mess(project: Path) -> None:
    """Uncommitted work of every kind: modified, staged, untracked, and an ignored file."""
    (project / "README.md").write_text("# project\nhalf-done edit\n")
    (project / "staged.txt").write_text("staged\n")
    subprocess.run(["git", "add", "staged.txt"], cwd=project, check=True)
    (project / "src").mkdir()
    (project / "src" / "new.py").write_text("print('new')\n")
    (project / ".sgf/logs").mkdir(exist_ok=True)
    (project / ".sgf/logs/keep.log").write_text("ignored, untouched\n")


def test_a_crashed_loops_pid_file_is_removed_its_claim_released_and_the_tree_left_alone(
    project: Path, sgf: Run, git: Git, fake_ralph: Any, tool_env: dict[str, str], dead_pid: int
) -> None:
    crashed = "build-20260101T000000"
    run_dir = project / ".sgf/run"
    run_dir.mkdir(parents=True)
    (run_dir / f"{crashed}.pid").write_text(f"{dead_pid}\n")
    task = pn(project, tool_env, "create", "half-done task", "-t", "task")["id"]
    other = pn(project, tool_env, "create", "untouched", "-t", "task")["id"]
    pn(project, tool_env, "update", task, "--claim")
    make_mess(project)

    done = sgf(project, "build", "-a", env=fake_ralph.env())

    assert done.returncode == 0, done.stderr
    assert f"recovered from crashed loop {crashed}" in done.stderr
    assert "stashed" not in done.stderr
    assert f"released claims {task}" in done.stderr
    assert git(project, "stash", "list") == ""  # the human's own work: theirs, in place
    # --branch puts a header first, so no status line loses its leading space to strip()
    assert set(git(project, "status", "--porcelain", "--branch").splitlines()[1:]) == {
        " M README.md", "A  staged.txt", "?? src/", "?? .pensa/uncommitted",
    }  # fmt: skip
    assert (project / ".sgf/logs/keep.log").read_text() == "ignored, untouched\n"
    assert not (run_dir / f"{crashed}.pid").exists()
    assert pn(project, tool_env, "show", task)["status"] == "open"
    assert pn(project, tool_env, "show", other)["status"] == "open"
    history = (project / ".sgf/logs/history.jsonl").read_text().splitlines()
    assert json.loads(history[0])["loop_id"] == crashed
    assert json.loads(history[0])["outcome"] == "crashed"


def test_recovery_releases_the_crashed_loops_claims_by_assignee_and_leaves_other_loops(
    project: Path, sgf: Run, fake_ralph: Any, tool_env: dict[str, str], dead_pid: int
) -> None:
    crashed = "build-20260101T000000"
    run_dir = project / ".sgf/run"
    run_dir.mkdir(parents=True)
    pid_file = run_dir / f"{crashed}.pid"
    pid_file.write_text(f"{dead_pid}\n")
    ids = {}
    for actor in (crashed, "issues-plan-20260101T000000", "Test User"):
        ids[actor] = pn(project, tool_env, "create", f"held by {actor}", "-t", "task")["id"]
        pn(project, {**tool_env, "PN_ACTOR": actor}, "update", ids[actor], "--claim")
    # As if the loop had started after every claim was made: only its own claim is its.
    later = time.time() + 3600
    os.utime(pid_file, (later, later))

    done = sgf(project, "build", "-a", env=fake_ralph.env())

    assert done.returncode == 0, done.stderr
    assert f"released claims {ids[crashed]}" in done.stderr
    status = {actor: pn(project, tool_env, "show", i)["status"] for actor, i in ids.items()}
    assert status == {
        crashed: "open",
        "issues-plan-20260101T000000": "in_progress",  # another loop's: not this crash's
        "Test User": "in_progress",  # claimed before the crashed loop started
    }


def test_a_claim_by_another_loop_made_during_the_crashed_loop_is_not_released(
    project: Path, sgf: Run, fake_ralph: Any, tool_env: dict[str, str], dead_pid: int
) -> None:
    run_dir = project / ".sgf/run"
    run_dir.mkdir(parents=True)
    (run_dir / "build-20260101T000000.pid").write_text(f"{dead_pid}\n")
    other = "issues-plan-20260101T000000"
    task = pn(project, tool_env, "create", "planned elsewhere", "-t", "task")["id"]
    pn(project, {**tool_env, "PN_ACTOR": other}, "update", task, "--claim")

    done = sgf(project, "build", "-a", env=fake_ralph.env())

    assert done.returncode == 0, done.stderr
    assert "released claims" not in done.stderr
    assert pn(project, tool_env, "show", task)["assignee"] == other


def test_a_live_loop_means_nothing_is_touched(
    project: Path, sgf: Run, git: Git, fake_ralph: Any, tool_env: dict[str, str]
) -> None:
    live = "issues-plan-20260101T000000"
    run_dir = project / ".sgf/run"
    run_dir.mkdir(parents=True)
    (run_dir / f"{live}.pid").write_text(f"{os.getpid()}\n")  # this test process: alive
    task = pn(project, tool_env, "create", "theirs", "-t", "task")["id"]
    pn(project, tool_env, "update", task, "--claim")
    make_mess(project)
    before = git(project, "status", "--porcelain")

    done = sgf(project, "build", "-a", env=fake_ralph.env())

    assert done.returncode == 0, done.stderr
    # one line: it runs beside the live loop, which the line names
    assert f"sgf: loop {live} is running in this project; this one runs beside" in done.stderr
    assert git(project, "stash", "list") == ""
    assert git(project, "status", "--porcelain") == before
    assert (run_dir / f"{live}.pid").exists()
    assert pn(project, tool_env, "show", task)["status"] == "in_progress"
    assert fake_ralph.record.exists()  # launched alongside the live loop


def test_a_dirty_tree_is_no_reason_to_refuse_a_launch(
    project: Path, sgf: Run, git: Git, fake_ralph: Any
) -> None:
    """The agent works in a workspace of its own: it never sees, nor commits, these."""
    make_mess(project)
    before = git(project, "status", "--porcelain")
    done = sgf(project, "build", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    assert fake_ralph.record.exists()
    assert git(project, "status", "--porcelain") == before
    assert git(project, "stash", "list") == ""


def test_stash_flag_stashes_the_users_changes_under_the_loop_id(
    project: Path, sgf: Run, git: Git, fake_ralph: Any
) -> None:
    make_mess(project)
    done = sgf(project, "build", "--stash", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    loop_id = fake_ralph.calls()["argv"][fake_ralph.calls()["argv"].index("--loop-id") + 1]
    (entry,) = git(project, "stash", "list").splitlines()
    assert entry.endswith(f"sgf-stash {loop_id}")
    assert f"stashed as 'sgf-stash {loop_id}'" in done.stderr
    assert git(project, "status", "--porcelain") == ""


def test_sgf_killed_hard_leaves_a_stale_pid_file_that_the_next_launch_recovers(
    project: Path, sgf: Run, git: Git, fake_ralph: Any, spawn_sgf: Spawn, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    child = spawn_sgf(project, "build", "-a", env=fake_ralph.env(FAKE_RALPH_READY=str(ready)))
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    (project / "agent-work.txt").write_text("uncommitted agent work\n")
    child.kill()  # sgf dies without clean-up: a crash
    child.communicate(timeout=30)
    # ralph is not orphaned: Linux sends it SIGTERM when its parent dies (PR_SET_PDEATHSIG).
    deadline = time.monotonic() + 30
    while fake_ralph.calls()["signals"] != ["SIGTERM"]:
        assert time.monotonic() < deadline, fake_ralph.calls()
        time.sleep(0.02)
    (pid_file,) = (project / ".sgf/run").glob("*.pid")
    assert int(pid_file.read_text().split()[0]) == child.pid

    ready.unlink()
    done = sgf(project, "verify", env=fake_ralph.env())

    assert done.returncode == 0, done.stderr
    assert f"recovered from crashed loop {pid_file.stem}" in done.stderr
    assert not pid_file.exists()
    assert (project / "agent-work.txt").is_file()  # no agent works here: it is the human's


@pytest.mark.parametrize("content", ["", "garbage"])
def test_an_unreadable_pid_file_counts_as_stale(
    project: Path, sgf: Run, fake_ralph: Any, content: str
) -> None:
    run_dir = project / ".sgf/run"
    run_dir.mkdir(parents=True)
    (run_dir / "test-20260101T000000.pid").write_text(content)
    done = sgf(project, "test", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    assert "recovered from crashed loop test-20260101T000000" in done.stderr
    assert list(run_dir.glob("*.pid")) == []


def test_a_pid_file_whose_pid_now_belongs_to_another_process_is_a_crashed_loop(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    """After a reboot the PID in a dead loop's file may name a live process; its
    start time tells them apart, so recovery runs instead of waiting forever."""
    from ralph.shared import pids

    run_dir = project / ".sgf/run"
    run_dir.mkdir(parents=True)
    me = os.getpid()  # alive, but not the process that wrote the file
    start = pids.start_time(me)
    assert start is not None
    (run_dir / "build-20260101T000000.pid").write_text(f"{me} {start - 1}\n")
    done = sgf(project, "build", "-a", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    assert "recovered from crashed loop build-20260101T000000" in done.stderr
    assert not (run_dir / "build-20260101T000000.pid").exists()
    # The same PID with its true start time is a live loop, and recovery leaves it alone.
    (run_dir / "verify-20260101T000000.pid").write_text(f"{me} {start}\n")
    again = sgf(project, "build", "-a", env=fake_ralph.env())
    assert "loop verify-20260101T000000 is running in this project" in again.stderr


def test_stashing_protected_changes_on_request_says_to_review_them(
    project: Path, sgf: Run, git: Git, fake_ralph: Any
) -> None:
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text("an agent's hook\n")
    done = sgf(project, "build", "--stash", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    assert "protected paths (.claude/settings.json)" in done.stderr
    assert "git stash pop" not in done.stderr


def test_the_config_s_protected_paths_reach_ralph_as_protect(
    project: Path, sgf: Run, git: Git, fake_ralph: Any
) -> None:
    with (project / ".sgf" / "config.toml").open("a") as config:
        config.write('protected = ["ci/", "Makefile"]\n')
    git(project, "commit", "-qam", "protect paths")
    done = sgf(project, "build", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    argv = fake_ralph.calls()["argv"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--protect"] == ["ci/", "Makefile"]

"""A stopped loop's leftovers are kept the crash's way, so the next launch needs no flag."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sgf.loopstate import LoopRow, State
from sgf.top import control

from .conftest import SGF

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Git = Callable[..., str]
Spawn = Callable[..., "subprocess.Popen[str]"]

LEFT = "half-done.py,README.md"  # one untracked file, one tracked file changed


def assert_kept_and_restorable(project: Path, git: Git, err: str, readme: str) -> None:
    """The tree is clean, one `sgf-recovery` stash holds both changes, and the line said so."""
    assert git(project, "status", "--porcelain") == ""
    stashes = git(project, "stash", "list").splitlines()
    assert len(stashes) == 1
    assert "sgf-recovery build-" in stashes[0]
    kept = [line for line in err.splitlines() if "kept as stash" in line]
    assert len(kept) == 1
    assert "git stash pop" in kept[0]
    git(project, "stash", "pop")
    assert (project / "half-done.py").read_text() == "left by an interrupted iteration\n"
    assert (project / "README.md").read_text() == readme + "left by an interrupted iteration\n"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signalled_loops_leftovers_are_stashed_and_the_next_launch_needs_no_flag(
    project: Path,
    sgf: Run,
    spawn_sgf: Spawn,
    fake_ralph: Any,
    git: Git,
    tmp_path: Path,
    sig: signal.Signals,
    wait_for: Callable[..., None],
) -> None:
    readme = (project / "README.md").read_text()
    ready = tmp_path / "ready"
    env = fake_ralph.env(FAKE_RALPH_READY=str(ready), FAKE_RALPH_LEAVE=LEFT)
    child = spawn_sgf(project, "build", "-a", env=env)
    wait_for(ready.exists, 30, f"{ready} to appear")
    child.send_signal(sig)
    _out, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert list((project / ".sgf/run").glob("*.pid")) == []

    again = sgf(project, "build", "-a", env=fake_ralph.env())
    assert again.returncode == 0, again.stderr
    assert_kept_and_restorable(project, git, err, readme)


def test_a_budget_stop_keeps_the_leftovers_too(
    project: Path, sgf: Run, fake_ralph: Any, git: Git
) -> None:
    readme = (project / "README.md").read_text()
    done = sgf(
        project, "build", "-a", env=fake_ralph.env(FAKE_RALPH_EXIT="2", FAKE_RALPH_LEAVE=LEFT)
    )
    assert done.returncode == 2, done.stderr
    again = sgf(project, "build", "-a", env=fake_ralph.env())
    assert again.returncode == 0, again.stderr
    assert_kept_and_restorable(project, git, done.stderr, readme)


def test_a_stop_leaves_the_tree_alone_while_another_loop_of_it_runs(
    project: Path, sgf: Run, fake_ralph: Any, git: Git
) -> None:
    # this test process stands in for a second loop, running in the same tree
    (project / ".sgf/run").mkdir(parents=True, exist_ok=True)
    (project / ".sgf/run/verify-20260101T000000.pid").write_text(f"{os.getpid()}\n")
    done = sgf(
        project, "build", "-a", env=fake_ralph.env(FAKE_RALPH_EXIT="130", FAKE_RALPH_LEAVE=LEFT)
    )
    assert done.returncode == 130, done.stderr
    assert git(project, "stash", "list") == ""
    assert (project / "half-done.py").exists()
    assert "kept as stash" not in done.stderr


def test_stop_then_restart_in_sgf_top_needs_no_flag(
    project: Path,
    spawn_sgf: Spawn,
    fake_ralph: Any,
    git: Git,
    tmp_path: Path,
    tool_env: dict[str, str],
    wait_for: Callable[..., None],
) -> None:
    ready = tmp_path / "ready"
    env = fake_ralph.env(FAKE_RALPH_READY=str(ready), FAKE_RALPH_LEAVE=LEFT)
    child = spawn_sgf(project, "build", "-a", "3", env=env)
    wait_for(ready.exists, 30, f"{ready} to appear")
    loop_id = next((project / ".sgf/run").glob("*.pid")).stem
    row = LoopRow(project, loop_id, "build", None, State.RUNNING, pid=child.pid)
    control.stop(row)  # `s`
    _out, err = child.communicate(timeout=30)
    assert child.returncode == 130, err

    stopped = LoopRow(project, loop_id, "build", None, State.STOPPED)
    again, output = control.restart(stopped, sgf=[str(SGF)], env={**tool_env, **fake_ralph.env()})
    assert again.wait(timeout=60) == 0, output.read_text()  # `r`
    assert len(git(project, "stash", "list").splitlines()) == 1


def test_the_trackers_files_are_neither_stashed_nor_refused(
    project: Path, sgf: Run, fake_ralph: Any, git: Git
) -> None:
    """Every pn write rewrites and stages `.pensa/*.jsonl` (ralph's release as the loop ends
    too): they are the tracker's, so they stay, and they never stop a launch."""
    tracker = project / ".pensa" / "issues.jsonl"
    assert git(project, "ls-files", ".pensa/issues.jsonl")  # sgf init's pn init tracks it
    left = f"{LEFT},.pensa/issues.jsonl"
    done = sgf(
        project, "build", "-a", env=fake_ralph.env(FAKE_RALPH_EXIT="130", FAKE_RALPH_LEAVE=left)
    )
    assert done.returncode == 130, done.stderr
    assert git(project, "status", "--porcelain") == "M .pensa/issues.jsonl"
    assert tracker.read_text().endswith("left by an interrupted iteration\n")
    kept = git(project, "show", "--name-only", "--format=", "stash@{0}")
    assert ".pensa/issues.jsonl" not in kept

    again = sgf(project, "build", "-a", env=fake_ralph.env())
    assert again.returncode == 0, again.stderr

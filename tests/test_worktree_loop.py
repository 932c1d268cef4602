"""`sgf build --worktree` (issue 14): the loop works in `.sgf/worktrees/<loop-id>`, its
commits reach the main checkout's branch, and its worktree and branch go when it ends."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.loops_harness import Loops, make


@pytest.fixture
def loops(tmp_path: Path) -> Loops:
    return make(tmp_path, os.environ)


def test_a_worktree_loop_brings_every_closing_commit_to_main_and_cleans_up(loops: Loops) -> None:
    tasks = loops.seed(3)
    (loops.root / "notes.txt").write_text("the developer's uncommitted notes\n")
    done = loops.sgf("build", "-a", "--worktree", "--no-push", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "loop complete" in done.stderr
    [loop_id] = [p.stem for p in (loops.root / ".sgf" / "logs").glob("build-*.log")]
    assert f"worktree .sgf/worktrees/{loop_id} and branch sgf/{loop_id} removed" in done.stderr
    subjects = [s for s, _, _ in loops.commits()]
    assert sorted(s.split("]")[0].lstrip("[") for s in subjects if s.startswith("[")) == sorted(
        tasks
    )
    assert {i: loops.issues()[i]["status"] for i in tasks} == dict.fromkeys(tasks, "closed")
    assert {i: loops.committed_issues()[i]["status"] for i in tasks} == dict.fromkeys(
        tasks, "closed"
    )
    for task in tasks:  # the main checkout's tree followed its branch
        assert (loops.root / "work" / f"{task}.txt").read_text().endswith(f"by {loop_id}\n")
    assert loops.git("status", "--porcelain") == "?? notes.txt"  # untouched, not swept up
    assert loops.worktrees() == [str(loops.root)]
    assert loops.loop_branches() == []


def test_config_isolation_worktree_isolates_without_the_flag(tmp_path: Path) -> None:
    loops = make(tmp_path, os.environ, isolation="worktree")
    loops.seed(1)
    (loops.root / "notes.txt").write_text("dirty, yet the loop starts\n")
    done = loops.sgf("build", "-a", "--no-push", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "and branch sgf/build-" in done.stderr
    assert loops.pn("ready") == []


def test_a_shared_tree_loop_still_refuses_a_dirty_tree_and_names_worktree(loops: Loops) -> None:
    loops.seed(1)
    (loops.root / "notes.txt").write_text("dirty\n")
    done = loops.sgf("build", "-a", "--no-push", "3")
    assert done.returncode == 1
    assert "--worktree" in done.stderr


def test_an_unknown_isolation_is_a_config_error(tmp_path: Path) -> None:
    loops = make(tmp_path, os.environ, isolation="container")
    done = loops.sgf("build", "-a", "1")
    assert done.returncode == 1
    assert 'isolation must be "shared" or "worktree"' in done.stderr


def test_a_crashed_worktree_loop_keeps_its_unmerged_branch_and_leaves_the_tree_alone(
    loops: Loops,
) -> None:
    crashed = "build-20260101T000000"
    path = loops.root / ".sgf" / "worktrees" / crashed
    loops.git(
        "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "-b", f"sgf/{crashed}", str(path)
    )
    (path / "half.txt").write_text("committed before the crash\n")
    loops.git("add", "half.txt", cwd=path)
    loops.git("-c", "core.hooksPath=/dev/null", "commit", "-qm", "half", cwd=path)
    (path / "left.txt").write_text("uncommitted when it crashed\n")
    child = subprocess.Popen(["true"])
    child.wait()
    run = loops.root / ".sgf" / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / f"{crashed}.pid").write_text(f"{child.pid}\n")
    (loops.root / "notes.txt").write_text("the developer's\n")
    done = loops.sgf("build", "-a", "--worktree", "--no-push", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"branch sgf/{crashed} holds 1 commit(s) that main lacks: kept" in done.stderr
    assert (path / "left.txt").is_file()
    assert loops.git("stash", "list") == ""  # neither the worktree nor the tree was stashed
    assert (loops.root / "notes.txt").is_file()
    assert loops.loop_branches() == [f"sgf/{crashed}"]

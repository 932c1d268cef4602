"""Every loop's agent works in a repository of its own (ralph's workspace): its commits reach
the branch the project has checked out, the developer's tree is never swept into them, and a
loop whose ralph was killed loses nothing: the next launch brings its workspace back."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e_harness.tracker import touches_issues
from tests.loops_harness import Loops, make

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


@pytest.fixture
def loops(tmp_path: Path) -> Loops:
    return make(tmp_path, os.environ)


def test_a_loop_brings_every_closing_commit_to_main_and_leaves_the_tree_alone(
    loops: Loops,
) -> None:
    tasks = loops.seed(3)
    (loops.root / "notes.txt").write_text("the developer's uncommitted notes\n")
    done = loops.sgf("build", "-a", "--no-push", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "loop complete" in done.stderr
    [loop_id] = [p.stem for p in (loops.root / ".sgf" / "logs").glob("build-*.log")]
    subjects = [s for s, _, _ in loops.commits()]
    closed = sorted(s.split("]")[0].lstrip("[") for s in subjects if s.startswith("["))
    assert closed == sorted(tasks)
    assert {i: loops.issues()[i]["status"] for i in tasks} == dict.fromkeys(tasks, "closed")
    for task in tasks:  # the checkout's tree followed its branch
        assert (loops.root / "work" / f"{task}.txt").read_text().endswith(f"by {loop_id}\n")
    assert loops.git("status", "--porcelain") == "?? notes.txt"  # untouched, not swept up
    assert loops.worktrees() == [str(loops.root)]
    assert loops.loop_branches() == []
    assert loops.git("stash", "list") == ""  # the agent left nothing uncommitted


def test_a_commit_made_without_hooks_lands_with_pensas_files_and_without_its_marker(
    loops: Loops,
) -> None:
    """An agent whose git runs no hook (gemini-cli's shell tool empties core.hooksPath)
    commits pn's marker instead of pensa's export. The workspace finishes the iteration's last
    commit as pensa's pre-commit hook would: the close travels with the work, the marker never
    lands (the checkout has it untracked, which would block the landing), and nothing the
    agent wrote is lost."""
    [task] = loops.seed(1)
    loops.env["BUILDER_NO_HOOKS"] = "1"
    done = loops.sgf("build", "-a", "--no-push", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wait on sgf/" not in done.stdout + done.stderr
    [files] = [f for s, _, f in loops.commits() if s.startswith(f"[{task}]")]
    assert f"work/{task}.txt" in files, files
    assert ".pensa/uncommitted" not in files, files
    assert touches_issues(files), files
    assert loops.committed_issues()[task]["status"] == "closed"
    assert loops.git("status", "--porcelain") == ""
    assert loops.loop_branches() == []


@pytest.mark.parametrize("how", [["--worktree"], []])
def test_isolation_flags_of_old_are_still_taken(tmp_path: Path, how: list[str]) -> None:
    """Every loop is isolated now: `--worktree` and `isolation = "worktree"` change nothing."""
    loops = make(tmp_path, os.environ, **({} if how else {"isolation": "worktree"}))
    loops.seed(1)
    done = loops.sgf("build", "-a", "--no-push", *how, "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert loops.pn("ready") == []
    assert not (loops.root / ".sgf" / "worktrees").exists()


def test_an_unknown_isolation_is_a_config_error(tmp_path: Path) -> None:
    loops = make(tmp_path, os.environ, isolation="container")
    done = loops.sgf("build", "-a", "1")
    assert done.returncode == 1
    assert 'isolation must be "shared" or "worktree"' in done.stderr


def _ralph_of(sgf: subprocess.Popen[str]) -> int:
    children = Path(f"/proc/{sgf.pid}/task/{sgf.pid}/children").read_text().split()
    [ralph] = [int(c) for c in children if b"ralph" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return ralph


@pytest.mark.parametrize("sgf_too", [False, True])
def test_a_killed_ralphs_workspace_comes_back_and_the_next_launch_needs_no_flag(
    loops: Loops, tmp_path: Path, sgf_too: bool
) -> None:
    """The agent committed once and left a file; `kill -9` ends its ralph (and its sgf, or
    not). Its commit waits on `sgf/<loop-id>`, its file is in the stash, nothing is lost."""
    from ralph import workspace

    loops.seed(2)
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {**loops.env, "BUILDER_HOLD": str(hold)}
    sgf = subprocess.Popen(
        ["sgf", "build", "-a", "--no-push", "5"], cwd=loops.root, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (ready := list(hold.glob("*.ready"))):
            assert sgf.poll() is None, sgf.communicate()
            assert time.monotonic() < deadline, "the loop never held its task"
            time.sleep(0.1)
        loop_id = ready[0].stem
        repo = workspace.folder(loops.root, env) / workspace.stem(loop_id) / "repo"
        # what the agent had done when ralph died: a commit, and a file not yet committed
        (repo / "done.txt").write_text("committed before the kill\n")
        loops.git("add", "done.txt", cwd=repo)
        loops.git("-c", "core.hooksPath=/dev/null", "commit", "-qm", "feat: half", cwd=repo)
        (repo / "left.txt").write_text("uncommitted when ralph died\n")
        os.kill(_ralph_of(sgf), signal.SIGKILL)
        if sgf_too:
            os.kill(sgf.pid, signal.SIGKILL)
        _, err = sgf.communicate(timeout=120)
    finally:
        if sgf.poll() is None:
            sgf.kill()
            sgf.communicate()
    if not sgf_too:  # sgf lived: it brought the workspace back at once
        assert f"recovered the workspace of loop {loop_id}" in err, err
    again = loops.sgf("build", "-a", "--no-push", "5")
    assert again.returncode == 0, again.stdout + again.stderr
    if sgf_too:  # the next launch's ralph did
        assert f"recovered the workspace of loop {loop_id}" in again.stdout, again.stdout
    assert loops.git("log", "-1", "--format=%s", f"sgf/{loop_id}") == "feat: half"
    assert f"sgf-recovery {loop_id} " in loops.git("stash", "list")
    assert loops.git("show", "stash@{0}^3:left.txt") == "uncommitted when ralph died"
    assert not repo.exists()
    assert all(issue["status"] != "in_progress" for issue in loops.issues().values())

"""`sgf build -a N --parallel P`: P isolated loops over one backlog, with
the builder fake agent on the host."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.loops_harness import Loops, make

pytestmark = [pytest.mark.process, pytest.mark.timeout(600)]


@pytest.fixture
def loops(tmp_path: Path) -> Loops:
    return make(tmp_path, os.environ)


def closing_commits(loops: Loops) -> dict[str, list[str]]:
    """Files of each `[<task-id>] ...` commit on main, by task id (a task twice fails)."""
    found: dict[str, list[str]] = {}
    for subject, _, files in loops.commits():
        if match := re.match(r"\[(pn-[0-9a-f]+)\]", subject):
            assert match[1] not in found, f"{match[1]} committed twice"
            found[match[1]] = files
    return found


def events(loops: Loops, task: str) -> Counter[str]:
    return Counter(e["event_type"] for e in loops.pn("history", task))


@pytest.mark.parametrize("parallel", [2, 4])
def test_parallel_loops_close_every_task_once_on_main_and_leave_nothing(
    loops: Loops, parallel: int
) -> None:
    tasks = loops.seed(40)
    done = loops.sgf("build", "-a", "--no-push", "--parallel", str(parallel), "40")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    loop_ids = re.findall(r"sgf: \[\d\] (build-\d{8}T\d{6}) \(log", done.stderr)
    assert len(set(loop_ids)) == parallel
    for number in range(1, parallel + 1):
        assert f"[{number}] ralph complete" in done.stdout
    issues = loops.issues()
    for task in tasks:
        assert issues[task]["status"] == "closed"
        assert events(loops, task)["closed"] == 1, task
        assert events(loops, task)["claimed"] == 1, task
    commits = closing_commits(loops)
    assert sorted(commits) == sorted(tasks)  # every closing commit reached main, once
    for task, files in commits.items():
        # a loop commits its own task's file (and the tracker), never another loop's
        assert [f for f in files if not f.startswith(".pensa/")] == [f"work/{task}.txt"]
        closer = loops.pn("show", task)["close_reason"].removeprefix("built by ")
        assert (loops.root / "work" / f"{task}.txt").read_text().endswith(f"by {closer}\n")
    assert {i: s["status"] for i, s in loops.committed_issues("main").items()} == issues_status(
        issues
    )
    assert loops.worktrees() == [str(loops.root)]
    assert loops.loop_branches() == []
    assert list((loops.root / ".sgf" / "run").glob("*.pid")) == []
    assert loops.git("status", "--porcelain") == ""
    for loop_id in loop_ids:  # each has its own log
        assert (loops.root / ".sgf" / "logs" / f"{loop_id}.log").stat().st_size > 0


def test_parallel_loops_integrate_over_uncommitted_tracker_work(loops: Loops) -> None:
    """Four tasks made with `pn create` and never committed: pn leaves no tracked file changed
    (only its untracked marker), so each loop's fast-forward of main goes through and every
    task's work lands on main."""
    tasks = [str(loops.pn("create", f"uncommitted {n}", "-t", "task")["id"]) for n in range(4)]
    assert loops.git("status", "--porcelain") == "?? .pensa/uncommitted"
    done = loops.sgf("build", "-a", "--no-push", "--parallel", "2", "4")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    assert "cannot fast-forward" not in done.stderr
    issues = loops.issues()
    assert [issues[t]["status"] for t in tasks] == ["closed"] * 4
    commits = closing_commits(loops)
    assert sorted(commits) == sorted(tasks)  # each task's work is on main
    for task in tasks:
        assert (loops.root / "work" / f"{task}.txt").is_file()


def issues_status(issues: dict[str, dict[str, object]]) -> dict[str, object]:
    return {i: issue["status"] for i, issue in issues.items()}


def test_a_code_conflict_stops_one_loop_with_its_branch_and_the_other_finishes(
    loops: Loops,
) -> None:
    tasks = loops.seed(6)
    loops.env["BUILDER_SHARED_FILE"] = "shared.txt"  # every task edits this one file
    done = loops.sgf("build", "-a", "--no-push", "--parallel", "2", "10")
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr
    loop_ids = re.findall(r"sgf: \[\d\] (build-\d{8}T\d{6}) \(log", done.stderr)
    stopped = [
        i
        for i in loop_ids
        if f"{i}: ralph stopped: error: the loop's commits conflict" in done.stderr
    ]
    assert len(stopped) == 1, done.stderr
    [loser] = stopped
    [winner] = [i for i in loop_ids if i != loser]
    assert "conflict with main in shared.txt" in done.stderr
    assert f"{winner}: loop complete" in done.stderr
    # nothing lost: the stopped loop's commit waits on its branch
    assert loops.loop_branches() == [f"sgf/{loser}"]
    kept = loops.git("log", "--format=%s", f"main..sgf/{loser}").splitlines()
    assert len(kept) == 1
    assert kept[0].startswith("[pn-")
    kept_task = kept[0][1:12]
    on_main = closing_commits(loops)
    assert sorted([*on_main, kept_task]) == sorted(tasks)
    assert all(loops.issues()[t]["status"] == "closed" for t in tasks)
    assert "rebase" not in loops.git("status")
    assert loops.worktrees() == [str(loops.root)]  # the replays' worktrees are gone


def test_parallel_needs_afk(loops: Loops) -> None:
    done = loops.sgf("build", "--parallel", "2", "3")
    assert done.returncode == 1
    assert "--parallel needs -a" in done.stderr
    assert loops.worktrees() == [str(loops.root)]


def test_status_groups_parallel_loops_and_ctrl_c_stops_them_all(
    loops: Loops, tmp_path: Path
) -> None:
    tasks = loops.seed(4)
    hold = tmp_path / "hold"
    hold.mkdir()
    loops.env["BUILDER_HOLD"] = str(hold)
    sgf = subprocess.Popen(
        ["sgf", "build", "-a", "--no-push", "--parallel", "2", "5"],
        cwd=loops.root,
        env=loops.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(list(hold.glob("*.ready"))) < 2:
            assert sgf.poll() is None, sgf.communicate()
            assert time.monotonic() < deadline, "the loops never held their tasks"
            time.sleep(0.1)
        status = loops.json_of("sgf", "status", "--json")
        running = status["running"]
        assert len(running) == 2
        assert {r["group"] for r in running} == {min(r["loop_id"] for r in running)}
        held = {r["task"] for r in running}
        assert held <= set(tasks)
        assert len(held) == 2
        sgf.send_signal(signal.SIGINT)
        out, err = sgf.communicate(timeout=60)
    finally:
        if sgf.poll() is None:
            sgf.kill()
            sgf.communicate()
    assert sgf.returncode == 130, err
    assert out.count("Interrupted.") == 2, out
    assert err.count("interrupted: the loop was stopped") == 2
    assert [i for i, issue in loops.issues().items() if issue["status"] != "open"] == []
    assert list((loops.root / ".sgf" / "run").glob("*.pid")) == []
    assert loops.worktrees() == [str(loops.root)]  # nothing committed: merged, removed
    assert loops.loop_branches() == []

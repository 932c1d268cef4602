"""integrate.py: a worktree loop's commits reach the target branch, or stay on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph import gitdirs
from ralph.integrate import IntegrationConflict, IntegrationFailed, Integrator, Target, locked

Run = Callable[..., subprocess.CompletedProcess[str]]
Script = Callable[..., str]
Git = Callable[..., str]
BIN = Path(sys.executable).parent


@pytest.fixture
def main(project: Path, git: Git, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project set up for pensa (hooks, merge driver), pn on PATH."""
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(["pn", "init"], cwd=project, check=True, capture_output=True)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "pensa")
    return project


@pytest.fixture
def worktree(main: Path, git: Git) -> Path:
    """A loop's worktree as sgf makes it: `.sgf/worktrees/<id>` on `sgf/<id>`, no hooks."""
    (main / ".git" / "info" / "exclude").write_text(".sgf/\n")
    path = main / ".sgf" / "worktrees" / "loop"
    git(
        main, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "-b", "sgf/loop", str(path)
    )
    return path


@pytest.fixture
def loop_env(main: Path, ralph_env: dict[str, str]) -> dict[str, str]:
    return {
        **ralph_env,
        "PATH": os.environ["PATH"],
        "PN_SHARED_DB": str(main / ".pensa" / "db.sqlite"),
        "RALPH_AUTO_PUSH": "false",
        "RALPH_INTEGRATE": "main",
        "RALPH_INTEGRATE_CHECKOUT": str(main),
    }


def pn(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["pn", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_each_iterations_commits_are_fast_forwarded_into_the_main_checkout(
    main: Path, worktree: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    steps = {
        "_1": [["commit", "one.txt", "feat: one"], ["result"]],
        "_2": [["commit", "two.txt", "feat: two"], ["write", ".ralph-complete", "$RALPH_LOOP_ID"]],
    }
    done = ralph("-a", "--loop-id", "loop", "3", script(**steps), env=loop_env, cwd=worktree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("main fast-forwarded to") == 2
    assert git(main, "log", "--format=%s", "-3").splitlines() == ["feat: two", "feat: one", "pensa"]
    assert (main / "one.txt").is_file()  # the main checkout's tree followed
    assert (main / "two.txt").is_file()
    assert git(main, "rev-parse", "main") == git(worktree, "rev-parse", "HEAD")
    assert git(main, "status", "--porcelain") == ""


def test_a_code_conflict_stops_the_loop_and_keeps_its_branch(
    main: Path, worktree: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    (main / "README.md").write_text("the human's line\n")
    git(main, "commit", "-qam", "human edit")
    human = git(main, "rev-parse", "HEAD")
    steps = [
        ["sh", "echo the agent line > README.md && git commit -qam 'feat: agent edit'"],
        ["result"],
    ]
    done = ralph("-a", "--loop-id", "loop", "3", script(default=steps), env=loop_env, cwd=worktree)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the loop's commits conflict with main in README.md" in done.stderr
    assert "kept on branch sgf/loop" in done.stderr
    assert "Iteration 2" not in done.stdout
    assert git(main, "rev-parse", "main") == human
    assert git(worktree, "log", "-1", "--format=%s", "sgf/loop") == "feat: agent edit"
    assert (worktree / "README.md").read_text() == "the agent line\n"
    assert "rebase" not in git(worktree, "status")


def test_pensa_files_changed_on_both_sides_merge_through_the_driver(
    main: Path, worktree: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    first = pn(main, "q", "first", "-t", "task")
    second = pn(main, "q", "second", "-t", "task")
    pn(main, "export", "--stage")
    git(main, "commit", "-qm", "two tasks")
    git(worktree, "reset", "-q", "--hard", "main~1")  # the loop's branch predates them
    shared = {k: v for k, v in loop_env.items() if k.startswith("PN_")}
    pn(main, "close", first, "--reason", "done by hand")
    pn(main, "export", "--stage")
    git(main, "commit", "-qm", "close first")
    steps = [
        ["sh", f"pn update {second} --claim && pn close {second} --reason built"],
        ["commit", "built.txt", "feat: second"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
    ]
    done = ralph("-a", "--loop-id", "loop", "1", script(default=steps), env=loop_env, cwd=worktree)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [
        line
        for shard in sorted((main / ".pensa").glob("issues*.jsonl"))
        for line in shard.read_text().splitlines()
    ]
    statuses = {json.loads(line)["id"]: json.loads(line)["status"] for line in lines}
    assert statuses == {first: "closed", second: "closed"}
    assert git(main, "log", "-1", "--format=%s") == "feat: second"
    assert git(main, "status", "--porcelain") == ""
    assert shared  # the loop's pn used the main checkout's database


def test_a_dirty_main_checkout_that_would_be_overwritten_stops_the_loop(
    main: Path, worktree: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    (main / "work.txt").write_text("the human's uncommitted work\n")
    steps = [["commit", "work.txt", "feat: agent's work.txt"], ["result"]]
    done = ralph("-a", "--loop-id", "loop", "2", script(default=steps), env=loop_env, cwd=worktree)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"cannot fast-forward main in {main}" in done.stderr
    assert (main / "work.txt").read_text() == "the human's uncommitted work\n"
    assert git(worktree, "log", "-1", "--format=%s") == "feat: agent's work.txt"


def test_auto_push_pushes_the_target_branch_not_the_loops(
    main: Path,
    worktree: Path,
    remote: Path,
    ralph: Run,
    script: Script,
    loop_env: dict[str, str],
    git: Git,
) -> None:
    steps = [["commit", "one.txt", "feat: one"], ["write", ".ralph-complete", "$RALPH_LOOP_ID"]]
    env = {**loop_env, "RALPH_AUTO_PUSH": "true"}
    done = ralph("-a", "--loop-id", "loop", "1", script(default=steps), env=env, cwd=worktree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "push of main: pushed" in done.stdout
    assert git(remote, "log", "-1", "--format=%s", "main") == "feat: one"
    assert git(remote, "branch", "--list", "sgf/*") == ""


def test_integrate_outside_a_linked_worktree_is_refused(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str]
) -> None:
    done = ralph("-a", "--loop-id", "loop", "1", script(default=[["result"]]), env=loop_env)
    assert done.returncode == 1
    assert "--integrate main needs a linked worktree" in done.stderr


def test_a_target_not_checked_out_anywhere_moves_by_update_ref(
    main: Path, worktree: Path, git: Git
) -> None:
    git(main, "branch", "-q", "trunk")
    (worktree / "x.txt").write_text("x")
    git(worktree, "add", "x.txt")
    git(worktree, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "x")
    layout = gitdirs.find(worktree)
    assert layout is not None
    done = Integrator(layout, Target("trunk", gitdirs.find(main)), env=None).run()
    assert done is not None
    assert done.commits == 1
    assert git(main, "rev-parse", "trunk") == git(worktree, "rev-parse", "HEAD")
    assert git(main, "rev-parse", "main") != done.head  # the checked-out branch stayed


def test_a_conflict_in_the_library_leaves_no_rebase_behind(
    main: Path, worktree: Path, git: Git
) -> None:
    (main / "README.md").write_text("main\n")
    git(main, "commit", "-qam", "main")
    (worktree / "README.md").write_text("loop\n")
    git(worktree, "-c", "core.hooksPath=/dev/null", "commit", "-qam", "loop")
    before = git(worktree, "rev-parse", "HEAD")
    layout = gitdirs.find(worktree)
    assert layout is not None
    with pytest.raises(IntegrationConflict):
        Integrator(layout, Target("main", gitdirs.find(main)), env=None).run()
    assert git(worktree, "rev-parse", "HEAD") == before


def test_the_lock_times_out_while_another_loop_holds_it(tmp_path: Path) -> None:
    with (
        locked(tmp_path, timeout=1),
        pytest.raises(IntegrationFailed, match="another loop held"),
        locked(tmp_path, timeout=0),
    ):
        pass


def test_a_busy_main_checkout_is_tried_again_not_taken_for_a_refusal(
    main: Path, worktree: Path, git: Git
) -> None:
    (worktree / "x.txt").write_text("x")
    git(worktree, "add", "x.txt")
    git(worktree, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "x")
    (main / ".git" / "index.lock").write_text("")  # a commit in progress there
    layout = gitdirs.find(worktree)
    assert layout is not None
    integrator = Integrator(layout, Target("main", gitdirs.find(main)), env=None, tries=2)
    with pytest.raises(IntegrationFailed, match="after 2 tries"):
        integrator.run()
    (main / ".git" / "index.lock").unlink()
    done = integrator.run()
    assert done is not None
    assert git(main, "rev-parse", "main") == done.head

"""integrate.py and publish.py: a loop's commits land on the target branch, by the host, or
wait on the loop's own branch; nothing is aborted, reset or checked out that ralph did not
make."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph import publish
from ralph.integrate import IntegrationConflict, Lane

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

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
def loop_env(main: Path, ralph_env: dict[str, str]) -> dict[str, str]:
    return {**ralph_env, "PATH": os.environ["PATH"], "RALPH_AUTO_PUSH": "false"}


def pn(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["pn", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit_in(repo: Path, git: Git, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def test_each_iterations_commits_are_fast_forwarded_into_the_checkout(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    steps = {
        "_1": [["commit", "one.txt", "feat: one"], ["result"]],
        "_2": [["commit", "two.txt", "feat: two"], ["write", ".ralph-complete", "$RALPH_LOOP_ID"]],
    }
    done = ralph("-a", "--loop-id", "loop", "3", script(**steps), env=loop_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("main fast-forwarded to") == 2
    assert git(main, "log", "--format=%s", "-3").splitlines() == ["feat: two", "feat: one", "pensa"]
    assert (main / "one.txt").is_file()  # the checkout's tree followed
    assert (main / "two.txt").is_file()
    assert git(main, "status", "--porcelain") == ""
    assert git(main, "branch", "--list", "sgf/*") == ""  # nothing waited: no loop branch


def test_a_branch_that_moved_during_the_iteration_gets_the_commits_replayed(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    human = f"git -C {main} -c core.hooksPath=/dev/null"
    steps = [
        [
            "sh",
            f"echo human > {main}/human.txt && {human} add human.txt && "
            f"{human} commit -qm 'the human meanwhile'",
        ],
        ["commit", "agent.txt", "feat: agent"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
    ]
    done = ralph("-a", "--loop-id", "loop", "1", script(default=steps), env=loop_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(main, "log", "--format=%s", "-3").splitlines() == [
        "feat: agent",
        "the human meanwhile",
        "pensa",
    ]
    assert (main / "agent.txt").is_file()
    assert git(main, "status", "--porcelain") == ""


def test_a_code_conflict_stops_the_loop_and_keeps_its_branch(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    human = f"git -C {main} -c core.hooksPath=/dev/null"
    steps = [
        ["sh", f"echo the human line > {main}/README.md && {human} commit -qam 'human edit'"],
        ["sh", "echo the agent line > README.md && git commit -qam 'feat: agent edit'"],
        ["result"],
    ]
    done = ralph("-a", "--loop-id", "loop", "3", script(default=steps), env=loop_env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the loop's commits conflict with main in README.md" in done.stderr
    assert "kept on branch sgf/loop" in done.stderr
    assert "Iteration 2" not in done.stdout
    assert git(main, "log", "-1", "--format=%s") == "human edit"
    assert git(main, "log", "-1", "--format=%s", "sgf/loop") == "feat: agent edit"
    assert (main / "README.md").read_text() == "the human line\n"
    assert "rebase" not in git(main, "status")
    assert git(main, "worktree", "list").count("\n") == 0  # the replay's worktree is gone


def test_pensa_files_changed_on_both_sides_merge_through_the_driver(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    first = pn(main, "q", "first", "-t", "task")
    second = pn(main, "q", "second", "-t", "task")
    pn(main, "export", "--stage")
    git(main, "commit", "-qm", "two tasks")
    human = f"git -C {main} -c core.hooksPath=/dev/null"
    by_hand = f"pn close {first} --reason 'done by hand' && pn export --stage && "
    by_hand += f"{human} commit -qm 'close first'"
    steps = [
        ["sh", f"pn update {second} --claim && pn close {second} --reason built"],
        [
            "sh",
            f"cd {main} && pn close {first} --reason 'done by hand' && pn export --stage && "
            f"{human} commit -qm 'close first'",
        ],
        ["commit", "built.txt", "feat: second"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
    ]
    done = ralph("-a", "--loop-id", "loop", "1", script(default=steps), env=loop_env)
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


def test_edits_in_the_way_make_the_commits_wait_and_land_once_they_are_gone(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    (main / "work.txt").write_text("the human's uncommitted work\n")
    steps = {
        "_1": [["commit", "work.txt", "feat: agent's work.txt"], ["result"]],
        "_2": [["sh", f"rm {main}/work.txt"], ["commit", "more.txt", "feat: more"], ["result"]],
    }
    done = ralph("-a", "--loop-id", "loop", "2", script(**steps), env=loop_env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the loop's commits wait on sgf/loop" in done.stdout
    assert git(main, "log", "--format=%s", "-3").splitlines() == [
        "feat: more",
        "feat: agent's work.txt",
        "pensa",
    ]
    assert git(main, "branch", "--list", "sgf/*") == ""


def test_commits_still_waiting_at_the_end_stay_on_the_loops_branch(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    (main / "work.txt").write_text("the human's uncommitted work\n")
    steps = [["commit", "work.txt", "feat: agent's work.txt"], ["result"]]
    done = ralph("-a", "--loop-id", "loop", "1", script(default=steps), env=loop_env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1 commit(s) of the loop wait on sgf/loop" in done.stdout
    assert (main / "work.txt").read_text() == "the human's uncommitted work\n"
    assert git(main, "log", "-1", "--format=%s", "sgf/loop") == "feat: agent's work.txt"
    assert git(main, "log", "-1", "--format=%s") == "pensa"


def test_auto_push_pushes_the_target_branch_not_the_loops(
    main: Path, remote: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    steps = [["commit", "one.txt", "feat: one"], ["write", ".ralph-complete", "$RALPH_LOOP_ID"]]
    env = {**loop_env, "RALPH_AUTO_PUSH": "true"}
    done = ralph("-a", "--loop-id", "loop", "1", script(default=steps), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "push of main: pushed" in done.stdout
    assert git(remote, "log", "-1", "--format=%s", "main") == "feat: one"
    assert git(remote, "branch", "--list", "sgf/*") == ""


def test_a_push_the_remote_rejects_costs_one_fetch_and_a_replay(
    main: Path, remote: Path, tmp_path: Path, git: Git
) -> None:
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    commit_in(other, git, "theirs.txt", "theirs\n", "another machine's commit")
    git(other, "push", "-q")
    commit_in(main, git, "ours.txt", "ours\n", "feat: ours")
    (main / "scratch.txt").write_text("the human's uncommitted work\n")
    pushed = publish.push(Lane(main, "main", "loop", env=dict(os.environ)))
    assert pushed.status is publish.PushStatus.REBASED, pushed
    assert git(remote, "log", "--format=%s", "-3", "main").splitlines() == [
        "feat: ours",
        "another machine's commit",
        "pensa",
    ]
    assert git(main, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    assert (main / "theirs.txt").read_text() == "theirs\n"  # the checkout followed
    assert (main / "scratch.txt").read_text() == "the human's uncommitted work\n"
    assert "rebase" not in git(main, "status")


def test_a_target_not_checked_out_moves_by_update_ref(main: Path, git: Git) -> None:
    git(main, "branch", "-q", "trunk")
    git(main, "switch", "-q", "-c", "scratch")
    tip = commit_in(main, git, "x.txt", "x", "x")
    git(main, "switch", "-q", "main")
    landed = Lane(main, "trunk", "loop", env=dict(os.environ)).land(tip)
    assert landed is not None
    assert (landed.commits, landed.waiting) == (1, None)
    assert git(main, "rev-parse", "trunk") == tip
    assert git(main, "rev-parse", "main") != tip  # the checked-out branch stayed


def test_a_conflict_in_the_library_moves_nothing(main: Path, git: Git) -> None:
    git(main, "switch", "-q", "-c", "loop-work")
    loop = commit_in(main, git, "README.md", "loop\n", "loop")
    git(main, "switch", "-q", "main")
    human = commit_in(main, git, "README.md", "main\n", "main")
    with pytest.raises(IntegrationConflict, match=r"README\.md"):
        Lane(main, "main", "loop", env=dict(os.environ)).land(loop)
    assert git(main, "rev-parse", "main") == human
    assert git(main, "rev-parse", "sgf/loop") == loop
    assert git(main, "status", "--porcelain") == ""


def test_a_detached_head_is_refused_before_any_agent_runs(
    main: Path, ralph: Run, script: Script, loop_env: dict[str, str], git: Git
) -> None:
    git(main, "switch", "-q", "--detach")
    done = ralph("-a", "1", script(default=[["result"]]), env=loop_env)
    assert done.returncode == 1
    assert "HEAD is detached" in done.stderr
    assert "Iteration 1" not in done.stdout

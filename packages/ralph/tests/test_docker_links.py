"""A hostile agent in real Docker plants links where ralph writes: nothing is written through.

Each test puts a victim outside the project, lets the fake agent point a link at it from
inside the container, and proves the victim is untouched after ralph's host-side writes
(README "Security model", ralph/safefile.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Git, Script, agent_in, run_ralph

pytestmark = pytest.mark.docker

PRECIOUS = "precious, outside the project\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's outside the project."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text(PRECIOUS)
    return path


def test_a_run_record_replaced_by_a_link_is_refused_and_nothing_written_through(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str, victim: Path
) -> None:
    record = project / "records" / "run.jsonl"
    steps = [["sh", f"rm -f {record} && ln -s {victim} {record}"], ["result"]]
    done = run_ralph(
        project, docker_env, "-a", "--loop-id", loop_id, "--record", str(record), "2",
        script(default=steps),
    )  # fmt: skip
    assert "sh rc=0" in done.stdout  # the agent did plant its link
    assert victim.read_text() == PRECIOUS
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"refusing to write {record}: it is a symbolic link" in done.stderr


def test_a_sentinel_behind_a_linked_folder_is_not_deleted(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str, victim: Path
) -> None:
    """The sentinel glob goes two folders deep and follows links: `escape/.ralph-complete`
    would delete the `.ralph-complete` in whatever folder the agent's link names."""
    theirs = victim.parent / ".ralph-complete"
    theirs.write_text("")  # empty: a sentinel any loop would take as its own
    steps = [
        ["sh", f"ln -s {victim.parent} escape && ln -s {victim.parent} sub/deeper"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    (project / "sub").mkdir()
    done = run_ralph(project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sh rc=0" in done.stdout
    assert "ralph complete after 1 iteration(s)" in done.stdout
    assert theirs.exists()
    assert victim.read_text() == PRECIOUS


def test_a_fifo_planted_as_a_sentinel_does_not_hang_the_loop(
    project: Path, docker_env: dict[str, str], script: Script, loop_id: str
) -> None:
    steps = [
        ["sh", "mkdir -p sub && mkfifo sub/.ralph-complete"],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = run_ralph(
        project, docker_env, "-a", "--loop-id", loop_id, "2", script(default=steps), timeout=90
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ralph complete after 1 iteration(s)" in done.stdout


def test_a_linked_integration_lock_is_refused_and_creates_nothing(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    git: Git,
    tmp_path: Path,
) -> None:
    """A worktree loop's lock lives in the common git directory, which the container writes."""
    linked = tmp_path / "linked"
    git(project, "worktree", "add", "-q", "-b", "side", str(linked))
    agent = agent_in(linked)
    made = tmp_path / "outside-made.txt"  # the lock's O_CREAT would have made it
    lock = project / ".git" / "springfield-integrate.lock"
    steps = [
        ["sh", f"ln -s {made} {lock}"],
        ["commit", "from-worktree.txt", "feat: made in a linked worktree"],
        ["result"],
    ]
    env = {**docker_env, "RALPH_COMMAND": str(agent), "RALPH_AUTO_PUSH": "false"}
    done = run_ralph(
        linked, env, "-a", "--loop-id", loop_id, "--integrate", "main",
        "--integrate-checkout", str(project), "2", script(default=steps),
    )  # fmt: skip
    assert "sh rc=0" in done.stdout, done.stdout + done.stderr
    assert not made.exists()
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"refusing to write {lock}: it is a symbolic link" in done.stdout + done.stderr

"""git.py and auto-push (publish.py), against real repositories and a real bare remote."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph import git as rgit
from ralph import publish
from ralph.integrate import Lane

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

Run = Callable[..., subprocess.CompletedProcess[str]]
Script = Callable[..., str]
Git = Callable[..., str]


def commit(cwd: Path, git: Git, name: str) -> str:
    (cwd / name).write_text(name)
    git(cwd, "add", name)
    git(cwd, "commit", "-q", "-m", f"add {name}")
    return git(cwd, "rev-parse", "HEAD")


def test_head_outside_a_repository_is_none(tmp_path: Path) -> None:
    assert rgit.head(tmp_path) is None


def lane(project: Path) -> Lane:
    return Lane(project, "main", "loop", env=dict(os.environ))


def test_push_without_remote_is_not_an_error(project: Path) -> None:
    assert publish.push(lane(project)).status is publish.PushStatus.NO_REMOTE
    assert publish.ahead(lane(project)) == 0


def test_push_sets_upstream_when_the_branch_has_none(
    project: Path, tmp_path: Path, git: Git
) -> None:
    bare = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(project, "remote", "add", "origin", str(bare))
    assert publish.ahead(lane(project)) == 1
    assert publish.push(lane(project)).status is publish.PushStatus.PUSHED
    assert git(project, "rev-parse", "--abbrev-ref", "@{u}") == "origin/main"
    assert publish.ahead(lane(project)) == 0


def test_rejected_push_replays_onto_the_remote_and_pushes_again(
    project: Path, remote: Path, tmp_path: Path, git: Git
) -> None:
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    theirs = commit(other, git, "theirs.txt")
    git(other, "push", "-q")
    commit(project, git, "ours.txt")
    (project / "dirty.txt").write_text("uncommitted work survives")
    pushed = publish.push(lane(project))
    assert pushed.status is publish.PushStatus.REBASED
    log = git(remote, "log", "--format=%s", "main")
    assert log.splitlines() == ["add ours.txt", "add theirs.txt", "initial"]
    assert git(project, "merge-base", "--is-ancestor", theirs, "HEAD") == ""
    assert (project / "dirty.txt").read_text() == "uncommitted work survives"


def test_a_rejected_push_of_one_commit_remakes_it_on_the_remote_as_it_was(
    project: Path, remote: Path, tmp_path: Path, git: Git
) -> None:
    """The usual round (one commit of the loop's): made again on the remote's tip without a
    worktree, its author, date and message kept, and pushed before the checkout moves."""
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    theirs = commit(other, git, "theirs.txt")
    git(other, "push", "-q")
    (project / "ours.txt").write_text("ours")
    git(project, "add", "ours.txt")
    stamp = "1700000000 +0200"
    env = {"GIT_AUTHOR_NAME": "Agent", "GIT_AUTHOR_EMAIL": "a@x", "GIT_AUTHOR_DATE": stamp}
    subprocess.run(["git", "commit", "-q", "-m", "feat: ours\n\nwith a body"], cwd=project,
                   env={**os.environ, **env}, check=True)  # fmt: skip
    waits: list[float] = []
    pushed = publish.push(lane(project), sleep=waits.append)
    assert pushed.status is publish.PushStatus.REBASED, pushed.detail
    assert waits == []  # one round
    shown = git(remote, "show", "-s", "--date=raw", "--format=%an <%ae> %ad|%B|%P", "main")
    assert shown.strip() == f"Agent <a@x> {stamp}|feat: ours\n\nwith a body\n|{theirs}"
    assert git(remote, "show", "--format=", "--name-only", "main").split() == ["ours.txt"]
    assert git(project, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")


def test_a_conflict_with_the_remote_is_reported_and_nothing_moves(
    project: Path, remote: Path, tmp_path: Path, git: Git
) -> None:
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    (other / "README.md").write_text("theirs\n")
    git(other, "commit", "-qam", "theirs")
    git(other, "push", "-q")
    (project / "README.md").write_text("ours\n")
    git(project, "commit", "-qam", "ours")
    ours = git(project, "rev-parse", "HEAD")
    pushed = publish.push(lane(project))
    assert pushed.failed
    assert "the remote's new commits conflict in README.md" in pushed.detail
    assert "rebase in progress" not in git(project, "status")
    assert git(project, "rev-parse", "HEAD") == ours
    assert git(project, "status", "--porcelain") == ""


def test_identity_comes_from_git_config(project: Path) -> None:
    assert rgit.identity(project) == {
        "GIT_AUTHOR_NAME": "Test User",
        "GIT_COMMITTER_NAME": "Test User",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }


def test_loop_pushes_only_when_head_moved(
    ralph: Run, script: Script, remote: Path, git: Git
) -> None:
    done = ralph(
        "-a",
        "3",
        script(_1=[["result"]], _2=[["commit", "a.txt", "feat: a"], ["result"]], _3=[["result"]]),
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout.count("push of main: pushed") == 1
    assert git(remote, "log", "-1", "--format=%s", "main") == "feat: a"


def test_auto_push_false_pushes_nothing(ralph: Run, script: Script, remote: Path, git: Git) -> None:
    before = git(remote, "rev-parse", "main")
    done = ralph(
        "-a", "--auto-push", "no", "1", script(default=[["commit", "a.txt", "feat: a"], ["result"]])
    )
    assert done.returncode == 2
    assert git(remote, "rev-parse", "main") == before


def test_loop_rebases_over_a_concurrent_commit(
    ralph: Run, script: Script, remote: Path, tmp_path: Path, git: Git
) -> None:
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    commit(other, git, "concurrent.txt")
    git(other, "push", "-q")
    done = ralph("-a", "1", script(default=[["commit", "a.txt", "feat: a"], ["result"]]))
    assert "push of main: pushed after replaying onto the remote" in done.stdout, done.stdout
    assert git(remote, "log", "--format=%s", "main").splitlines()[:2] == [
        "feat: a",
        "add concurrent.txt",
    ]


def test_failed_push_is_a_warning_and_completion_pushes_what_is_left(
    ralph: Run, script: Script, remote: Path, git: Git, project: Path
) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text('#!/bin/sh\n[ -e "$GIT_DIR/open" ] || { echo closed >&2; exit 1; }\n')
    hook.chmod(0o755)
    done = ralph(
        "-a",
        "3",
        script(
            _1=[["commit", "a.txt", "feat: a"], ["result"]],
            _2=[["touch", str(remote / "open")], ["touch", ".ralph-complete"], ["result"]],
        ),
    )
    assert done.returncode == 0, done.stdout
    assert "warning: push of main failed" in done.stdout
    assert git(remote, "log", "-1", "--format=%s", "main") == "feat: a"

"""worktree.py: an isolated loop's checkout is made, and removed only when nothing is lost."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sgf import worktree
from sgf.errors import SgfError

Git = Callable[..., str]


@pytest.fixture
def made(project: Path, tool_env: dict[str, str]) -> worktree.Worktree:
    return worktree.create(project, "build-20260101T000000", env=tool_env)


def test_a_loop_worktree_is_made_from_head_on_its_own_branch(
    project: Path, made: worktree.Worktree, git: Git
) -> None:
    assert made.path == project / ".sgf/worktrees/build-20260101T000000"
    assert (made.branch, made.target) == ("sgf/build-20260101T000000", "main")
    assert git(made.path, "rev-parse", "HEAD") == git(project, "rev-parse", "HEAD")
    assert git(project, "status", "--porcelain") == ""  # the folder ignores itself
    assert not (made.path / ".pensa" / "db.sqlite").exists()  # no hook made a database there
    assert worktree.taken(project, "build-20260101T000000")


def test_finish_stashes_leftovers_then_removes_a_merged_worktree(
    project: Path, made: worktree.Worktree, git: Git
) -> None:
    (made.path / "half-done.txt").write_text("an interrupted iteration's work\n")
    finished = worktree.finish(project, made)
    assert finished.removed
    assert finished.stash is not None
    assert not made.path.exists()
    assert git(project, "branch", "--list", "sgf/*") == ""
    assert "sgf-worktree build-20260101T000000" in git(project, "stash", "list")
    shown = git(project, "show", "--name-only", "--format=", f"{finished.stash}^3")
    assert shown == "half-done.txt"
    assert "stash" in finished.message(project)


def test_finish_keeps_a_branch_main_lacks(project: Path, made: worktree.Worktree, git: Git) -> None:
    (made.path / "work.txt").write_text("committed, never merged\n")
    git(made.path, "add", "work.txt")
    git(made.path, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "work")
    finished = worktree.finish(project, made)
    assert not finished.removed
    assert finished.unmerged == 1
    assert made.path.is_dir()
    assert "holds 1 commit(s) that main lacks: kept" in finished.message(project)


def test_finish_runs_no_git_after_a_planted_commondir(
    project: Path, made: worktree.Worktree, tmp_path: Path
) -> None:
    (project / ".git" / "commondir").write_text(str(tmp_path))
    with pytest.raises(SgfError, match=r"commondir existed; moved to commondir\.quarantined-"):
        worktree.finish(project, made)
    assert not (project / ".git" / "commondir").exists()
    assert made.path.is_dir()


def test_a_detached_head_has_no_branch_to_bring_commits_to(
    project: Path, git: Git, tool_env: dict[str, str]
) -> None:
    git(project, "checkout", "-q", "--detach")
    with pytest.raises(SgfError, match="HEAD is detached"):
        worktree.create(project, "build-20260101T000000", env=tool_env)

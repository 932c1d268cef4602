"""gitdirs.py: a checkout's git directories, its sandbox mounts, and redirected pointers."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph import gitdirs
from ralph.errors import UnsafeRepository

Git = Callable[..., str]
Run = Callable[..., subprocess.CompletedProcess[str]]
Script = Callable[..., str]


@pytest.fixture
def linked(project: Path, tmp_path: Path, git: Git) -> Path:
    """A linked worktree of `project` on its own branch."""
    path = tmp_path / "linked"
    git(project, "worktree", "add", "-q", "-b", "side", str(path))
    return path


def test_a_plain_checkout_protects_config_hooks_and_info(project: Path) -> None:
    layout = gitdirs.find(project / "README.md")
    assert layout == gitdirs.Layout(project, project / ".git", project / ".git")
    assert not layout.linked
    git_dir = project / ".git"
    assert gitdirs.mounts(layout, project=project) == [
        (git_dir, False),
        (git_dir / "config.worktree", True),
        (git_dir / "commondir", True),
        (git_dir / "config", True),
        (git_dir / "hooks", True),
        (git_dir / "info", True),
        (git_dir / "modules", True),
    ]
    assert (git_dir / "modules").is_dir()
    assert (git_dir / "config.worktree").read_bytes() == b""
    # a commondir that leads to its own folder: git behaves as without one, and no agent can
    # plant another over the read-only mount
    assert (git_dir / "commondir").read_text() == ".\n"
    assert gitdirs.find(project) == layout


def test_a_linked_worktree_mounts_the_common_dir_and_its_pointers_read_only(
    project: Path, linked: Path
) -> None:
    layout = gitdirs.find(linked)
    assert layout is not None
    common = (project / ".git").resolve()
    assert layout.linked
    assert layout.common_dir == common
    assert layout.git_dir == common / "worktrees" / "linked"
    assert gitdirs.mounts(layout, project=linked) == [
        (common, False),
        (common / "worktrees" / "linked", False),
        (linked / ".git", True),
        (common / "worktrees" / "linked" / "commondir", True),
        (common / "worktrees" / "linked" / "gitdir", True),
        (common / "worktrees" / "linked" / "config.worktree", True),
        (common / "commondir", True),
        (common / "config", True),
        (common / "hooks", True),
        (common / "info", True),
        (common / "modules", True),
    ]


def test_outside_a_repository_there_is_no_layout(tmp_path: Path) -> None:
    assert gitdirs.find(tmp_path) is None


def test_a_commondir_planted_in_a_repositorys_own_git_dir_is_refused(
    project: Path, tmp_path: Path
) -> None:
    (project / ".git" / "commondir").write_text(str(tmp_path / "evil"))
    with pytest.raises(UnsafeRepository, match=r"\.git/commondir existed.*moved to commondir\."):
        gitdirs.find(project)
    [kept] = (project / ".git").glob("commondir.quarantined-*")
    assert kept.read_text() == str(tmp_path / "evil")
    assert not (project / ".git" / "commondir").exists()
    assert gitdirs.find(project) is not None


def test_a_gitdir_planted_in_a_repositorys_own_git_dir_is_moved_aside(project: Path) -> None:
    (project / ".git" / "gitdir").symlink_to("/nowhere")
    with pytest.raises(UnsafeRepository, match=r"\.git/gitdir existed"):
        gitdirs.find(project)
    assert not (project / ".git" / "gitdir").is_symlink()


@pytest.mark.parametrize("text", ["garbage", "gitdir: /nowhere/at/all"])
def test_a_dot_git_file_that_leads_nowhere_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / ".git").write_text(text + "\n")
    with pytest.raises(UnsafeRepository):
        gitdirs.find(tmp_path)


def test_a_redirected_dot_git_file_is_noticed(linked: Path, tmp_path: Path, git: Git) -> None:
    layout = gitdirs.find(linked)
    assert layout is not None
    gitdirs.unchanged(layout)  # nothing moved: no error
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", str(evil))
    (linked / ".git").write_text(f"gitdir: {evil / '.git'}\n")
    with pytest.raises(UnsafeRepository, match="changed during the iteration"):
        gitdirs.unchanged(layout)


def test_ralph_stops_before_pushing_when_the_agent_redirects_its_git_dir(
    linked: Path, remote: Path, tmp_path: Path, ralph: Run, script: Script, git: Git
) -> None:
    """On the host (--sandbox none) nothing is mounted read-only; the check still stops ralph
    before its push reads the agent's pointer (a docker test proves the mounts)."""
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", str(evil))
    steps = [
        ["commit", "work.txt", "feat: work"],
        ["sh", f"printf 'gitdir: {evil}/.git\\n' > .git"],
        ["result"],
    ]
    done = ralph("-a", "--loop-id", "wt", "2", script(default=steps), cwd=linked)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "changed during the iteration" in done.stderr
    assert "Iteration 2" not in done.stdout
    assert git(remote, "branch", "--list", "side") == ""  # never pushed


def test_a_commondir_planted_in_the_common_dir_of_a_worktree_is_refused(
    project: Path, linked: Path, tmp_path: Path
) -> None:
    layout = gitdirs.find(linked)
    assert layout is not None
    (project / ".git" / "commondir").write_text(str(tmp_path / "evil"))
    with pytest.raises(UnsafeRepository, match="commondir existed"):
        gitdirs.unchanged(layout)


def test_ralph_moves_a_planted_commondir_aside_after_the_iteration_and_stops(
    project: Path, remote: Path, tmp_path: Path, ralph: Run, script: Script, git: Git
) -> None:
    """Where no read-only commondir stands (--sandbox none), the planted one is moved out of
    git's reach before ralph's push, and before the developer's next git, can follow it."""
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    steps = [
        ["commit", "work.txt", "feat: work"],
        ["sh", f"echo {evil} > .git/commondir"],
        ["result"],
    ]
    done = ralph("-a", "--loop-id", "planted", "2", script(default=steps))
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = [line for line in done.stderr.splitlines() if "commondir" in line]
    assert f"{project}/.git/commondir existed" in line
    assert "moved to commondir.quarantined-" in line
    assert not (project / ".git" / "commondir").exists()
    [kept] = (project / ".git").glob("commondir.quarantined-*")
    assert kept.read_text() == f"{evil}\n"
    assert "Iteration 2" not in done.stdout
    assert git(remote, "log", "-1", "--format=%s", "main") != "feat: work"  # never pushed

"""Finding `.pensa/`, and who acts."""

from __future__ import annotations

import os
from pathlib import Path

from pensa import git, project


def test_locate_walks_up_and_stops_at_none(tmp_path: Path) -> None:
    (tmp_path / "a" / ".pensa").mkdir(parents=True)
    assert project.locate(str(tmp_path / "a"), {}) == project.at(tmp_path / "a" / ".pensa")
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    found = project.locate(str(deep), {})
    assert found is not None
    assert found.dir == str(tmp_path / "a" / ".pensa")
    assert project.locate(str(tmp_path), {}) is None


def test_pn_dir_wins_and_may_be_relative(tmp_path: Path) -> None:
    found = project.locate(str(tmp_path), {"PN_DIR": "elsewhere/.pensa"})
    assert found == project.Project(str(tmp_path / "elsewhere" / ".pensa"))


def test_a_new_project_goes_to_the_git_top_level_or_cwd(repo: Path, tmp_path: Path) -> None:
    sub = repo / "x"
    sub.mkdir()
    assert project.locate_or_new(str(sub), {"PATH": "/usr/bin:/bin"}).dir == str(repo / ".pensa")
    outside = tmp_path / "plain"
    outside.mkdir()
    assert project.locate_or_new(str(outside), {"PATH": "/usr/bin:/bin"}).dir == str(
        outside / ".pensa"
    )


def test_actor_resolution_order(repo: Path) -> None:
    env = {"PN_ACTOR": "env-actor", "USER": "user"}
    assert project.actor("flag", str(repo), env) == "flag"
    assert project.actor(None, str(repo), env) == "env-actor"
    isolated = {**os.environ, "USER": "user"}  # conftest's git identity: "Test User"
    assert project.actor(None, str(repo), isolated) == "Test User"
    assert project.actor(None, str(repo), {**isolated, "GIT_CONFIG_GLOBAL": "/dev/null"}) == "user"


def test_hook_detection() -> None:
    assert git.in_commit_hook({"PRE_COMMIT": "1"})
    assert git.in_commit_hook({"GIT_INDEX_FILE": ".git/index.lock"})
    assert not git.in_commit_hook({})

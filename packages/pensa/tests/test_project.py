"""Finding `.pensa/`, and who acts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


@pytest.mark.process
def test_a_new_project_goes_to_the_git_top_level_or_cwd(repo: Path, tmp_path: Path) -> None:
    sub = repo / "x"
    sub.mkdir()
    assert project.locate_or_new(str(sub), {"PATH": "/usr/bin:/bin"}).dir == str(repo / ".pensa")
    outside = tmp_path / "plain"
    outside.mkdir()
    assert project.locate_or_new(str(outside), {"PATH": "/usr/bin:/bin"}).dir == str(
        outside / ".pensa"
    )


@pytest.mark.process
def test_actor_resolution_order(repo: Path) -> None:
    def actor(flag: str | None, env: dict[str, str]) -> str:
        return project.actor_lookup(flag, str(repo), env)()

    env = {"PN_ACTOR": "env-actor", "USER": "user"}
    assert actor("flag", env) == "flag"
    assert actor(None, env) == "env-actor"
    isolated = {**os.environ, "USER": "user"}  # conftest's git identity: "Test User"
    assert actor(None, isolated) == "Test User"
    assert actor(None, {**isolated, "GIT_CONFIG_GLOBAL": "/dev/null"}) == "user"


def test_hook_detection() -> None:
    assert git.in_commit_hook({"PRE_COMMIT": "1"})
    assert git.in_commit_hook({"GIT_INDEX_FILE": ".git/index.lock"})
    assert not git.in_commit_hook({})


@pytest.mark.process
def test_the_actor_lookup_starts_git_at_once_and_answers_the_same_every_time(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[list[str]] = []
    spawn = git.spawn

    def spy(argv: list[str], **kwargs: Any) -> git.Started:
        started.append(list(argv))
        return spawn(argv, **kwargs)

    monkeypatch.setattr(git, "spawn", spy)
    lookup = project.actor_lookup(None, str(repo), {**os.environ, "USER": "user"})
    assert started == [["git", "-C", str(repo), "config", "user.name"]]  # before any answer
    assert lookup() == lookup() == "Test User"
    assert len(started) == 1
    assert project.actor_lookup("flag", str(repo), {})() == "flag"
    assert len(started) == 1  # a flag needs no git


@pytest.mark.process
def test_a_missing_program_answers_127_at_once(tmp_path: Path) -> None:
    started = git.spawn(["no-such-program-here"], env={"PATH": str(tmp_path)}, missing="nope")
    assert started.wait() == git.Done(127, "", "nope") == started.wait()


@pytest.mark.process
def test_a_tracker_write_starts_finding_the_actor_and_the_run_s_end_reaps_git(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pensa.session import Session

    order: list[str] = []
    lookup = project.actor_lookup

    def spy(*args: Any) -> Callable[[], str]:
        order.append("lookup")
        finish = lookup(*args)

        def answered() -> str:
            order.append("answered")
            return finish()

        return answered

    monkeypatch.setattr(project, "actor_lookup", spy)
    env = Session(cwd=str(repo), environ={**os.environ, "PN_ACTOR": ""})
    env.store(write=True)  # `pn sync` writes without an actor: no git for it
    assert order == []
    env.tracker(write=True)
    assert order == ["lookup"]
    env.close()  # the command never asked: the run's end collects git all the same
    assert order == ["lookup", "answered"]

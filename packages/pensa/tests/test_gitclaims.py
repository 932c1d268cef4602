"""PN_CLAIMS=git: claims published through a shared remote, first published wins (issue 14)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import BIN, Pn, git


@pytest.fixture
def remote(tmp_path: Path, repo: Path, pn: Pn, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bare remote holding a pensa project with two ready tasks, `first` before `second`."""
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    assert pn("init").code == 0
    for title in ("first", "second"):
        assert pn("q", title, "-t", "task").code == 0
    assert pn("export", "--stage").code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tasks")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    return bare


def clone(remote: Path, where: Path, pn: Pn) -> Path:
    git(where.parent, "clone", "-q", str(remote), str(where))
    git(where, "config", "user.email", "t@example.com")
    git(where, "config", "user.name", where.name)
    assert pn("init", cwd=where).code == 0
    return where


def on_remote(remote: Path) -> dict[str, tuple[str, str | None]]:
    text = git(remote, "show", "HEAD:.pensa/issues.jsonl")
    records = [json.loads(line) for line in text.splitlines()]
    return {r["title"]: (r["status"], r.get("assignee")) for r in records}


GIT = {"PN_CLAIMS": "git", "PN_CLAIM_BACKOFF": "0"}


def test_a_claim_is_pushed_before_claim_next_answers(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    claimed = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert claimed.code == 0, claimed.err
    assert claimed.json()["title"] == "first"
    assert on_remote(remote)["first"] == ("in_progress", "loop-a")
    assert (
        git(remote, "log", "-1", "--format=%s").strip()
        == f"pn: claim {claimed.json()['id']} by loop-a"
    )
    assert git(a, "status", "--porcelain").strip() == ""


def test_the_machine_that_published_first_keeps_the_task(
    remote: Path, tmp_path: Path, pn: Pn
) -> None:
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)  # b's database still says `first` is ready
    assert pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).code == 0
    got = pn("claim-next", "--json", cwd=b, env={**GIT, "PN_ACTOR": "loop-b"})
    assert got.code == 0, got.err
    assert got.json()["title"] == "second"  # first went to a, who pushed first
    assert on_remote(remote) == {
        "first": ("in_progress", "loop-a"),
        "second": ("in_progress", "loop-b"),
    }
    mine = {i["title"]: i.get("assignee") for i in pn("list", "--json", cwd=b).json()}
    assert mine == {"first": "loop-a", "second": "loop-b"}


def test_out_of_tries_the_claim_is_given_back(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    b = clone(remote, tmp_path / "b", pn)
    assert pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"}).code == 0
    env = {**GIT, "PN_ACTOR": "loop-b", "PN_CLAIM_TRIES": "1"}
    got = pn("claim-next", cwd=b, env=env)
    assert got.code == 1
    assert "could not publish the claim" in got.err
    mine = {i["title"]: i.get("assignee") for i in pn("list", "--json", cwd=b).json()}
    assert mine == {"first": "loop-a", "second": None}


def test_a_branch_without_upstream_is_a_clear_error(repo: Path, pn: Pn) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    assert pn("q", "task", "-t", "task").code == 0
    got = pn("claim-next", env=GIT)
    assert got.code == 1
    assert "this branch has none: `git push -u origin <branch>` once" in got.err


def test_git_claims_refuse_a_shared_database(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    env = {**GIT, "PN_SHARED_DB": str(a / ".pensa" / "db.sqlite")}
    got = pn("claim-next", cwd=a, env=env)
    assert got.code == 1
    assert "run one loop per clone" in got.err


def test_a_remote_out_of_reach_gives_the_claim_back(remote: Path, tmp_path: Path, pn: Pn) -> None:
    a = clone(remote, tmp_path / "a", pn)
    remote.rename(tmp_path / "gone.git")
    got = pn("claim-next", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert got.code == 1
    assert "cannot publish the claim of" in got.err
    assert "released pn-" in got.err
    held = [i for i in pn("list", "--json", cwd=a).json() if i.get("assignee")]
    assert held == []


def test_a_planted_claims_lock_link_is_refused(remote: Path, tmp_path: Path, pn: Pn) -> None:
    """The lock sits at the git directory's top, which the sandboxed agent can write."""
    a = clone(remote, tmp_path / "a", pn)
    victim = tmp_path / "victim"
    (a / ".git" / "pensa-claims.lock").symlink_to(victim)  # dangling: O_CREAT would make it
    claimed = pn("claim-next", "--json", cwd=a, env={**GIT, "PN_ACTOR": "loop-a"})
    assert claimed.code == 1
    assert claimed.error()["code"] == "unsafe_path"
    assert not victim.exists()

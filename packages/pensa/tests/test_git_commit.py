"""pensa and git as agents use them: a commit of tracker changes alone succeeds the first
time, and throwing the JSONL away never loses what exists only in the database.

Real git, the real hooks installed by `pn init`, the real `pn`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import BIN, Pn, git


@pytest.fixture
def inited(repo: Path, pn: Pn, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository set up by `pn init` and committed, with pn on the PATH for the hooks."""
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("PN_ACTOR", "agent-1")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    done = pn("init")
    assert done.code == 0, done.err
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pensa")
    return repo


def commit(repo: Path, *args: str) -> None:
    """`git commit ARGS`, which must succeed the first time."""
    import subprocess

    done = subprocess.run(
        ["git", "commit", "-q", *args], cwd=repo, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def clean(repo: Path) -> bool:
    return git(repo, "status", "--porcelain") == ""


def committed_issues(repo: Path) -> str:
    return git(repo, "show", "HEAD:.pensa/issues.jsonl")


@pytest.mark.parametrize(
    "how",
    [("add -A", "-m", "plan"), ("", "-a", "-m", "plan"), ("", "-m", "plan")],
    ids=["add-A-then-commit", "commit-a", "commit-m"],
)
def test_a_commit_of_tracker_changes_alone_succeeds_first_time(
    inited: Path, pn: Pn, how: tuple[str, ...]
) -> None:
    issue = pn("q", "fix", "-t", "task").out.strip()
    if how[0]:
        git(inited, "add", "-A")
    commit(inited, *how[1:])
    assert issue in committed_issues(inited)
    assert clean(inited)
    assert pn("update", issue, "--claim").code == 0
    if how[0]:
        git(inited, "add", "-A")
    commit(inited, *how[1:])
    assert '"status":"in_progress"' in committed_issues(inited)
    assert clean(inited)

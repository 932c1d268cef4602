"""pensa and git as agents use them: a commit of tracker changes alone succeeds the first
time, and throwing the JSONL away never loses what exists only in the database.

Real git, the real hooks installed by `pn init`, the real `pn`."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Pn, committed_at, git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


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
    return committed_at(repo)


@pytest.mark.parametrize("add", [("add", "-A"), ("add", "."), ("add", ".pensa")])
def test_a_commit_of_tracker_changes_alone_succeeds_first_time(
    inited: Path, pn: Pn, add: tuple[str, ...]
) -> None:
    issue = pn("q", "fix", "-t", "task").out.strip()
    assert git(inited, "status", "--porcelain") == "?? .pensa/uncommitted\n"
    git(inited, *add)
    commit(inited, "-m", "plan")
    assert issue in committed_issues(inited)
    assert clean(inited)
    assert pn("update", issue, "--claim").code == 0
    git(inited, *add)
    commit(inited, "-m", "claim")
    assert '"status":"in_progress"' in committed_issues(inited)
    assert clean(inited)
    assert "uncommitted" not in git(inited, "log", "--all", "--name-only", "--format=")


@pytest.mark.parametrize("how", [("-m", "plan"), ("-a", "-m", "plan")], ids=["m", "a"])
def test_a_commit_of_tracker_changes_alone_without_add_finds_nothing_and_loses_nothing(
    inited: Path, pn: Pn, how: tuple[str, ...]
) -> None:
    """git finds nothing to commit before any hook runs, and pn left no tracked file changed
    (docs/pensa.md: `git add -A` first); what the hook wrote then shows in `git status`, and is
    committed with the next `git add -A && git commit`."""
    import subprocess

    issue = pn("q", "fix", "-t", "task").out.strip()
    first = subprocess.run(["git", "commit", *how], cwd=inited, capture_output=True, check=False)
    assert first.returncode != 0
    assert ".pensa/" in git(inited, "status", "--porcelain")
    git(inited, "add", "-A")
    commit(inited, "-m", "plan")
    assert issue in committed_issues(inited)
    assert clean(inited)


def test_export_stage_then_commit_succeeds_first_time(inited: Path, pn: Pn) -> None:
    issue = pn("q", "fix", "-t", "task").out.strip()
    assert pn("export", "--stage").code == 0
    assert git(inited, "status", "--porcelain").startswith("M  .pensa/issues-")
    commit(inited, "-m", "plan")
    assert issue in committed_issues(inited)
    assert clean(inited)


def status(pn: Pn, issue: str) -> str | None:
    done = pn("show", issue, "--json")
    return str(done.json()["status"]) if done.code == 0 else None


THROW_AWAY: dict[str, list[tuple[str, ...]]] = {
    "checkout-file": [("checkout", "--", ".pensa/issues.jsonl", ".pensa/comments.jsonl")],
    "checkout-dot": [("checkout", "--", ".")],
    "checkout-head": [("checkout", "HEAD", "--", ".")],
    "reset-hard": [("reset", "-q", "--hard")],
    "restore": [("restore", "--staged", "--worktree", ".pensa")],
    "stash": [("stash", "-q")],
    "stash-pop": [("stash", "-q"), ("stash", "pop", "-q")],
    "clean": [("reset", "-q", "--hard"), ("clean", "-fdq", ".pensa")],
}


@pytest.mark.parametrize("how", list(THROW_AWAY), ids=list(THROW_AWAY))
def test_throwing_the_files_away_keeps_what_only_the_database_has(
    inited: Path, pn: Pn, how: str
) -> None:
    held = pn("q", "committed, then claimed", "-t", "task").out.strip()
    git(inited, "add", "-A")
    commit(inited, "-m", "task")
    new = pn("q", "never committed", "-t", "task").out.strip()
    assert pn("update", held, "--claim").code == 0
    assert pn("comment", "add", held, "a note").code == 0
    assert pn("dep", "add", new, held).code == 0
    assert pn("export").code == 0
    for args in THROW_AWAY[how]:
        git(inited, *args)
    assert status(pn, new) == "open"
    assert status(pn, held) == "in_progress"
    shown = pn("show", held, "--json").json()
    assert [c["text"] for c in shown["comments"]] == ["a note"]
    assert pn("dep", "list", new, "--json").json()["depends_on"][0]["id"] == held
    assert pn("q", "later", "-t", "task").code == 0
    git(inited, "add", "-A")
    commit(inited, "-m", "again")
    assert new in committed_issues(inited)
    assert '"status":"in_progress"' in committed_issues(inited)


def test_a_commit_aborted_by_a_later_hook_loses_nothing(inited: Path, pn: Pn) -> None:
    config = (inited / ".pre-commit-config.yaml").read_text()
    refuse = (
        "- repo: local\n  hooks:\n  - id: refuse\n    name: refuse\n    entry: 'false'\n"
        "    language: system\n    always_run: true\n    pass_filenames: false\n"
    )
    (inited / ".pre-commit-config.yaml").write_text(config + refuse)  # runs after pensa's
    git(inited, "add", "-A")
    commit(inited, "--no-verify", "-m", "a refusing hook")
    new = pn("q", "never committed", "-t", "task").out.strip()
    import subprocess

    done = subprocess.run(
        ["git", "commit", "-qam", "refused"], cwd=inited, capture_output=True, check=False
    )
    assert done.returncode != 0
    git(inited, "reset", "-q", "--hard")
    assert status(pn, new) == "open"


def test_what_a_commit_held_follows_a_checkout_that_drops_it(inited: Path, pn: Pn) -> None:
    git(inited, "switch", "-qc", "x")
    only = pn("q", "only on x", "-t", "task").out.strip()
    git(inited, "add", "-A")
    commit(inited, "-m", "x")
    git(inited, "switch", "-q", "-")
    assert status(pn, only) is None
    git(inited, "switch", "-q", "x")
    assert status(pn, only) == "open"

"""PN_SHARED_DB: worktree loops share the main checkout's database, with real git,
hooks and `pn`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pensa.committed.disk import file_name

from ..conftest import BIN, Pn, committed, git, rewrite

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


@pytest.fixture
def main(repo: Path, pn: Pn, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository set up by `pn init` and committed, with pn on the PATH for the hooks."""
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    assert pn("init").code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pensa")
    return repo


@pytest.fixture
def worktree(main: Path, tmp_path: Path) -> Path:
    path = tmp_path / "loop"
    # as sgf makes it: no hooks, so no `pn sync` builds a private database there
    git(
        main, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "-b", "sgf/loop", str(path)
    )
    return path


def shared(main: Path) -> dict[str, str]:
    return {"PN_SHARED_DB": str(main / ".pensa" / "db.sqlite"), "PN_ACTOR": "loop"}


def statuses(path: Path) -> dict[str, str]:
    lines = committed(path / ".pensa").splitlines()
    return {json.loads(line)["title"]: json.loads(line)["status"] for line in lines}


def test_a_worktree_claims_from_the_main_checkouts_database(
    main: Path, worktree: Path, pn: Pn
) -> None:
    first = pn("q", "first", "-t", "task").out.strip()
    claimed = pn("claim-next", "--json", cwd=worktree, env=shared(main))
    assert claimed.code == 0, claimed.err
    assert claimed.json()["id"] == first
    assert pn("claim-next", "--json").json() is None  # the main checkout sees the claim
    assert not (worktree / ".pensa" / "db.sqlite").exists()


def test_a_worktree_commit_exports_the_shared_database_into_its_own_files(
    main: Path, worktree: Path, pn: Pn
) -> None:
    pn("q", "made in main", "-t", "task")
    main_status = git(main, "status", "--porcelain")  # the write's marker
    (worktree / "work.txt").write_text("x")
    git(worktree, "add", "work.txt")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in shared(main).items():
            patch.setenv(name, value)
        git(worktree, "commit", "-qm", "work")  # the pre-commit hook: pn export
    assert statuses(worktree) == {"made in main": "open"}
    assert git(worktree, "status", "--porcelain") == ""  # exported and staged in the commit
    assert git(main, "status", "--porcelain") == main_status  # the main checkout's untouched


def test_a_worktrees_older_files_never_flow_into_the_shared_database(
    main: Path, worktree: Path, pn: Pn
) -> None:
    """The merging sync would read a released claim in an old export as a change and bring it
    back; with PN_SHARED_DB the files are never merged in."""
    issue = pn("q", "work", "-t", "task").out.strip()
    assert pn("update", issue, "--claim", "--actor", "other-loop").code == 0
    assert pn("export", cwd=worktree, env=shared(main)).code == 0
    assert statuses(worktree) == {"work": "in_progress"}
    assert pn("release", issue).code == 0  # given back after the export
    for command in (["ready", "--json"], ["sync"], ["claim-next", "--json"]):
        done = pn(*command, cwd=worktree, env=shared(main))
        assert done.code == 0, done.err
    assert pn("show", issue, "--json").json()["assignee"] == "loop"  # claimed afresh, not stale


def test_sync_in_a_worktree_does_nothing_and_import_refuses(
    main: Path, worktree: Path, pn: Pn
) -> None:
    synced = pn("sync", cwd=worktree, env=shared(main))
    assert synced.out.strip() == "nothing to sync: the database is shared (PN_SHARED_DB)"
    imported = pn("import", cwd=worktree, env=shared(main))
    assert imported.code == 1
    assert "would replace the database shared by every loop" in imported.err


def fast_forwarded_old_claim(main: Path, worktree: Path, pn: Pn) -> str:
    """The main checkout after a loop's commits came in: its files hold a claim that another
    loop exported from the shared database and has given back since."""
    issue = pn("q", "work", "-t", "task").out.strip()
    assert pn("export").code == 0  # the main checkout's sync base: open
    assert pn("update", issue, "--claim", "--actor", "other-loop").code == 0
    assert pn("export", cwd=worktree, env=shared(main)).code == 0  # a loop's commit: claimed
    assert pn("release", issue).code == 0
    name = file_name("issues.jsonl", issue)
    rewrite(main / ".pensa" / name, (worktree / ".pensa" / name).read_text())  # fast-forward
    return issue


def test_adopt_makes_fast_forwarded_exports_the_base_without_merging_them(
    main: Path, worktree: Path, pn: Pn
) -> None:
    issue = fast_forwarded_old_claim(main, worktree, pn)
    assert pn("sync", "--adopt").out.strip() == "adopted: the files are the sync base now"
    shown = pn("show", issue, "--json").json()
    assert (shown["status"], shown.get("assignee")) == ("open", None)


def test_without_adopt_the_old_files_would_bring_the_claim_back(
    main: Path, worktree: Path, pn: Pn
) -> None:
    """The trap `adopt` avoids, shown with the ordinary catch-up."""
    issue = fast_forwarded_old_claim(main, worktree, pn)
    assert pn("show", issue, "--json").json()["assignee"] == "other-loop"


def test_a_commit_in_a_linked_worktree_stages_its_jsonl_in_place(
    main: Path, worktree: Path, pn: Pn
) -> None:
    """git hands a linked worktree's hooks GIT_DIR; pn export staged the files from `.pensa/`
    then, which git took for the top: `issues.jsonl` at the root, and a failed hook."""
    made = pn("q", "made here", "-t", "task", cwd=worktree).out.strip()
    (worktree / "work.txt").write_text("x")
    git(worktree, "add", "work.txt")
    git(worktree, "commit", "-qm", "work")
    assert git(worktree, "status", "--porcelain") == ""
    assert git(worktree, "show", "--format=", "--name-only", "HEAD").split() == [
        f".pensa/{file_name('issues.jsonl', made)}",
        "work.txt",
    ]

"""The front door, without the CLI: the rules `pensa.session.Session` owns (which claim path,
the shared database, staging, adopting, the write-back), with real git and SQLite."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pensa import gitsetup
from pensa.committed.snapshot import render_db
from pensa.errors import PensaError
from pensa.models import IssueType, Status
from pensa.session import Session, Skipped

from .conftest import BIN, committed, git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def environ(**extra: str) -> dict[str, str]:
    return {**os.environ, "PN_ACTOR": "agent-1", "PATH": f"{BIN}:{os.environ['PATH']}", **extra}


@pytest.fixture
def main(repo: Path) -> Path:
    """A repository set up for pensa (`pn init`) and committed."""
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    gitsetup.init(str(repo), environ())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pensa")
    return repo


def test_claim_next_claims_the_first_ready_issue_for_the_actor(repo: Path) -> None:
    with Session(cwd=str(repo), environ=environ()) as pensa:
        first = pensa.tracker(write=True).create("first", issue_type=IssueType.TASK, actor="me")
        claimed = pensa.claim_next()
    assert claimed is not None
    assert (claimed.id, claimed.assignee, claimed.status) == (
        first.id,
        "agent-1",
        Status.IN_PROGRESS,
    )
    with Session(cwd=str(repo), environ=environ()) as pensa:
        assert pensa.claim_next() == claimed  # one claim per agent: the one it holds
    with Session(cwd=str(repo), environ=environ(PN_ACTOR="agent-2")) as pensa:
        assert pensa.claim_next() is None


def test_git_claims_are_chosen_by_pn_claims_and_refused_on_a_shared_database(
    main: Path, tmp_path: Path
) -> None:
    shared = {"PN_SHARED_DB": str(main / ".pensa" / "db.sqlite")}
    git_claims = environ(PN_CLAIMS="git", **shared)
    with Session(cwd=str(main), environ=git_claims) as pensa, pytest.raises(PensaError):
        pensa.claim_next()
    with Session(cwd=str(main), environ=environ(**shared)) as pensa:
        assert pensa.claim_next() is None  # local claims: no remote needed


def test_sync_says_why_it_did_nothing(repo: Path, main: Path) -> None:
    with Session(cwd=str(repo / "nowhere"), environ=environ(PN_DIR=str(repo / "no"))) as pensa:
        assert pensa.sync() == Skipped("nothing to sync")
    shared = environ(PN_SHARED_DB=str(main / ".pensa" / "db.sqlite"))
    with Session(cwd=str(main), environ=shared) as pensa:
        assert pensa.sync() == Skipped("nothing to sync: the database is shared (PN_SHARED_DB)")


def test_sync_adopt_records_the_files_as_the_base_without_merging_them(main: Path) -> None:
    with Session(cwd=str(main), environ=environ()) as pensa:
        mine = pensa.tracker(write=True).create("mine", issue_type=IssueType.TASK, actor="me")
        pensa.export()
    line = json.loads(committed(main / ".pensa"))
    shard = main / ".pensa" / "issues-0.jsonl"
    shard.write_text(shard.read_text() + json.dumps({**line, "id": "pn-0badc0de"}) + "\n")
    with Session(cwd=str(main), environ=environ()) as pensa:
        assert pensa.sync(adopt=True) == Skipped("adopted: the files are the sync base now")
        synced = pensa.sync()
        with pytest.raises(PensaError):
            pensa.tracker().get("pn-0badc0de")  # adopted, not merged in
        assert pensa.tracker().get(mine.id).title == "mine"
    assert not isinstance(synced, Skipped)
    assert not synced.changed


def test_import_is_refused_on_a_shared_database(main: Path) -> None:
    shared = environ(PN_SHARED_DB=str(main / ".pensa" / "db.sqlite"))
    with Session(cwd=str(main), environ=shared) as pensa, pytest.raises(PensaError):
        pensa.import_()


def test_export_without_a_project_is_none_and_with_stage_stages_the_files(
    main: Path, tmp_path: Path
) -> None:
    (tmp_path / "plain").mkdir()
    with Session(cwd=str(tmp_path / "plain"), environ=environ()) as pensa:
        assert pensa.export() is None
    with Session(cwd=str(main), environ=environ()) as pensa:
        pensa.tracker(write=True).create("staged", issue_type=IssueType.TASK, actor="me")
        summary = pensa.export(stage=True)
    assert summary is not None
    assert (summary.issues, summary.staged) == (1, True)
    assert ".pensa/issues-" in git(main, "diff", "--cached", "--name-only")


def test_export_on_a_shared_database_writes_it_out_as_it_is(main: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "loop"
    git(main, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "-b", "l", str(worktree))
    shared = environ(PN_SHARED_DB=str(main / ".pensa" / "db.sqlite"))
    with Session(cwd=str(main), environ=environ()) as pensa:
        pensa.tracker(write=True).create("in main", issue_type=IssueType.TASK, actor="me")
    with Session(cwd=str(worktree), environ=shared) as pensa:
        summary = pensa.export()
        texts = render_db(pensa.store().conn)
    assert summary is not None
    assert summary.issues == 1
    [(name, text)] = texts.items()
    assert (worktree / ".pensa" / name).read_text() == text


def test_write_back_leaves_the_files_and_the_index_alone_and_marks_the_change(
    main: Path,
) -> None:
    marker = main / ".pensa" / "uncommitted"
    listed = sorted(p.name for p in (main / ".pensa").iterdir())
    with Session(cwd=str(main), environ=environ()) as pensa:
        made = pensa.tracker(write=True).create("written", issue_type=IssueType.TASK, actor="me")
        pensa.write_back()
    assert sorted(p.name for p in (main / ".pensa").iterdir()) == sorted([*listed, marker.name])
    assert git(main, "status", "--porcelain") == "?? .pensa/uncommitted\n"
    with Session(cwd=str(main), environ=environ()) as pensa:
        assert pensa.export(stage=True) is not None  # the pre-commit hook
    assert not marker.exists()
    git(main, "commit", "-qm", "the tracker")
    assert git(main, "status", "--porcelain") == ""
    with Session(cwd=str(main), environ=environ()) as pensa:
        pensa.tracker(write=True).get(made.id)  # opened for writing, nothing changed
        pensa.write_back()
    assert not marker.exists()


def test_a_fresh_clone_s_first_use_is_said(main: Path, tmp_path: Path) -> None:
    with Session(cwd=str(main), environ=environ()) as pensa:
        made = pensa.tracker(write=True).create("committed", issue_type=IssueType.TASK, actor="me")
        pensa.export(stage=True)  # (the hook's work: the test's git has no pn on its PATH)
    git(main, "commit", "-qm", "issues")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(main), str(clone))
    said: list[str] = []
    with Session(cwd=str(clone), environ=environ(), say=said.append) as pensa:
        assert pensa.tracker().get(made.id).title == "committed"
    assert said == [f"pn: first use here: imported 1 issues from {clone / '.pensa'}"]

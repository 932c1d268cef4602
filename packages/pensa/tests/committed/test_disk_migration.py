"""A repository made by pensa before the shards (one issues.jsonl, deps.jsonl, comments.jsonl;
`fixtures/old_layout/make.sh` made it with that release's `pn`) moves to them on its own,
once, and loses nothing: not the work it had not committed yet, and not a branch that still
has the old layout when it is merged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pensa.committed.disk import file_name
from pensa.gitsetup import HOOK_TYPES

from ..conftest import BIN, Pn, committed_at, git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

FIXTURE = Path(__file__).parents[1] / "fixtures" / "old_layout" / "repo.tar.gz"


@pytest.fixture
def old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    """The old repository, its hooks installed as that release's `pn init` installed them,
    and the ids of its issues."""
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path / "old", filter="data")
    repo = tmp_path / "old" / "repo"
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("PN_ACTOR", "agent-1")
    argv = [sys.executable, "-m", "pre_commit", "install", "--overwrite"]
    for hook in HOOK_TYPES:
        argv += ["--hook-type", hook]
    subprocess.run(argv, cwd=repo, check=True, capture_output=True)
    ids: dict[str, str] = json.loads((tmp_path / "old" / "ids.json").read_text())
    return repo, ids


def issues(pn: Pn, repo: Path) -> dict[str, dict[str, Any]]:
    done = pn("list", "--all", "--json", cwd=repo)
    assert done.code == 0, done.err
    return {i["title"]: i for i in done.json()}


def comments(pn: Pn, repo: Path, issue: str) -> list[str]:
    return sorted(c["text"] for c in pn("show", issue, "--json", cwd=repo).json()["comments"])


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    done = subprocess.run(
        ["git", "commit", "-q", "-m", message], cwd=repo, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_first_command_sees_all_the_work_and_changes_no_file(
    old: tuple[Path, dict[str, str]], pn: Pn
) -> None:
    repo, ids = old
    status = git(repo, "status", "--porcelain")
    assert status == "M  .pensa/comments.jsonl\nM  .pensa/issues.jsonl\n"  # the old write-back
    found = issues(pn, repo)
    assert sorted(found) == ["first", "fourth", "second"]  # third is on the branch
    assert (found["second"]["status"], found["second"]["assignee"]) == ("in_progress", "loop-1")
    assert comments(pn, repo, ids["first"]) == ["committed note", "uncommitted note"]
    # no committed file changed; the marker says the next commit has tracker work (the move)
    assert git(repo, "status", "--porcelain") == status + "?? .pensa/uncommitted\n"


def test_the_next_commit_moves_the_files_to_the_shards(
    old: tuple[Path, dict[str, str]], pn: Pn
) -> None:
    repo, ids = old
    issues(pn, repo)
    commit(repo, "work")
    assert git(repo, "status", "--porcelain") == ""
    for kind in ("issues", "deps", "comments"):
        assert git(repo, "show", f"HEAD:.pensa/{kind}.jsonl") == ""  # kept, empty
    titles = sorted(json.loads(line)["title"] for line in committed_at(repo).splitlines())
    assert titles == ["first", "fourth", "second"]
    shard = git(repo, "show", f"HEAD:.pensa/{file_name('issues.jsonl', ids['second'])}")
    assert '"assignee":"loop-1"' in shard
    # The old release kept a comment made on old-branch after the switch back to main (the
    # bug the new sync fixes): it is the database's, so it is kept, and committed here.
    notes = [json.loads(line)["text"] for line in committed_at(repo, kind="comments").splitlines()]
    assert sorted(notes) == ["committed note", "note on the branch", "uncommitted note"]
    assert committed_at(repo, kind="deps").count(ids["second"]) == 1


@pytest.mark.parametrize("migrated_first", [True, False], ids=["migrated", "not-yet"])
def test_a_branch_with_the_old_layout_merges_into_the_shards(
    old: tuple[Path, dict[str, str]], pn: Pn, migrated_first: bool
) -> None:
    repo, ids = old
    if migrated_first:
        commit(repo, "work")  # main has the shards; the branch has the old files
    else:
        git(repo, "reset", "-q", "--hard")  # the old write-back's staged files thrown away
    done = subprocess.run(
        ["git", "merge", "-q", "--no-edit", "old-branch"], cwd=repo, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = issues(pn, repo)
    assert sorted(found) == ["first", "fourth", "second", "third"]
    assert found["first"]["status"] == "closed"  # closed on the branch
    assert (found["second"]["status"], found["second"]["assignee"]) == ("in_progress", "loop-1")
    assert comments(pn, repo, ids["first"]) == ["committed note", "uncommitted note"]
    assert comments(pn, repo, ids["second"]) == ["note on the branch"]
    commit(repo, "after the merge")
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "HEAD:.pensa/issues.jsonl") == ""
    committed = [json.loads(line) for line in committed_at(repo).splitlines()]
    assert sorted(r["title"] for r in committed) == ["first", "fourth", "second", "third"]
    assert pn("import", "--json", cwd=repo).json()["issues"] == 4  # the files agree

"""A comment or dependency that comes without its issue waits in the files for it.

`git cherry-pick` of the commit that commented on an issue, without the one that created it,
brings the comment's line and not the issue. The database cannot hold it, and the export used
to render the shard from the database alone: the comment was then lost on the branch that has
the issue, by a merge either way (the model test, `test_sync_model.py`, found it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import Pn, committed_at, git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def commit(repo: Path, message: str) -> str:
    """Commit everything (pensa's hooks export the tracker); the new commit's id."""
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


def comments_on(pn: Pn, issue: str) -> list[str]:
    shown = pn("show", issue, "--json")
    assert shown.code == 0, shown.err
    return [c["id"] for c in shown.json()["comments"]]


def test_a_comment_cherry_picked_without_its_issue_is_there_when_the_issue_comes(
    inited: Path, pn: Pn
) -> None:
    """Back on main, the comment's line was no news to the sync (the branch's files had it
    too), so the issue came back without it."""
    git(inited, "branch", "side")
    issue = pn("q", "on main", "-t", "task").out.strip()
    commit(inited, "issue")
    said = pn("comment", "add", issue, "keep me", "--json").json()["id"]
    picked = commit(inited, "comment")
    git(inited, "switch", "-q", "side")
    git(inited, "cherry-pick", picked)
    git(inited, "switch", "-q", "main")
    assert comments_on(pn, issue) == [said]


def test_a_branch_without_the_issue_never_commits_its_comment_away(inited: Path, pn: Pn) -> None:
    """The branch that got the comment by a cherry-pick keeps its line in every commit: its
    removal would win the next merge into main (git takes the one side that changed)."""
    git(inited, "branch", "side")
    issue = pn("q", "on main", "-t", "task").out.strip()
    commit(inited, "issue")
    said = pn("comment", "add", issue, "keep me", "--json").json()["id"]
    picked = commit(inited, "comment")
    git(inited, "switch", "-q", "side")
    git(inited, "cherry-pick", picked)
    assert git(inited, "status", "--porcelain") == ""  # nothing for pensa to write back
    assert pn("import", "--json").code == 0  # the waiting line is no bad line
    git(inited, "switch", "-q", "main")
    git(inited, "merge", "-q", "--no-edit", "side")
    git(inited, "switch", "-q", "side")
    (inited / "side.txt").write_text("work")
    commit(inited, "work on side")
    assert "keep me" in committed_at(inited, kind="comments")
    git(inited, "switch", "-q", "main")
    git(inited, "merge", "-q", "--no-edit", "side")
    assert comments_on(pn, issue) == [said]
    assert "keep me" in committed_at(inited, kind="comments")


def test_a_dependency_cherry_picked_without_its_issues_survives_the_merges(
    inited: Path, pn: Pn
) -> None:
    git(inited, "branch", "side")
    first = pn("q", "first", "-t", "task").out.strip()
    then = pn("q", "then", "-t", "task").out.strip()
    commit(inited, "issues")
    assert pn("dep", "add", then, first).code == 0
    picked = commit(inited, "dependency")
    git(inited, "switch", "-q", "side")
    git(inited, "cherry-pick", picked)
    git(inited, "switch", "-q", "main")
    git(inited, "merge", "-q", "--no-edit", "side")
    git(inited, "switch", "-q", "side")
    (inited / "side.txt").write_text("work")
    commit(inited, "work on side")
    git(inited, "switch", "-q", "main")
    git(inited, "merge", "-q", "--no-edit", "side")
    assert [i["id"] for i in pn("dep", "list", then, "--json").json()["depends_on"]] == [first]
    assert first in committed_at(inited, kind="deps")


def test_a_worktree_loops_export_keeps_a_comment_whose_issue_the_shared_database_lacks(
    inited: Path, pn: Pn, tmp_path: Path
) -> None:
    """A loop's worktree writes the shared database out (`PN_SHARED_DB`): a comment its
    branch got by a cherry-pick, for an issue made elsewhere, stays in its files."""
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(inited), str(other))
    pn("init", cwd=other)
    issue = pn("q", "made elsewhere", "-t", "task", cwd=other).out.strip()
    commit(other, "issue")
    pn("comment", "add", issue, "keep me", cwd=other)
    picked = commit(other, "comment")
    loop = tmp_path / "loop"
    git(inited, "worktree", "add", "-q", "-b", "loop", str(loop))
    git(loop, "fetch", "-q", str(other), "main")
    git(loop, "cherry-pick", picked)
    shared = {"PN_SHARED_DB": str(inited / ".pensa" / "db.sqlite")}
    assert pn("export", cwd=loop, env=shared).code == 0
    assert git(loop, "status", "--porcelain") == ""
    assert "keep me" in committed_at(loop, kind="comments")

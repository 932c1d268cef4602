"""pn as the design's git hooks, installed for real with the pre-commit framework."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pensa.committed.disk import file_name

from .conftest import BIN, Pn, committed_at, git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


@pytest.fixture
def hooked(repo: Path, monkeypatch: pytest.MonkeyPatch, pn: Pn) -> Path:
    """`repo` set up by `pn init` (hooks through the pre-commit framework), pn on the PATH."""
    if shutil.which("pre-commit", path=str(BIN)) is None:
        pytest.fail("pre-commit is a dependency of pensa and must be installed")
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("PN_ACTOR", "agent-1")
    done = pn("init")
    assert done.code == 0, done.err
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pensa")
    return repo


def committed_issue_titles(repo: Path, rev: str = "HEAD") -> list[str]:
    text = committed_at(repo, rev)
    return sorted(json.loads(line)["title"] for line in text.splitlines())


def test_commit_carries_the_freshly_exported_jsonl(hooked: Path, pn: Pn) -> None:
    first = pn("q", "first", "-t", "task").out.strip()
    (hooked / "code.py").write_text("print('hi')\n")
    git(hooked, "add", "code.py")
    git(hooked, "commit", "-qm", "code and issues together")
    files = git(hooked, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == [f".pensa/{file_name('issues.jsonl', first)}", "code.py"]
    assert committed_issue_titles(hooked) == ["first"]
    assert git(hooked, "status", "--porcelain", "--untracked-files=no") == ""
    # The next change rides in the next commit, again with the code.
    pn("create", "second", "-t", "bug")
    (hooked / "code.py").write_text("print('bye')\n")
    git(hooked, "commit", "-qam", "more")
    assert committed_issue_titles(hooked) == ["first", "second"]
    assert "db.sqlite" not in git(hooked, "ls-files")


def test_checkout_imports_the_branch_state(hooked: Path, pn: Pn) -> None:
    pn("create", "on main", "-t", "task")
    git(hooked, "commit", "-q", "--allow-empty", "-m", "main issues")
    git(hooked, "checkout", "-qb", "feature")
    pn("create", "on feature", "-t", "task")
    git(hooked, "commit", "-q", "--allow-empty", "-m", "feature issues")
    git(hooked, "checkout", "-q", "main")
    titles = [i["title"] for i in pn("list", "--json").json()]
    assert titles == ["on main"]
    git(hooked, "merge", "-q", "feature")
    titles = [i["title"] for i in pn("list", "--json").json()]
    assert titles == ["on main", "on feature"]


def test_fresh_clone_imports_on_first_use(hooked: Path, tmp_path: Path, pn: Pn) -> None:
    created = pn("create", "travels with git", "-t", "task", "--json").json()
    git(hooked, "commit", "-q", "--allow-empty", "-m", "issues")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(hooked), str(clone)], check=True)
    assert not (clone / ".pensa" / "db.sqlite").exists()
    shown = pn("show", created["id"], "--json", cwd=clone)
    assert shown.code == 0, shown.err
    assert shown.json()["title"] == "travels with git"
    assert (clone / ".pensa" / "db.sqlite").exists()
    # The untracked .gitignore did not travel; it is recreated so db.sqlite is never added.
    assert "db.sqlite" not in git(clone, "status", "--porcelain", "--untracked-files=all")


def test_export_outside_a_hook_does_not_stage(repo: Path, pn: Pn) -> None:
    pn("create", "x", "-t", "task")
    assert pn("export", "--json").json()["staged"] is False
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert pn("export", "--stage", "--json").json()["staged"] is True
    assert ".pensa/issues-" in git(repo, "diff", "--cached", "--name-only")


def test_the_hook_stages_pensas_files_and_no_other(hooked: Path, pn: Pn) -> None:
    """A file an agent left in `.pensa/` is not swept into the commit with the tracker."""
    (hooked / ".pensa" / "notes.jsonl").write_text('{"planted": true}\n')
    issue = pn("q", "tracked", "-t", "task").out.strip()
    (hooked / "code.py").write_text("x = 1\n")
    git(hooked, "add", "code.py")
    git(hooked, "commit", "-qm", "code")
    files = git(hooked, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == sorted(["code.py", f".pensa/{file_name('issues.jsonl', issue)}"])
    assert git(hooked, "status", "--porcelain") == "?? .pensa/notes.jsonl\n"

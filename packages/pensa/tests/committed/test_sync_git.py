"""pensa in git never loses data: every repro, with real git, hooks and `pn`.

Each test failed on 9da76fd, where the hooks ran `pn import` (replace the database with the
JSONL) and export rewrote the files from a stale database.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pensa.shared import hardgit

from ..conftest import BIN, PN, Pn, committed_at, git

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def titles(pn: Pn, cwd: Path | None = None) -> list[str]:
    done = pn("list", "--all", "--json", cwd=cwd)
    assert done.code == 0, done.err
    return sorted(i["title"] for i in done.json())


def second_clone(inited: Path, tmp_path: Path, pn: Pn) -> Path:
    """Push `inited` to a new bare remote; another clone of it, set up by `pn init`."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(inited, "remote", "add", "origin", str(remote))
    git(inited, "push", "-q", "-u", "origin", "HEAD")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    git(other, "config", "user.email", "o@example.com")
    git(other, "config", "user.name", "o")
    assert pn("init", cwd=other).code == 0
    return other


def test_uncommitted_issue_rides_along_a_branch_switch(inited: Path, pn: Pn) -> None:
    pn("q", "new idea", "-t", "task")
    git(inited, "switch", "-qc", "b2")
    assert titles(pn) == ["new idea"]


def test_an_issue_committed_on_a_branch_leaves_and_returns_with_it(inited: Path, pn: Pn) -> None:
    git(inited, "switch", "-qc", "x")
    pn("q", "only on x", "-t", "task")
    git(inited, "commit", "-q", "--allow-empty", "-m", "x")
    git(inited, "switch", "-q", "-")
    assert titles(pn) == []
    git(inited, "switch", "-q", "x")
    assert titles(pn) == ["only on x"]


def test_uncommitted_comments_and_edges_survive_a_switch_away_and_back(
    inited: Path, pn: Pn
) -> None:
    """An issue committed on a branch leaves with it; a comment and an edge given to it since
    are uncommitted work, which rides along like an edited issue does (the model test lost
    both comments when the exports were thrown away before the switch)."""
    git(inited, "switch", "-qc", "x")
    issue = pn("q", "only on x", "-t", "task").out.strip()
    other = pn("q", "also on x", "-t", "task").out.strip()
    git(inited, "add", "-A")
    git(inited, "commit", "-q", "-m", "x")
    comment = pn("comment", "add", issue, "not committed yet", "--json").json()["id"]
    assert pn("dep", "add", issue, other).code == 0
    assert pn("export").code == 0
    git(inited, "reset", "-q", "--", ".pensa")  # the exports thrown away: the database has it
    git(inited, "checkout", "--", ".pensa")
    git(inited, "clean", "-fq", ".pensa")
    git(inited, "switch", "-q", "main")
    git(inited, "switch", "-q", "x")
    shown = pn("show", issue, "--json").json()
    assert [c["id"] for c in shown["comments"]] == [comment]
    assert pn("dep", "list", issue, "--json").out.count(other) >= 1


def test_a_claim_survives_checkout_of_a_file(inited: Path, pn: Pn) -> None:
    issue = pn("q", "work", "-t", "task").out.strip()
    git(inited, "commit", "-q", "--allow-empty", "-m", "task")
    assert pn("update", issue, "--claim").code == 0
    (inited / "f.txt").write_text("x")
    git(inited, "add", "f.txt")
    git(inited, "commit", "-qm", "f")  # exports the claim too
    (inited / "f.txt").write_text("changed")
    git(inited, "checkout", "--", "f.txt")
    assert pn("show", issue, "--json").json()["status"] == "in_progress"


def test_a_claim_survives_pull_rebase_after_a_rejected_push(
    inited: Path, tmp_path: Path, pn: Pn
) -> None:
    issue = pn("q", "shared", "-t", "task").out.strip()
    git(inited, "commit", "-q", "--allow-empty", "-m", "task")
    other = second_clone(inited, tmp_path, pn)
    pn("q", "from the other clone", "-t", "task", cwd=other)
    git(other, "commit", "-q", "--allow-empty", "-m", "other")
    git(other, "push", "-q")
    # Here: claim (uncommitted), commit some code, push is rejected, pull --rebase.
    assert pn("update", issue, "--claim").code == 0
    (inited / "code.py").write_text("x = 1\n")
    git(inited, "add", "code.py")
    git(inited, "commit", "-qm", "code")
    rejected = subprocess.run(["git", "push", "-q"], cwd=inited, capture_output=True, check=False)
    assert rejected.returncode != 0
    git(inited, "pull", "-q", "--rebase")
    assert pn("show", issue, "--json").json()["status"] == "in_progress"
    assert titles(pn) == ["from the other clone", "shared"]
    git(inited, "push", "-q")


def test_a_close_made_after_another_clone_reopened_the_issue_survives_the_pull(
    inited: Path, tmp_path: Path, pn: Pn
) -> None:
    """Closed and pushed; the other clone reopens it and pushes; here, not yet pulled, it is
    closed again (`--force` closes a closed issue anew), committed and pulled with rebase: the
    later close stands in both clones (the model test found it reopened)."""
    issue = pn("q", "shared", "-t", "task").out.strip()
    assert pn("close", issue, "--reason", "done", "--force").code == 0
    git(inited, "commit", "-q", "--allow-empty", "-m", "closed")
    other = second_clone(inited, tmp_path, pn)
    assert pn("reopen", issue, cwd=other).code == 0
    git(other, "commit", "-q", "--allow-empty", "-m", "reopened")
    git(other, "push", "-q")
    assert pn("close", issue, "--reason", "done again", "--force").code == 0
    git(inited, "commit", "-q", "--allow-empty", "-m", "closed again")
    git(inited, "pull", "-q", "--rebase")
    git(inited, "push", "-q")
    git(other, "pull", "-q", "--rebase")
    for clone in (inited, other):
        shown = pn("show", issue, "--json", cwd=clone).json()
        assert (shown["status"], shown["close_reason"]) == ("closed", "done again"), clone


def test_two_branches_that_add_issues_merge_without_conflict(inited: Path, pn: Pn) -> None:
    git(inited, "switch", "-qc", "a")
    pn("q", "from a", "-t", "task")
    pn("comment", "add", pn("q", "a2", "-t", "task").out.strip(), "note on a")
    git(inited, "commit", "-q", "--allow-empty", "-m", "a")
    git(inited, "switch", "-q", "-")
    git(inited, "switch", "-qc", "b")
    pn("q", "from b", "-t", "task")
    git(inited, "commit", "-q", "--allow-empty", "-m", "b")
    git(inited, "merge", "-q", "--no-edit", "a")
    assert git(inited, "status", "--porcelain") == ""
    assert titles(pn) == ["a2", "from a", "from b"]
    committed = committed_at(inited)
    assert sorted(json.loads(line)["title"] for line in committed.splitlines()) == [
        "a2",
        "from a",
        "from b",
    ]


def test_a_hand_resolved_conflict_is_never_overwritten_by_export(inited: Path, pn: Pn) -> None:
    pn("q", "in the database", "-t", "task")
    git(inited, "commit", "-q", "--allow-empty", "-m", "one")
    # A teammate's issue arrives by hand (a resolved conflict, a copied line).
    line = {
        "id": "pn-0000beef",
        "title": "added by hand",
        "issue_type": "task",
        "status": "open",
        "priority": "p1",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    path = inited / ".pensa" / "issues.jsonl"
    path.write_text(path.read_text() + json.dumps(line) + "\n")
    git(inited, "commit", "-qam", "resolved by hand")
    committed = committed_at(inited)
    assert "added by hand" in committed
    assert git(inited, "show", "HEAD:.pensa/issues.jsonl") == ""  # it moved to its shard
    assert "in the database" in committed
    assert titles(pn) == ["added by hand", "in the database"]


def test_conflict_markers_stop_the_commit_with_file_and_line(inited: Path, pn: Pn) -> None:
    path = inited / ".pensa" / "issues.jsonl"
    path.write_text("<<<<<<< HEAD\n")
    done = pn("export", "--json")
    assert done.code == 1
    assert done.error()["error"] == (
        "issues.jsonl:1: git merge conflict marker; resolve the conflict first"
    )
    commit = subprocess.run(
        ["git", "commit", "-qam", "x"], cwd=inited, capture_output=True, text=True, check=False
    )
    assert commit.returncode != 0
    assert "issues.jsonl:1" in commit.stdout + commit.stderr


def test_a_commit_where_all_is_well_prints_one_line_per_hook(inited: Path, pn: Pn) -> None:
    """pre-commit's verbose mode printed five lines on every commit; now the pre-commit
    export and the post-commit sync say one line each."""
    pn("q", "x", "-t", "task")
    (inited / "code.py").write_text("1\n")
    git(inited, "add", "code.py")
    done = subprocess.run(
        ["git", "commit", "-m", "quiet"], cwd=inited, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    hook_lines = [
        line for line in (done.stdout + done.stderr).splitlines() if line.startswith("pensa")
    ]
    assert len(hook_lines) == 2, done.stdout + done.stderr
    assert hook_lines[0].startswith("pensa: export the database to .pensa/*.jsonl")
    assert hook_lines[1].startswith("pensa: merge .pensa/*.jsonl into the database")
    assert all(line.endswith("Passed") for line in hook_lines)
    assert "hook id" not in done.stdout + done.stderr


def test_hooks_let_work_proceed_without_pn_on_path(inited: Path, pn: Pn) -> None:
    pn("q", "x", "-t", "task")
    venv_python = BIN / "python"
    bare_path = "/usr/bin:/bin"  # git and sh, but no pn
    env = {**os.environ, "PATH": bare_path}
    (inited / "code.py").write_text("1\n")
    git(inited, "add", "code.py")
    done = subprocess.run(
        ["git", "commit", "-m", "from an IDE"],
        cwd=inited,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # the commit is not held up
    switched = subprocess.run(
        ["git", "switch", "-c", "other"], cwd=inited, env=env, capture_output=True, text=True
    )
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert venv_python.exists()


def test_pn_init_is_idempotent_and_doctor_reports_what_is_missing(repo: Path, pn: Pn) -> None:
    pn("q", "shared", "-t", "task")
    assert pn("export", "--stage").code == 0
    git(repo, "commit", "-q", "-m", "a clone's history carries .pensa/")
    before = pn("doctor", "--json").json()
    assert any(f["check"] == "git_setup" for f in before["findings"])
    first = pn("init", "--json")
    assert first.code == 0, first.err
    snapshot = {
        p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and "objects" not in p.parts
    }
    second = pn("init", "--json").json()
    assert {s["action"] for s in second} == {"kept"}
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and "objects" not in p.parts}
    changed = {p for p in after if after[p] != snapshot.get(p)}
    assert {p.name for p in changed} <= {"db.sqlite", "index"}
    assert not any(f["check"] == "git_setup" for f in pn("doctor", "--json").json()["findings"])
    attributes = (repo / ".gitattributes").read_text()
    assert ".pensa/*.jsonl merge=pensa" in attributes
    assert "pn merge-driver" in git(repo, "config", "merge.pensa.driver")


def test_pn_init_keeps_git_out_of_nested_repositories_and_doctor_notices_a_change(
    repo: Path, pn: Pn
) -> None:
    """The sandbox's agent can make a folder a repository with its own config: these
    settings in the read-only .git/config keep the host's git from running status there."""
    assert pn("init").code == 0
    git(repo, "add", ".pensa")
    git(repo, "commit", "-q", "-m", "the tracker is shared through git")
    settings = {
        key: git(repo, "config", "--local", key).strip() for key, _ in hardgit.SUBMODULE_SAFETY
    }
    assert settings == {
        "diff.ignoreSubmodules": "all",
        "submodule.recurse": "false",
        "fetch.recurseSubmodules": "false",
        "push.recurseSubmodules": "no",
    }
    git(repo, "config", "--local", "diff.ignoreSubmodules", "none")
    [finding] = [f for f in pn("doctor", "--json").json()["findings"] if f["check"] == "git_setup"]
    assert "the submodule settings in .git/config" in json.dumps(finding)
    steps = {s["path"]: s["action"] for s in pn("init", "--json").json()}
    assert steps[".git/config submodules"] == "updated"
    assert git(repo, "config", "--local", "diff.ignoreSubmodules").strip() == "all"


def test_pn_init_outside_git_is_a_one_line_error(tmp_path: Path, pn: Pn) -> None:
    done = pn("init", "--json", cwd=tmp_path)
    assert done.code == 1
    assert "not in a git work tree" in done.error()["error"]


def test_pn_init_upgrades_the_old_import_hook(repo: Path, pn: Pn) -> None:
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: pensa-import\n    name: old\n"
        "    entry: pn import\n    language: system\n"
    )
    assert pn("init").code == 0
    config = (repo / ".pre-commit-config.yaml").read_text()
    assert "pensa-import" not in config
    assert "pn sync" in config


def test_unknown_fields_survive_import_export_and_a_merge(inited: Path, pn: Pn) -> None:
    line = (
        '{"id":"pn-0000abcd","title":"from the future","issue_type":"task","status":"open",'
        '"priority":"p2","created_at":"2026-01-01T00:00:00Z",'
        '"updated_at":"2026-01-01T00:00:00Z","labels":["a","b"],"x_meta":{"k":null}}\n'
    )
    path = inited / ".pensa" / "issues.jsonl"
    path.write_text(line)
    assert pn("import").code == 0
    assert pn("update", "pn-0000abcd", "--title", "renamed").code == 0
    assert pn("export").code == 0
    assert path.read_text() == ""  # the record moved to its shard
    record = json.loads((inited / ".pensa" / "issues-0.jsonl").read_text())
    assert record["title"] == "renamed"
    assert (record["labels"], record["x_meta"]) == (["a", "b"], {"k": None})
    assert list(record)[-2:] == ["labels", "x_meta"]


def test_merge_driver_merges_three_versions_in_place(tmp_path: Path) -> None:
    def line(title: str, updated: str) -> str:
        return (
            f'{{"id":"pn-1","title":"{title}","issue_type":"task","status":"open",'
            f'"priority":"p2","created_at":"2026-01-01T00:00:00Z","updated_at":"{updated}"}}\n'
        )

    base, ours, theirs = (tmp_path / n for n in ("O", "A", "B"))
    base.write_text(line("t", "2026-01-01T00:00:00Z"))
    ours.write_text(line("t", "2026-01-01T00:00:00Z"))
    theirs.write_text(line("changed", "2026-01-02T00:00:00Z"))
    done = subprocess.run(
        [PN, "merge-driver", str(base), str(ours), str(theirs), ".pensa/issues.jsonl"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(ours.read_text())["title"] == "changed"


def test_a_comment_committed_on_a_branch_leaves_with_it_and_never_reaches_main(
    inited: Path, pn: Pn
) -> None:
    """Comments follow the checkout as issues do: one committed only on a branch leaves the
    database with the switch (and comes back with it), one never committed stays, and main's
    next commit never carries the branch's, even after the branch is deleted."""
    issue = pn("q", "on main", "-t", "task").out.strip()
    git(inited, "add", "-A")
    git(inited, "commit", "-qm", "issue")
    git(inited, "switch", "-qc", "x")
    on_x = pn("comment", "add", issue, "said on x", "--json").json()["id"]
    git(inited, "add", "-A")
    git(inited, "commit", "-qm", "comment on x")
    git(inited, "switch", "-q", "main")
    kept = pn("comment", "add", issue, "not committed", "--json").json()["id"]

    def said() -> list[str]:
        return [c["id"] for c in pn("show", issue, "--json").json()["comments"]]

    assert said() == [kept]
    git(inited, "switch", "-q", "x")
    assert sorted(said()) == sorted([on_x, kept])
    git(inited, "switch", "-q", "main")
    git(inited, "branch", "-qD", "x")
    git(inited, "add", "-A")
    git(inited, "commit", "-qm", "main's own")
    assert said() == [kept]
    assert "said on x" not in committed_at(inited, kind="comments")
    assert "not committed" in committed_at(inited, kind="comments")

"""Export and import: deterministic files, all-or-nothing import with file:line errors."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from pensa.committed import jsonl
from pensa.committed.disk import file_name, jsonl_files
from pensa.errors import InvalidData
from pensa.graph import Graph
from pensa.models import IssueType
from pensa.project import Project, at
from pensa.store import Store
from pensa.tracker import Tracker

from ..conftest import PN, Clock, Pn, committed


@pytest.fixture
def project(tmp_path: Path) -> Project:
    found = at(tmp_path / ".pensa")
    found.ensure()
    return found


def shard(project: Project, kind: str, issue_id: str) -> Path:
    """The file holding the record of `kind` of issue `issue_id`."""
    return Path(project.dir) / file_name(f"{kind}.jsonl", issue_id)


def populate(project: Project, clock: Clock) -> dict[str, str]:
    """A bug, its fix, a dependency and a comment; returns their ids by name."""
    with Store.open(project.db) as store:
        tracker = Tracker(store, now=clock)
        bug = tracker.create("crash ✓", issue_type=IssueType.BUG, actor="a").id
        fix = tracker.create("fix", issue_type=IssueType.TASK, actor="a", fixes=bug).id
        first = tracker.create("first", issue_type=IssueType.CHORE, actor="a").id
        Graph(store, now=clock).add(fix, first, actor="a")
        tracker.add_comment(fix, "naïve note", actor="a")
        tracker.close(first, actor="a", reason="done")
        jsonl.export(store, project)
    return {"bug": bug, "fix": fix, "first": first}


def test_export_is_sorted_compact_utf8_and_omits_unset_fields(
    project: Project, clock: Clock
) -> None:
    ids = populate(project, clock)
    issues = committed(Path(project.dir)).splitlines()
    assert [json.loads(line)["id"] for line in issues] == sorted(ids.values())
    for issue_id in ids.values():  # each in its shard
        lines = shard(project, "issues", issue_id).read_text().splitlines()
        assert issue_id in [json.loads(line)["id"] for line in lines]
    assert Path(project.issues_jsonl).read_text() == ""  # the ids no shard takes
    bug_line = next(line for line in issues if line.startswith(f'{{"id":"{ids["bug"]}'))
    assert "crash ✓" in bug_line  # not \u escaped
    assert ": " not in bug_line
    assert ", " not in bug_line
    bug = json.loads(bug_line)
    assert list(bug) == [
        "id",
        "title",
        "issue_type",
        "status",
        "priority",
        "created_at",
        "updated_at",
    ]
    deps = [
        json.loads(line) for line in shard(project, "deps", ids["fix"]).read_text().splitlines()
    ]
    assert deps == [{"issue_id": ids["fix"], "depends_on_id": ids["first"]}]
    comment = json.loads(shard(project, "comments", ids["fix"]).read_text())
    assert list(comment) == ["id", "issue_id", "actor", "text", "created_at"]


def test_re_export_of_an_unchanged_database_is_byte_identical(
    project: Project, clock: Clock
) -> None:
    populate(project, clock)
    before = [Path(p).read_bytes() for p in jsonl_files(project)]
    with Store.open(project.db) as store:
        jsonl.export(store, project)
    assert [Path(p).read_bytes() for p in jsonl_files(project)] == before
    assert not list(Path(project.dir).glob("*.tmp"))


def test_import_rebuilds_and_keeps_events_of_issues_that_still_exist(
    project: Project, clock: Clock
) -> None:
    ids = populate(project, clock)
    first = shard(project, "issues", ids["first"])
    kept = [line for line in first.read_text().splitlines() if ids["first"] not in line]
    first.write_text("".join(f"{line}\n" for line in kept))
    shard(project, "deps", ids["fix"]).write_text("")
    summary = jsonl.import_(project, discard_local=True)
    assert summary is not None
    assert (summary.issues, summary.deps, summary.comments) == (2, 0, 1)
    with Store.open(project.db) as store:
        tracker = Tracker(store)
        assert [e.event_type for e in tracker.history(ids["fix"])] == [
            "commented",
            "dep_added",
            "created",
        ]
        assert store.rows("SELECT count(*) FROM events WHERE issue_id = ?", (ids["first"],)) == [
            (0,)
        ]


@pytest.mark.parametrize(
    ("file", "line", "message"),
    [
        ("issues.jsonl", '{"id": "pn-1"', "issues.jsonl:2: not valid JSON"),
        ("issues.jsonl", "<<<<<<< HEAD", "issues.jsonl:2: git merge conflict marker"),
        ("issues.jsonl", "[1, 2]", "issues.jsonl:2: expected a JSON object"),
        (
            "issues.jsonl",
            '{"id":"pn-2","title":"t","issue_type":"story","status":"open","priority":"p2",'
            '"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}',
            "issues.jsonl:2: invalid issue type 'story'",
        ),
        (
            "issues.jsonl",
            '{"id":"pn-2","title":"t","issue_type":"task","status":"in-progress",'
            '"priority":"p2","created_at":"2026-01-01T00:00:00Z",'
            '"updated_at":"2026-01-01T00:00:00Z"}',
            "issues.jsonl:2: invalid status 'in-progress' (did you mean 'in_progress'?)",
        ),
        (
            "issues.jsonl",
            '{"id":"pn-2","title":"t","issue_type":"task","status":"open","priority":"p2",'
            '"created_at":"yesterday","updated_at":"2026-01-01T00:00:00Z"}',
            "issues.jsonl:2: created_at is not an RFC 3339 time",
        ),
        ("issues.jsonl", '{"id":"pn-2","title":"t"}', "issues.jsonl:2: missing field(s)"),
        (
            "issues.jsonl",
            '{"id":"pn-2","title":"t","issue_type":"task","status":"open","priority":"p2",'
            '"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","x":'
            + "[" * 100_000
            + "]" * 100_000
            + "}",
            "issues.jsonl:2: JSON nested deeper than 64 levels",
        ),
        (
            "issues.jsonl",
            '{"id":"pn-2","title":"\\ud800","issue_type":"task","status":"open",'
            '"priority":"p2","created_at":"2026-01-01T00:00:00Z",'
            '"updated_at":"2026-01-01T00:00:00Z"}',
            "issues.jsonl:2: a string holds a lone surrogate",
        ),
    ],
)
def test_a_bad_line_fails_with_file_and_line_and_changes_nothing(
    project: Project, clock: Clock, file: str, line: str, message: str
) -> None:
    populate(project, clock)
    path = Path(project.dir) / file
    # A good line first, copied from its shard (a copy in two files is read once).
    first_line = committed(Path(project.dir), file.removesuffix(".jsonl")).splitlines()[0]
    path.write_text(first_line + "\n" + line + "\n")
    before = Path(project.db).read_bytes()
    listed = sorted(p.name for p in Path(project.dir).iterdir())
    with pytest.raises(InvalidData, match="^" + re.escape(message)):
        jsonl.import_(project)
    assert Path(project.db).read_bytes() == before
    assert sorted(p.name for p in Path(project.dir).iterdir()) == listed


def test_a_line_that_is_not_utf8_fails_with_file_and_line_and_changes_nothing(
    project: Project, clock: Clock
) -> None:
    ids = populate(project, clock)
    path = shard(project, "comments", ids["fix"])
    path.write_bytes(path.read_bytes() + b'{"id": "\xff"}\n')
    lines = path.read_bytes().count(b"\n")
    before = Path(project.db).read_bytes()
    with pytest.raises(InvalidData, match=rf"^{re.escape(path.name)}:{lines}: not UTF-8 text"):
        jsonl.import_(project)
    assert Path(project.db).read_bytes() == before


def test_a_comment_or_edge_without_its_issue_waits_in_the_files(
    project: Project, clock: Clock
) -> None:
    """A cherry-pick brings a comment or an edge without the commit that made its issue: the
    import leaves it out of the database, where it cannot be, and the export keeps the line
    for when the issue comes."""
    ids = populate(project, clock)
    waiting = {
        "comments": '{"id":"pc-1","issue_id":"pn-00000001","actor":"a","text":"t",'
        '"created_at":"2026-01-01T00:00:00.000000Z"}\n',
        "deps": f'{{"issue_id":"{ids["fix"]}","depends_on_id":"pn-00000001"}}\n',
    }
    for kind, line in waiting.items():
        path = shard(project, kind, ids["fix"])
        path.write_text(path.read_text() + line)
    # A tombstone ends the wait: the comment goes with its deleted issue.
    dead = '{"id":"pc-2","issue_id":"pn-00000002","actor":"a","text":"t",' + (
        '"created_at":"2026-01-01T00:00:00.000000Z"}\n'
    )
    path = shard(project, "comments", ids["fix"])
    path.write_text(path.read_text() + dead)
    shard(project, "deleted", "pn-00000002").write_text(
        '{"id":"pn-00000002","deleted_at":"2026-01-01T00:00:00.000000Z"}\n'
    )
    summary = jsonl.import_(project, discard_local=True)
    assert summary is not None
    assert (summary.deps, summary.comments) == (1, 1)
    with Store.open(project.db) as store:
        assert store.rows("SELECT count(*) FROM comments WHERE id = 'pc-1'") == [(0,)]
        tracker = Tracker(store, now=clock)
        tracker.add_comment(ids["fix"], "a second note", actor="a")  # the shards rewritten
        Graph(store, now=clock).add(ids["fix"], ids["bug"], actor="a")
        jsonl.export(store, project)
    for kind, line in waiting.items():
        assert line in shard(project, kind, ids["fix"]).read_text()
    assert '"id":"pc-2"' not in shard(project, "comments", ids["fix"]).read_text()


def test_import_refuses_a_cycle_in_deps(project: Project, clock: Clock) -> None:
    ids = populate(project, clock)
    with shard(project, "deps", ids["first"]).open("a") as f:
        f.write(json.dumps({"issue_id": ids["first"], "depends_on_id": ids["fix"]}) + "\n")
    with pytest.raises(InvalidData, match="dependency cycle"):
        jsonl.import_(project)


def test_import_refuses_fixes_that_is_not_a_bug(project: Project, clock: Clock) -> None:
    ids = populate(project, clock)
    path = shard(project, "issues", ids["fix"])
    text = path.read_text().replace(f'"fixes":"{ids["bug"]}"', f'"fixes":"{ids["first"]}"')
    path.write_text(text)
    with pytest.raises(InvalidData, match="not a bug"):
        jsonl.import_(project)


def test_import_without_jsonl_is_a_no_op(project: Project) -> None:
    assert jsonl.import_(project) is None
    assert not Path(project.db).exists()


@pytest.mark.process
def test_cli_import_error_is_json_with_file_and_line(repo: Path, pn: Pn) -> None:
    issue = pn("q", "x", "-t", "task").out.strip()
    pn("export")
    issues = repo / ".pensa" / file_name("issues.jsonl", issue)
    issues.write_text(issues.read_text() + "{oops\n")
    before = (repo / ".pensa" / "db.sqlite").read_bytes()
    result = pn("import", "--json")
    assert result.code == 1
    error = result.error()
    assert error["code"] == "invalid_data"
    assert error["error"].startswith(f"{issues.name}:2: not valid JSON")
    assert (repo / ".pensa" / "db.sqlite").read_bytes() == before


def _try_drop_root_powers() -> None:
    try:
        _drop_root_powers()
    except OSError:
        os._exit(1)


def _drop_root_powers() -> None:
    """Make a root child obey file permissions (drop CAP_DAC_OVERRIDE/READ_SEARCH)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.process
def test_read_only_database_gives_a_clear_error_and_changes_nothing(repo: Path, pn: Pn) -> None:
    issue = pn("create", "x", "-t", "task", "--json").json()["id"]
    pensa = repo / ".pensa"
    db = pensa / "db.sqlite"
    before = db.read_bytes()
    db.chmod(0o444)
    pensa.chmod(0o555)
    try:
        env = {**os.environ, "PN_ACTOR": "a"}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [PN, *args],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                check=False,
                preexec_fn=_drop_root_powers if os.geteuid() == 0 else None,
            )

        for args in (["create", "y", "-t", "task"], ["close", issue], ["update", issue, "--claim"]):
            result = run(*args, "--json")
            assert result.returncode == 1, result
            error = json.loads(result.stderr)
            assert error["code"] == "read_only"
            assert "cannot write" in error["error"]
            assert "nothing was changed" in error["error"]
        listed = run("list", "--json")
        assert listed.returncode == 0
        assert [i["id"] for i in json.loads(listed.stdout)] == [issue]
    finally:
        pensa.chmod(0o755)
        db.chmod(0o644)
    assert db.read_bytes() == before


def test_import_over_a_crashed_writer_leaves_no_hot_journal(project: Project, clock: Clock) -> None:
    """A journal left by a crashed writer must not be applied to the imported database."""
    import shutil
    import sqlite3

    populate(project, clock)
    db = Path(project.db)
    crashed = db.with_name("crashed.sqlite")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA cache_size = 2")  # spill changed pages into the file mid-transaction
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE issues SET title = 'half-written'")
    writer.execute("DELETE FROM events")
    # Snapshot file and journal mid-transaction: what a crash leaves behind.
    shutil.copy(db, crashed)
    journal = db.with_name("db.sqlite-journal")
    assert journal.exists()
    shutil.copy(journal, crashed.with_name("crashed.sqlite-journal"))
    writer.execute("ROLLBACK")
    writer.close()
    crashed.replace(db)
    crashed.with_name("crashed.sqlite-journal").replace(journal)

    summary = jsonl.import_(project)
    assert summary is not None
    # gone, or kept (PERSIST) with its header zeroed: no journal SQLite would apply
    assert not journal.exists() or not journal.read_bytes()[:8].strip(b"\0")
    with Store.open(db) as store:
        assert store.rows("PRAGMA integrity_check") == [("ok",)]
        titles = {t for (t,) in store.rows("SELECT title FROM issues")}
    assert "half-written" not in titles
    assert len(titles) == 3


def test_import_keeps_every_index_it_rebuilds(project: Project, clock: Clock) -> None:
    """Import drops the emptied tables' indexes and makes them again after the
    inserts; the schema afterwards is exactly the schema before."""
    import sqlite3

    def indexes() -> list[tuple[str, str]]:
        conn = sqlite3.connect(project.db)
        try:
            return sorted(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'"))
        finally:
            conn.close()

    populate(project, clock)
    before = indexes()
    assert len([i for i in before if i[1]]) >= 6
    assert jsonl.import_(project) is not None
    assert indexes() == before

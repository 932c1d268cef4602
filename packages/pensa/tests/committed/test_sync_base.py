"""The sync base and the export's notes: written only when something differs, so a no-op
export or sync leaves the database file as it was; a changed file's base is what HEAD holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from pensa.committed import sync
from pensa.committed.disk import file_name
from pensa.models import IssueType
from pensa.project import Project, at
from pensa.store import Store
from pensa.tracker import Tracker

from ..conftest import Clock, Pn, git


def _project(tmp_path: Path, clock: Clock) -> tuple[Project, str]:
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        issue = Tracker(store, now=clock).create("x", issue_type=IssueType.TASK, actor="a").id
        sync.export(store, project)
    return project, issue


def test_a_no_op_export_or_sync_leaves_the_database_file_as_it_was(
    tmp_path: Path, clock: Clock
) -> None:
    project, _ = _project(tmp_path, clock)
    before = Path(project.db).read_bytes()
    with Store.open(project.db) as store:
        sync.export(store, project)
        sync.sync(store, project)
    assert Path(project.db).read_bytes() == before


def test_an_export_writes_only_the_shards_the_database_changed(
    tmp_path: Path, clock: Clock
) -> None:
    project, first = _project(tmp_path, clock)
    shard = Path(project.dir) / file_name("issues.jsonl", first)
    before = shard.stat().st_mtime_ns
    with Store.open(project.db) as store:
        second = Tracker(store, now=clock).create("y", issue_type=IssueType.TASK, actor="a").id
        assert store.rows("SELECT kind, key FROM export_dirty") == [("issues", second)]
        sync.export(store, project)
        assert store.rows("SELECT count(*) FROM export_dirty") == [(0,)]
    if file_name("issues.jsonl", second) != shard.name:
        assert shard.stat().st_mtime_ns == before
    assert second in (Path(project.dir) / file_name("issues.jsonl", second)).read_text()


@pytest.mark.process
def test_in_git_each_files_base_is_what_head_holds(inited: Path, pn: Pn) -> None:
    issue = pn("q", "committed", "-t", "task").out.strip()
    git(inited, "add", "-A")
    git(inited, "commit", "-qm", "issue")
    name = file_name("issues.jsonl", issue)
    with Store.open(inited / ".pensa" / "db.sqlite") as store:
        rows = {
            n: (oid, bytes(content))
            for n, oid, content in store.rows("SELECT name, oid, content FROM sync_base")
        }
    head = git(inited, "rev-parse", f"HEAD:.pensa/{name}").strip()
    assert rows[name] == (head, git(inited, "show", f"HEAD:.pensa/{name}").encode())
    assert pn("update", issue, "--claim").code == 0
    assert pn("export").code == 0  # an export is no commit: the base stays HEAD's
    with Store.open(inited / ".pensa" / "db.sqlite") as store:
        (oid,) = store.rows("SELECT oid FROM sync_base WHERE name = ?", (name,))[0]
    assert oid == head

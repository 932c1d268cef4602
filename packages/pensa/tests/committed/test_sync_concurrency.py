"""Concurrency of the git layer: one snapshot per export, no lost writes."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from pensa.models import IssueType

from ..conftest import BIN, PN, Pn, committed, git


def _issue_line(n: int) -> str:
    return json.dumps(
        {
            "id": f"pn-{n:08x}",
            "title": f"bulk {n}",
            "issue_type": "task",
            "status": "open",
            "priority": "p2",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
        }
    )


@pytest.mark.process
def test_export_reads_one_snapshot_while_dep_writers_run(repo: Path, pn: Pn) -> None:
    root = pn("q", "root", "-t", "task").out.strip()
    stop = threading.Event()
    errors: list[str] = []

    def writer() -> None:
        while not stop.is_set():
            done = pn("create", "child", "-t", "task", "--dep", root)
            if done.code != 0:
                errors.append(done.err)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(15):
            assert pn("export").code == 0
            pensa = repo / ".pensa"
            ids = {json.loads(line)["id"] for line in committed(pensa).splitlines()}
            for line in committed(pensa, "deps").splitlines():
                dep = json.loads(line)
                assert {dep["issue_id"], dep["depends_on_id"]} <= ids, "torn export"
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []


@pytest.mark.process
def test_a_write_during_import_waits_and_lands_in_the_rebuilt_database(repo: Path, pn: Pn) -> None:
    assert pn("q", "seed", "-t", "task").code == 0
    pensa = repo / ".pensa"
    (pensa / "issues.jsonl").write_text("\n".join(_issue_line(n) for n in range(30_000)) + "\n")
    importer = subprocess.Popen(
        [PN, "import", "--discard-local"],  # the seed is not in the files
        cwd=repo,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "PN_ACTOR": "t"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    probe = sqlite3.connect(pensa / "db.sqlite", timeout=0, isolation_level=None)
    deadline = time.monotonic() + 30
    while True:  # wait until the import holds the write lock
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
        except sqlite3.OperationalError:
            break
        assert importer.poll() is None, "import finished before it could be raced"
        assert time.monotonic() < deadline
    probe.close()
    late = pn("q", "written during the import", "-t", "task")
    _, err = importer.communicate(timeout=60)
    assert importer.returncode == 0, err
    assert late.code == 0, late.err
    titles = {i["title"] for i in pn("list", "--json").json()}
    assert "written during the import" in titles
    assert "bulk 0" in titles


@pytest.mark.process
def test_import_cleans_leftover_temp_files_and_git_ignores_them(repo: Path, pn: Pn) -> None:
    pn("q", "x", "-t", "task")
    assert pn("export").code == 0
    pensa = repo / ".pensa"
    leftover = pensa / "db.sqlite.import-999999.tmp-journal"
    leftover.write_text("junk")
    assert git(repo, "check-ignore", str(leftover)).strip()
    assert pn("import").code == 0
    assert not leftover.exists()


@pytest.mark.parametrize("late", ["sync", "export"])
def test_a_sync_waiting_for_the_lock_does_not_undo_the_export_that_held_it(
    tmp_path: Path, late: str
) -> None:
    """Two loops in one checkout: one exports (its pre-commit hook) while the other's sync
    waits for the write lock. Files read before the wait were older than the base the export
    then recorded, and the merge took them for a checkout without the new issue: deleted."""
    from pensa.committed import sync
    from pensa.project import at
    from pensa.store import Store
    from pensa.tracker import Tracker

    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as first:
        sync.export(first, project)
        new = Tracker(first).create(
            "made after the last export", issue_type=IssueType.TASK, actor="a"
        )
    waiting = Store.open(project.db)
    take_lock = waiting.write

    def export_first() -> contextlib.AbstractContextManager[sqlite3.Connection]:
        with Store.open(project.db) as other:
            sync.export(other, project)  # the other loop got the lock first
        return take_lock()

    waiting.write = export_first  # type: ignore[method-assign,assignment]
    with waiting:
        getattr(sync, late)(waiting, project)
    with Store.open(project.db) as after:
        assert [r[0] for r in after.rows("SELECT id FROM issues")] == [new.id]
    assert new.id in committed(tmp_path / ".pensa")

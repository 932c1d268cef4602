"""doctor: findings as data, and --fix repairs only what is safe."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pensa import doctor, jsonl
from pensa.models import IssueType, Status
from pensa.project import at
from pensa.store import Store
from pensa.tracker import Tracker

from .conftest import Clock, Pn


def test_a_claim_is_stale_by_its_latest_claim_not_its_last_update(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    tracker.update(issue, actor="ann", claim=True)
    clock.advance(minutes=29)
    assert doctor.stale_claims(store, clock.now) == []
    clock.advance(minutes=20)
    tracker.update(issue, actor="ann", description="still on it")  # an update is not a claim
    stale = doctor.stale_claims(store, clock.now)
    assert [s[0] for s in stale] == [issue]


def test_fix_releases_stale_claims_and_reports_what_it_did(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    tracker.update(issue, actor="ann", claim=True)
    clock.advance(hours=1)
    report = doctor.run(store, None, now=clock.now, fix=True, actor="doc")
    assert [f.check for f in report.findings] == ["stale_claim"]
    assert [(f.check, f.issue_id) for f in report.fixes] == [("stale_claim", issue)]
    assert tracker.get(issue).status is Status.OPEN
    assert tracker.get(issue).assignee is None
    assert doctor.run(store, None, now=clock.now, fix=False, actor="").findings == []


def test_orphans_and_dangling_fixes_are_found_and_repaired(
    tmp_path: Path, tracker: Tracker, store: Store, clock: Clock
) -> None:
    bug = tracker.create("bug", issue_type=IssueType.BUG, actor="a").id
    task = tracker.create("task", issue_type=IssueType.TASK, actor="a", fixes=bug).id
    raw = sqlite3.connect(store.path or "")  # another tool, without foreign keys
    raw.execute("INSERT INTO deps VALUES (?, 'pn-gone0000')", (task,))
    raw.execute("DELETE FROM issues WHERE id = ?", (bug,))
    raw.commit()
    raw.close()
    checks = [f.check for f in doctor.diagnose(store, None, now=clock.now)]
    assert checks == ["orphaned_dep", "dangling_fixes"]
    report = doctor.run(store, None, now=clock.now, fix=True, actor="doc")
    assert [f.check for f in report.fixes] == ["orphaned_dep", "dangling_fixes"]
    assert doctor.diagnose(store, None, now=clock.now) == []
    assert tracker.get(task).fixes is None


def test_drift_between_database_and_jsonl_is_reported(tmp_path: Path, clock: Clock) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        tracker = Tracker(store, now=clock)
        tracker.create("x", issue_type=IssueType.TASK, actor="a")
        jsonl.export(store, project)
        assert doctor.diagnose(store, project, now=clock.now) == []
        tracker.create("y", issue_type=IssueType.TASK, actor="a")
        drift = doctor.diagnose(store, project, now=clock.now)
    assert [f.check for f in drift] == ["jsonl_drift"]
    assert "issues.jsonl (1 lines) differs from the database (2 rows)" in drift[0].message


def test_doctor_exits_0_with_findings_and_fix_reports_fixes(repo: Path, pn: Pn) -> None:
    pn("create", "x", "-t", "task")
    result = pn("doctor", "--fix", "--json")
    assert result.code == 0
    assert [f["check"] for f in result.json()["findings"]] == ["jsonl_drift"] * 3
    assert result.json()["fixes"] == []
    assert pn("doctor").out.startswith("[jsonl_drift]")

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
    assert [s.issue_id for s in stale] == [issue]


def test_every_current_claim_is_reported_as_information(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    first = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    second = tracker.create("y", issue_type=IssueType.TASK, actor="a").id
    tracker.create("open, not claimed", issue_type=IssueType.TASK, actor="a")
    tracker.update(first, actor="ann", claim=True)
    clock.advance(minutes=5)
    tracker.update(second, actor="bob", claim=True)
    clock.advance(minutes=3)
    found = doctor.diagnose(store, None, now=clock.now)
    assert [(f.check, f.issue_id) for f in found] == [("claim", first), ("claim", second)]
    assert found[0].message.startswith(f"{first} is in progress, claimed by ann 8 min ago (")
    assert found[1].message.startswith(f"{second} is in progress, claimed by bob 3 min ago (")
    assert not any(f.is_problem for f in found)


def test_fix_leaves_fresh_claims_alone(tracker: Tracker, store: Store, clock: Clock) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    tracker.update(issue, actor="ann", claim=True)
    clock.advance(minutes=29)
    report = doctor.run(store, None, now=clock.now, fix=True, actor="doc")
    assert [f.check for f in report.findings] == ["claim"]
    assert report.fixes == []
    assert tracker.get(issue).status is Status.IN_PROGRESS
    assert tracker.get(issue).assignee == "ann"


def test_a_claim_turns_stale_after_30_minutes_and_says_fix_releases_it(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    tracker.update(issue, actor="ann", claim=True)
    clock.advance(minutes=45)
    [finding] = doctor.diagnose(store, None, now=clock.now)
    assert (finding.check, finding.issue_id, finding.is_problem) == ("stale_claim", issue, True)
    assert finding.message.startswith(f"{issue} is in progress, claimed by ann 45 min ago (")
    assert finding.message.endswith("stale after 30 min, --fix releases it")


def test_in_progress_without_assignee_counts_from_its_last_update(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    tracker.update(issue, actor="ann", status=Status.IN_PROGRESS)
    clock.advance(minutes=2)
    [finding] = doctor.diagnose(store, None, now=clock.now)
    assert finding.check == "claim"
    assert finding.message.startswith(f"{issue} is in progress, with no assignee, claimed 2 min")


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
    raw.execute("INSERT INTO deps VALUES (?, 'pn-gone0000', NULL)", (task,))
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


def test_a_jsonl_file_that_is_not_utf8_is_drift_not_a_crash(tmp_path: Path, clock: Clock) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        Tracker(store, now=clock).create("x", issue_type=IssueType.TASK, actor="a")
        jsonl.export(store, project)
        Path(project.comments_jsonl).write_bytes(b"\xff\n")
        drift = doctor.diagnose(store, project, now=clock.now)
    assert [f.check for f in drift] == ["jsonl_drift"]
    assert drift[0].message.startswith("comments.jsonl (1 lines) differs")


def test_doctor_exits_0_with_findings_and_fix_reports_fixes(repo: Path, pn: Pn) -> None:
    pn("create", "x", "-t", "task")
    result = pn("doctor", "--fix", "--json")
    assert result.code == 0
    assert [f["check"] for f in result.json()["findings"]] == ["jsonl_drift"] * 3
    assert result.json()["fixes"] == []
    assert pn("doctor").out.startswith("[jsonl_drift]")


def backdate_claim(repo: Path, issue_id: str, *, minutes: int) -> None:
    """Move an issue's events `minutes` into the past, as if its claim were that old."""
    db = sqlite3.connect(repo / ".pensa" / "db.sqlite")
    db.execute(
        "UPDATE events SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?) "
        "WHERE issue_id = ?",
        (f"-{minutes} minutes", issue_id),
    )
    db.commit()
    db.close()


def test_doctor_shows_a_fresh_claim_and_fix_keeps_it(repo: Path, pn: Pn) -> None:
    issue = pn("create", "x", "-t", "task", "--json").json()["id"]
    pn("claim-next", "--json")
    pn("export")
    report = pn("doctor", "--fix", "--json")
    assert report.code == 0
    [finding] = report.json()["findings"]
    assert finding["check"] == "claim"
    assert finding["issue_id"] == issue
    assert finding["message"].startswith(f"{issue} is in progress, claimed by agent-1 0 min ago")
    assert report.json()["fixes"] == []
    human = pn("doctor")
    assert human.code == 0
    assert human.out.splitlines()[0].startswith(f"[claim] {issue} is in progress, claimed by")
    assert human.out.splitlines()[1:] == ["no problems found"]


def test_doctor_fix_releases_a_stale_claim(repo: Path, pn: Pn) -> None:
    issue = pn("create", "x", "-t", "task", "--json").json()["id"]
    pn("claim-next", "--json")
    pn("export")
    backdate_claim(repo, issue, minutes=40)
    human = pn("doctor")
    assert human.out.startswith(f"[stale_claim] {issue} is in progress, claimed by agent-1 40 min")
    assert "no problems found" not in human.out
    report = pn("doctor", "--fix", "--json").json()
    assert [(f["check"], f["issue_id"]) for f in report["findings"]] == [("stale_claim", issue)]
    assert report["fixes"] == [
        {"check": "stale_claim", "message": f"released {issue}", "issue_id": issue}
    ]
    assert pn("show", issue, "--json").json()["status"] == "open"

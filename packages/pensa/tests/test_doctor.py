"""doctor: findings as data, and --fix repairs only what is safe."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pensa import doctor
from pensa.committed import jsonl, snapshot
from pensa.committed.disk import file_name
from pensa.models import IssueType, Status
from pensa.project import at
from pensa.store import Store
from pensa.tracker import Tracker

from .conftest import Clock, Pn


def test_a_claim_is_stale_by_its_latest_claim_not_its_last_update(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    tracker.claim(issue, actor="ann")
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
    tracker.claim(first, actor="ann")
    clock.advance(minutes=5)
    tracker.claim(second, actor="bob")
    clock.advance(minutes=3)
    found = doctor.diagnose(store, None, now=clock.now)
    assert [(f.check, f.issue_id) for f in found] == [("claim", first), ("claim", second)]
    assert found[0].message.startswith(f"{first} is in progress, claimed by ann 8 min ago (")
    assert found[1].message.startswith(f"{second} is in progress, claimed by bob 3 min ago (")
    assert not any(f.is_problem for f in found)


def test_the_claims_are_read_once_for_their_findings_and_the_idle_assignees(
    tracker: Tracker, store: Store, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each read walks every claim's events (thousands of claims at 100k issues)."""
    held = tracker.create("held", issue_type=IssueType.TASK, actor="a").id
    idle = tracker.create("idle", issue_type=IssueType.TASK, actor="a").id
    tracker.claim(held, actor="ann")
    tracker.update(idle, actor="a", assignee="bob")
    reads = []
    claims = doctor.claims

    def counted(store: Store) -> list[doctor.Claim]:
        reads.append(store)
        return claims(store)

    monkeypatch.setattr(doctor, "claims", counted)
    found = doctor.diagnose(store, None, now=clock.now)
    assert [(f.check, f.issue_id) for f in found] == [("claim", held), ("idle_assignee", idle)]
    assert len(reads) == 1


def test_sqlite_utils_is_imported_beside_the_integrity_check(
    store: Store, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is SQLite's work, without the GIL; importing sqlite-utils is Python's (most
    of doctor's start-up when nothing is compiled): each on its own core. Here the import
    waits for the check to start, which waits for the import to start (the waits' limit is
    only there to fail, not hang, if they ran one after the other)."""
    import importlib
    import threading
    from types import SimpleNamespace

    from pensa import integrity

    importing, checking = threading.Event(), threading.Event()

    def import_module(name: str) -> object:
        importing.set()
        checking.wait(timeout=30)
        return importlib.import_module(name)

    check = integrity.quick_check

    def watched(store: Store) -> list[str]:
        checking.set()
        assert importing.wait(timeout=30)
        return check(store)

    monkeypatch.setattr(doctor, "importlib", SimpleNamespace(import_module=import_module))
    monkeypatch.setattr(integrity, "quick_check", watched)
    assert doctor.diagnose(store, None, now=clock.now) == []
    assert "pensa-doctor-import" not in [t.name for t in threading.enumerate()]


def test_fix_leaves_fresh_claims_alone(tracker: Tracker, store: Store, clock: Clock) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
    tracker.claim(issue, actor="ann")
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
    tracker.claim(issue, actor="ann")
    clock.advance(minutes=45)
    [finding] = doctor.diagnose(store, None, now=clock.now)
    assert (finding.check, finding.issue_id, finding.is_problem) == ("stale_claim", issue, True)
    assert finding.message.startswith(f"{issue} is in progress, claimed by ann 45 min ago (")
    assert finding.message.endswith("stale after 30 min, `pn doctor --fix` releases it")


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
    tracker.claim(issue, actor="ann")
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


def test_orphaned_deps_are_what_one_query_over_both_ends_finds_in_its_order(
    tracker: Tracker, store: Store
) -> None:
    ids = [tracker.create(f"i{n}", issue_type=IssueType.TASK, actor="a").id for n in range(4)]
    raw = sqlite3.connect(store.path or "")  # another tool, without foreign keys
    raw.executemany(
        "INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)",
        [
            (ids[2], "pn-gone0001"),
            ("pn-gone0002", ids[0]),
            ("pn-gone0000", "pn-gone0001"),  # both ends missing: reported once
            (ids[1], ids[3]),
            (ids[0], "pn-0"),
        ],
    )
    raw.commit()
    raw.close()
    both_ends = store.rows(
        "SELECT issue_id, depends_on_id FROM deps WHERE issue_id NOT IN (SELECT id FROM issues) "
        "OR depends_on_id NOT IN (SELECT id FROM issues) ORDER BY 1, 2"
    )
    assert doctor.orphaned_deps(store) == both_ends
    assert len(both_ends) == 4


def test_dangling_fixes_are_found_and_cleared_in_creation_order(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    bugs = [tracker.create(f"bug {n}", issue_type=IssueType.BUG, actor="a").id for n in range(3)]
    tasks = [
        tracker.create(f"task {n}", issue_type=IssueType.TASK, actor="a", fixes=bug).id
        for n, bug in enumerate(reversed(bugs))  # the last task fixes the first bug
    ]
    raw = sqlite3.connect(store.path or "")  # another tool, without foreign keys
    raw.execute("UPDATE issues SET issue_type = 'task' WHERE issue_type = 'bug'")
    raw.commit()
    raw.close()
    found = [f.issue_id for f in doctor.diagnose(store, None, now=clock.now)]
    report = doctor.run(store, None, now=clock.now, fix=True, actor="doc")
    assert found == [f.issue_id for f in report.fixes] == tasks


def test_work_the_database_holds_and_the_files_lack_is_not_drift(
    tmp_path: Path, clock: Clock
) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        tracker = Tracker(store, now=clock)
        first = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
        assert doctor.diagnose(store, project, now=clock.now) == []  # never exported
        jsonl.export(store, project)
        tracker.create("y", issue_type=IssueType.TASK, actor="a")
        tracker.update(first, actor="a", title="renamed")
        tracker.add_comment(first, "note", actor="a")
        assert doctor.diagnose(store, project, now=clock.now) == []


def test_files_unchanged_since_the_last_sync_are_not_read_or_rendered(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Doctor at 100k issues rendered the whole export (0.64 s, 191 MB) to look for
    drift; files whose fingerprint is the last sync's hold nothing new and are skipped."""
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        tracker = Tracker(store, now=clock)
        made = tracker.create("x", issue_type=IssueType.TASK, actor="a")
        jsonl.export(store, project)
        tracker.create("y", issue_type=IssueType.TASK, actor="a")  # not exported: normal

        def no_render(*_: object) -> dict[str, str]:
            raise AssertionError("rendered the export")

        monkeypatch.setattr(snapshot, "render_db", no_render)
        assert doctor.diagnose(store, project, now=clock.now) == []
        path = Path(project.dir) / file_name("issues.jsonl", made.id)
        path.write_text(path.read_text().replace('"title":"x"', '"title":"by hand"'))
        with pytest.raises(AssertionError, match="rendered the export"):
            doctor.diagnose(store, project, now=clock.now)  # a changed file is compared


def test_full_runs_the_complete_integrity_check(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        asked: list[str] = []
        rows = store.rows

        def spy(sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
            asked.append(sql)
            return rows(sql, params)

        monkeypatch.setattr(store, "rows", spy)
        doctor.diagnose(store, project, now=clock.now)
        doctor.diagnose(store, project, now=clock.now, full=True)
    checks = [sql for sql in asked if sql.endswith("_check")]
    assert checks == ["PRAGMA quick_check", "PRAGMA integrity_check"]


def test_lines_on_disk_the_database_lacks_are_drift_with_the_fix(
    tmp_path: Path, clock: Clock
) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        tracker = Tracker(store, now=clock)
        issue = tracker.create("x", issue_type=IssueType.TASK, actor="a").id
        jsonl.export(store, project)
        path = Path(project.dir) / file_name("issues.jsonl", issue)
        path.write_text(path.read_text().replace('"title":"x"', '"title":"edited by hand"'))
        drift = doctor.diagnose(store, project, now=clock.now)
        assert [(f.check, f.message) for f in drift] == [
            (
                "jsonl_drift",
                f"{path.name} has 1 line the database lacks (changed since the last sync): "
                "`pn sync` merges them in",
            )
        ]
        from pensa.committed import sync

        sync.sync(store, project)
        assert doctor.diagnose(store, project, now=clock.now) == []
        assert tracker.get(issue).title == "edited by hand"


def test_a_jsonl_file_that_is_not_utf8_is_drift_not_a_crash(tmp_path: Path, clock: Clock) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    with Store.open(project.db) as store:
        Tracker(store, now=clock).create("x", issue_type=IssueType.TASK, actor="a")
        jsonl.export(store, project)
        (Path(project.dir) / "comments.jsonl").write_bytes(b"\xff\n")
        drift = doctor.diagnose(store, project, now=clock.now)
    assert [f.check for f in drift] == ["jsonl_drift"]
    assert drift[0].message == (
        "comments.jsonl has 1 line the database lacks, and comments.jsonl:1: not UTF-8 text "
        "(invalid start byte at byte 0): fix that line, then `pn sync`"
    )


@pytest.mark.process
def test_doctor_exits_0_with_findings_one_line_each_ending_with_the_fix(repo: Path, pn: Pn) -> None:
    pn("create", "x", "-t", "task")
    pn("export")
    with (repo / ".pensa" / "issues.jsonl").open("a") as f:
        f.write("{not json\n")  # the catch-up sync refuses it: the drift stays
    result = pn("doctor", "--fix", "--json")
    assert result.code == 0
    [finding] = result.json()["findings"]
    assert finding["check"] == "jsonl_drift"
    assert finding["message"].endswith("fix that line, then `pn sync`")
    assert result.json()["fixes"] == []
    human = pn("doctor").out.splitlines()
    assert human == [f"[jsonl_drift] {finding['message']}"]


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


@pytest.mark.process
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


@pytest.mark.process
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


def test_every_problem_is_one_line_that_names_its_fix(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    a = tracker.create("a", issue_type=IssueType.TASK, actor="x").id
    b = tracker.create("b", issue_type=IssueType.TASK, actor="x").id
    raw = sqlite3.connect(store.path or "")  # another tool, without foreign keys
    raw.execute("INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?), (?, ?)", (a, b, b, a))
    raw.execute(
        "INSERT INTO comments (id, issue_id, actor, text, created_at) "
        "VALUES ('pc-0000beef', 'pn-gone0000', 'x', 't', 'c')"
    )
    raw.commit()
    raw.close()
    found = doctor.diagnose(store, None, now=clock.now)
    assert [f.check for f in found] == ["orphaned_comment", "dep_cycle"]
    first, second = sorted((a, b))
    assert found[0].message == (
        "comment pc-0000beef is on missing pn-gone0000: `pn doctor --fix` removes it"
    )
    assert found[1].message == (
        f"dependency cycle {first} -> {second} -> {first}: "
        f"`pn dep remove {first} {second}` breaks it"
    )
    assert all("\n" not in f.message for f in found)
    report = doctor.run(store, None, now=clock.now, fix=True, actor="doc")
    assert [f.message for f in report.fixes] == ["removed 1 orphaned comments"]
    assert [f.check for f in doctor.diagnose(store, None, now=clock.now)] == ["dep_cycle"]

"""`pn import --from-beads`: a beads export, built to beads' documented format, comes in whole.

`fixtures/beads/issues.jsonl` follows beads-notes.md §1-2: one issue per line in beads'
v0.47 key order, Go's escaping (`\\u003c`), RFC 3339 times with nanoseconds and mixed
offsets, labels, dependencies and comments embedded (integer and string comment ids),
inline tombstones, and what real exports also carry: orchestration types (event, message,
molecule, agent, gate, convoy, custom), statuses such as hooked, pinned and custom ones, and
dependencies on issues missing from the file.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pensa import beads
from pensa.errors import InvalidData

from .conftest import Pn, committed

J = Callable[..., Any]
FIXTURE = Path(__file__).parent / "fixtures" / "beads" / "issues.jsonl"
RECORDS = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
BY_ID = {r["id"]: r for r in RECORDS}


def test_the_fixture_covers_every_documented_type_status_and_dependency_kind() -> None:
    assert len(RECORDS) >= 50
    types = {r["issue_type"] for r in RECORDS}
    assert {"bug", "feature", "task", "epic", "chore"} <= types
    assert {"event", "message", "molecule", "agent", "gate", "decision"} <= types
    statuses = {r["status"] for r in RECORDS}
    assert {"open", "in_progress", "blocked", "deferred", "closed", "tombstone"} <= statuses
    assert {"pinned", "hooked"} <= statuses
    kinds = {d["type"] for r in RECORDS for d in r.get("dependencies", [])}
    assert {"blocks", "related", "parent-child", "discovered-from"} <= kinds
    assert {"conditional-blocks", "waits-for", "relates-to", "duplicates", "supersedes"} <= kinds
    targets = {d["depends_on_id"] for r in RECORDS for d in r.get("dependencies", [])}
    assert targets - set(BY_ID), "some dependencies must point at issues missing from the file"
    assert {r["priority"] for r in RECORDS} == {0, 1, 2, 3, 4}
    assert "\\u003c" in FIXTURE.read_text()


def labelled(pnj: J, beads_id: str) -> dict[str, Any]:
    [issue] = pnj("list", "--all", "--label", f"beads:{beads_id}")
    return issue  # type: ignore[no-any-return]


@pytest.mark.process
def test_the_fixture_imports_with_every_beads_issue_accounted_for(pn: Pn, pnj: J) -> None:
    summary = pnj("import", "--from-beads", str(FIXTURE))
    assert summary["read"] == len(RECORDS)
    assert summary["imported"] + sum(summary["skipped"].values()) == len(RECORDS)
    work = [
        r
        for r in RECORDS
        if r["status"] != "tombstone"
        and r["issue_type"]
        in {"bug", "task", "chore", "feature", "epic", "story", "spike"} | {"milestone"}
    ]
    assert summary["imported"] == len(work) == pnj("count", "--all")["count"]
    assert summary["skipped"]["tombstone (deleted in beads)"] == 3
    assert summary["skipped"]["type message (no pensa counterpart)"] == 2
    mapped = {**beads.TYPES, **beads.TYPES_MAPPED}
    assert summary["types"] == dict(sorted(Counter(mapped[r["issue_type"]] for r in work).items()))
    assert summary["types"]["feature"] == 7  # six features and a story
    assert summary["mapped"]["type story -> feature, labelled story"] == 1
    assert summary["mapped"]["type milestone -> epic, labelled milestone"] == 1
    assert not any("type feature" in k or "type epic" in k for k in summary["mapped"])
    assert summary["dropped_fields"]["estimated_minutes"] > 0
    human = pn("import", "--from-beads", str(FIXTURE)).out  # a second run skips them all
    assert f"read {len(RECORDS)} beads issues" in human
    assert f"imported 0, not imported {len(RECORDS)}" in human
    assert f"{len(work)} already imported" in human
    assert pnj("count", "--all")["count"] == len(work)


@pytest.mark.process
def test_types_statuses_priorities_and_fields_map_as_documented(pnj: J) -> None:
    pnj("import", "--from-beads", str(FIXTURE))
    epic = labelled(pnj, "bd-a3f8")
    assert (epic["issue_type"], epic["priority"]) == ("epic", "p1")  # a type pensa has
    assert "## Design\n\nTokens in <httpOnly> cookies & a refresh endpoint." in epic["description"]
    working = labelled(pnj, "bd-a3f8.1")
    assert (working["status"], working["assignee"]) == ("in_progress", "alice")
    closed = labelled(pnj, "bd-a3f8.2")
    assert (closed["status"], closed["close_reason"]) == ("closed", "done in #41")
    assert closed["closed_at"].endswith("Z")
    blocked = labelled(pnj, "bd-a3f8.4")
    assert (blocked["status"], "blocked" in blocked["labels"]) == ("open", True)
    backlog = labelled(pnj, "bd-0104")
    assert (BY_ID["bd-0104"]["priority"], backlog["priority"]) == (4, "p3")
    assert "backlog" in backlog["labels"]
    assert "ref:gh-100" in labelled(pnj, "bd-0100")["labels"]
    source = BY_ID["bd-0101"]
    bug = labelled(pnj, "bd-0101")
    assert bug["created_at"] == source["created_at"][:26] + "Z"  # nanoseconds cut, UTC
    assert "<login>" in bug["description"]
    assert {"pinned", "hooked", "deferred", "review"} <= {
        label for i in pnj("list", "--all") for label in i["labels"]
    }


@pytest.mark.process
def test_parent_child_becomes_the_parent_and_blocks_stays(pnj: J) -> None:
    pnj("import", "--from-beads", str(FIXTURE))
    epic = labelled(pnj, "bd-a3f8")["id"]
    children = {labelled(pnj, f"bd-a3f8.{k}")["id"] for k in (1, 2, 4)}
    assert children <= {c["id"] for c in pnj("show", epic)["children"]}
    assert all(pnj("show", child)["parent"] == epic for child in children)
    assert pnj("show", epic)["deps"] == []  # a hierarchy, not dependencies
    assert epic not in {i["id"] for i in pnj("ready")}  # the epic waits for its parts
    refresh = labelled(pnj, "bd-a3f8.1")["id"]
    store = labelled(pnj, "bd-a3f8.4")["id"]
    assert [d["id"] for d in pnj("show", store)["deps"]] == [refresh]
    assert pnj("dep", "cycles") == []


@pytest.mark.process
def test_links_and_edges_to_missing_issues_become_comments(pnj: J) -> None:
    summary = pnj("import", "--from-beads", str(FIXTURE))
    assert summary["dangling"] == 5
    assert summary["cycles_broken"] == 2
    work = sorted(i for i in BY_ID if i.startswith("bd-01"))
    texts = [c["text"] for c in pnj("comment", "list", labelled(pnj, work[20])["id"])]
    assert "from beads: blocks bd-zzzz, which was not imported (not in the export)" in texts
    texts = [c["text"] for c in pnj("comment", "list", labelled(pnj, work[22])["id"])]
    assert texts == [
        "from beads: related bd-dead1, which was not imported (tombstone (deleted in beads))"
    ]
    related_to = labelled(pnj, work[5])["id"]
    texts = [c["text"] for c in pnj("comment", "list", labelled(pnj, work[4])["id"])]
    assert f"from beads: related to {related_to} ({work[5]})" in texts
    comments = pnj("comment", "list", labelled(pnj, "bd-0100")["id"])
    assert [(c["actor"], c["text"]) for c in comments] == [("bob", "seen again on build 0")]
    assert comments[0]["id"].startswith("pc-")


@pytest.mark.process
def test_a_bad_line_anywhere_imports_nothing(tmp_path: Path, repo: Path, pn: Pn, pnj: J) -> None:
    broken = tmp_path / "issues.jsonl"
    broken.write_text(FIXTURE.read_text() + '{"id":"bd-x","title":"t","priority":9}\n')
    error = pn("import", "--from-beads", str(broken), "--json").error()
    assert error["code"] == "invalid_data"
    assert error["error"] == f"{broken}:{len(RECORDS) + 1}: priority must be 0-4, got 9"
    assert pnj("count", "--all") == {"count": 0}


@pytest.mark.process
@pytest.mark.parametrize("where", ["file", "dir", "project"])
def test_the_export_is_found_from_the_file_its_directory_or_the_project(
    tmp_path: Path, pnj: J, where: str
) -> None:
    project = tmp_path / "old"
    (project / ".beads").mkdir(parents=True)
    (project / ".beads" / "issues.jsonl").write_text(FIXTURE.read_text())
    path = {"file": project / ".beads" / "issues.jsonl", "dir": project / ".beads"}.get(
        where, project
    )
    assert pnj("import", "--from-beads", str(path))["read"] == len(RECORDS)


@pytest.mark.process
def test_no_export_at_the_path_is_one_line(tmp_path: Path, pn: Pn) -> None:
    error = pn("import", "--from-beads", str(tmp_path), "--json").error()
    assert error["code"] == "invalid_data"
    assert "no beads export here" in error["error"]


@pytest.mark.process
def test_imported_issues_are_exported_to_jsonl_with_their_labels(repo: Path, pnj: J) -> None:
    pnj("import", "--from-beads", str(FIXTURE))
    pnj("export")
    lines = committed(repo / ".pensa").splitlines()
    assert len(lines) == pnj("count", "--all")["count"]
    assert all('"labels":["' in line and "beads:bd-" in line for line in lines)
    db = sqlite3.connect(repo / ".pensa" / "db.sqlite")
    assert db.execute("SELECT count(*) FROM events WHERE event_type = 'created'").fetchone()[0]
    db.close()


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"title": "t"}, "not a beads issue (no id)"),
        ({"id": "bd-1"}, "bd-1 has no title"),
        ({"id": "bd-1", "title": "t", "priority": "high"}, "priority must be 0-4"),
        ({"id": "bd-1", "title": "t", "created_at": "yesterday"}, "not an RFC 3339 time"),
        ({"id": "bd-1", "title": "t", "labels": "a,b"}, "labels must be an array"),
        ({"id": "bd-1", "title": "t", "dependencies": [{"type": "blocks"}]}, "depends_on_id"),
    ],
)
def test_records_pensa_cannot_read_name_their_line(record: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidData, match=re.escape(message)):
        beads.convert(record, "x.jsonl:3", now="2026-01-01T00:00:00.000000Z")


def test_times_without_an_offset_are_utc_and_missing_ones_fall_back() -> None:
    done = beads.convert(
        {"id": "bd-1", "title": "t", "priority": "P1", "updated_at": "2025-11-02T10:00:00"},
        "x:1",
        now="2026-01-01T00:00:00.000000Z",
    )
    assert isinstance(done, beads.Issue)
    assert (done.created_at, done.updated_at) == ("2025-11-02T10:00:00.000000Z",) * 2
    assert done.priority == "p1"
    assert done.labels == ("beads:bd-1",)

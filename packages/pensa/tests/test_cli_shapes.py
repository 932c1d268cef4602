"""The shapes of tasks through the real `pn`: options, JSON contract, one-line refusals, and
the committed JSONL that carries them (export, import, sync, merge, migration, beads)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pensa.committed.merge import merge
from pensa.committed.snapshot import Snapshot
from pensa.schema import MIGRATIONS
from pensa.store import Store

from .conftest import Pn, committed

J = Callable[..., Any]


@pytest.mark.process
def test_create_takes_a_parent_a_size_and_a_ready_contract(pnj: J) -> None:
    epic = pnj("create", "sign-in", "-t", "epic")["id"]
    task = pnj(
        "create",
        "hash passwords",
        "--parent",
        epic,
        "--size",
        "S",
        "--objective",
        "no clear text",
        "--artifact",
        "src/auth.py",
        "--verify",
        "pytest -q tests/test_x.py",
        "--verify",
        "ruff check src",
    )
    assert list(task)[-6:] == [
        "parent",
        "discovered_from",
        "size",
        "objective",
        "artifact",
        "verify",
    ]
    assert task["verify"] == ["pytest -q tests/test_x.py", "ruff check src"]
    shown = pnj("show", task["id"])
    assert shown["verify"] == ["pytest -q tests/test_x.py", "ruff check src"]
    assert (shown["parent"], shown["size"]) == (epic, "S")
    assert [c["id"] for c in pnj("show", epic)["children"]] == [task["id"]]
    assert pnj("show", epic)["verify"] == []


@pytest.mark.process
def test_update_replaces_and_clears_the_contract(pnj: J, pn: Pn) -> None:
    task = pnj("create", "t", "--verify", "make a")["id"]
    assert pnj("update", task, "--verify", "make b", "--verify", "make c")["verify"] == [
        "make b",
        "make c",
    ]
    assert pnj("update", task, "--verify", "", "--size", "")["verify"] == []
    assert "verify: make b; make c -> none" in pn("history", task).out


@pytest.mark.process
def test_dep_add_kind_parent_and_its_cycle_are_one_line_each(pnj: J, pn: Pn) -> None:
    epic = pnj("create", "e", "-t", "epic")["id"]
    task = pnj("create", "t")["id"]
    added = pnj("dep", "add", task, epic, "--kind", "parent")
    assert added == {"status": "added", "issue_id": task, "depends_on_id": epic, "kind": "parent"}
    assert pn("dep", "add", task, epic, "--kind", "parent").out.strip() == (
        f"dep exists: {task} -> {epic} ({task} is a child of {epic}, which waits for it)"
    )
    done = pn("dep", "add", task, epic, "--json")
    assert done.code == 1
    assert done.error() == {
        "error": f"{epic} -> {task} ({task} waits for {epic}) would make a cycle: "
        f"{epic} -> {task} -> {epic}",
        "code": "cycle_detected",
    }
    bad = pn("dep", "add", task, epic, "--kind", "child-of", "--json")
    assert bad.code == 1
    assert "invalid link kind 'child-of'" in bad.error()["error"]


@pytest.mark.process
def test_ready_explain_says_why_in_one_line_each(pnj: J, pn: Pn) -> None:
    feature = pnj("create", "f", "-t", "feature")["id"]
    task = pnj("create", "t", "--parent", feature)["id"]
    assert [i["id"] for i in pnj("ready")] == [task]
    lines = pn("ready", "--explain").out.splitlines()
    assert lines == [f"{feature} feature 'f': has open children {task}"]
    explained = pnj("ready", "--explain", "--require-verify")
    assert [(n["id"], [r["code"] for r in n["reasons"]]) for n in explained] == [
        (feature, ["open_children", "no_verify"]),
        (task, ["no_verify"]),
    ]
    assert list(explained[0]) == ["id", "title", "issue_type", "status", "assignee", "reasons"]
    assert pnj("ready", env={"PN_REQUIRE_VERIFY": "1"}) == []


@pytest.mark.process
def test_one_claim_per_agent_is_said_in_one_line_and_claim_next_resumes(pnj: J, pn: Pn) -> None:
    first = pnj("create", "first")["id"]
    second = pnj("create", "second")["id"]
    pnj("update", second, "--claim")  # a host claims it for agent-1 beforehand
    refused = pn("update", first, "--claim", "--json")
    assert refused.code == 1
    assert refused.error()["code"] == "already_claimed"
    assert f"agent-1 already holds an issue in progress ({second})" in refused.error()["error"]
    assert pnj("claim-next")["id"] == second  # the agent's own claim-next: the same task
    assert pnj("close", second)["status"] == "closed"
    assert pnj("claim-next")["id"] == first


@pytest.mark.process
def test_closing_the_last_child_says_the_parent_closed_too(pnj: J, pn: Pn) -> None:
    epic = pnj("create", "e", "-t", "epic")["id"]
    task = pnj("create", "t", "--parent", epic)["id"]
    refused = pn("close", epic, "--json")
    assert refused.code == 1
    assert refused.error()["code"] == "conflict"
    out = pn("close", task).out
    assert f"also closed {epic}: last child {task} closed" in out


# --- the committed JSONL --------------------------------------------------------------------


@pytest.mark.process
def test_the_files_carry_the_new_fields_only_where_set(pnj: J, pn: Pn, repo: Path) -> None:
    epic = pnj("create", "e", "-t", "epic")["id"]
    plain = pnj("create", "plain")["id"]
    task = pnj("create", "t", "--parent", epic, "--verify", "make", "--size", "L")["id"]
    assert pn("export").code == 0
    lines = {json.loads(x)["id"]: x for x in committed(repo / ".pensa").splitlines()}
    assert '"parent"' not in lines[plain]
    assert '"verify"' not in lines[plain]
    assert json.loads(lines[task])["verify"] == ["make"]
    assert lines[task].endswith(f'"parent":"{epic}","size":"L","verify":["make"]}}')
    assert pn("import", "--discard-local").code == 0  # and they come back whole
    again = pnj("show", task)
    assert (again["parent"], again["size"], again["verify"]) == (epic, "L", ["make"])


@pytest.mark.process
def test_import_refuses_a_dangling_parent_and_a_cycle_of_parents(
    pnj: J, pn: Pn, repo: Path
) -> None:
    a = pnj("create", "a")["id"]
    b = pnj("create", "b", "--parent", a)["id"]
    assert pn("export").code == 0
    folder = repo / ".pensa"
    name = next(
        p for p in folder.iterdir() if "issues" in p.name and f'"id":"{a}"' in p.read_text()
    )
    records = [json.loads(x) for x in name.read_text().splitlines()]
    for record in records:
        if record["id"] == a:
            record["parent"] = b  # a under b under a
    name.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = pn("import", "--discard-local", "--json")
    assert done.code == 1
    assert "parent cycle" in done.error()["error"]
    for record in records:
        if record["id"] == a:
            record["parent"] = "pn-00000000"
    name.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = pn("import", "--discard-local", "--json")
    assert done.code == 1
    assert "parent pn-00000000: no such issue" in done.error()["error"]


def issue(issue_id: str, **more: object) -> dict[str, object]:
    stamp = "2026-01-01T00:00:00.000000Z"
    return {
        "id": issue_id,
        "title": issue_id,
        "issue_type": "task",
        "status": "open",
        "priority": "p2",
        "created_at": stamp,
        "updated_at": stamp,
        **more,
    }


def test_a_merge_drops_a_parent_the_other_side_deleted_and_breaks_a_parent_cycle() -> None:
    base = Snapshot({"a": issue("a"), "b": issue("b")}, {}, {}, {})
    ours = Snapshot({"a": issue("a", parent="b"), "b": issue("b")}, {}, {}, {})
    theirs = Snapshot({"a": issue("a"), "b": issue("b", parent="a")}, {}, {}, {})
    merged = merge(base, ours, theirs)
    parents = {i: r.get("parent") for i, r in merged.issues.items()}
    assert list(parents.values()).count(None) == 1  # one of the two links, never both
    gone = Snapshot({"a": issue("a", parent="b")}, {}, {}, {"b": {"id": "b", "deleted_at": "x"}})
    assert "parent" not in merge(base, gone, base).issues["a"]


def test_a_merge_breaks_a_cycle_a_parent_closes_with_an_edge() -> None:
    base = Snapshot({"e": issue("e"), "t": issue("t")}, {}, {}, {})
    ours = Snapshot({"e": issue("e"), "t": issue("t", parent="e")}, {}, {}, {})
    edge = {"issue_id": "t", "depends_on_id": "e"}  # t waits for its epic
    theirs = Snapshot(base.issues, {("t", "e"): edge}, {}, {})
    merged = merge(base, ours, theirs)
    kept_parent = merged.issues["t"].get("parent") == "e"
    assert kept_parent != (("t", "e") in merged.deps)


def test_a_version_7_database_migrates_and_keeps_every_row_and_link(tmp_path: Path) -> None:
    """m008 rebuilds `issues` with foreign keys off: no dependency or comment goes with the
    old table (ON DELETE CASCADE), and the creation counter goes on."""
    path = tmp_path / "db.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, migration in enumerate(MIGRATIONS[:7], start=1):
        migration(conn)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.executescript(
        "INSERT INTO issues (id, title, issue_type, status, created_at, updated_at, labels) "
        "VALUES ('pn-1', 'one', 'bug', 'open', 'c', 'u', '[\"x\"]'), "
        "('pn-2', 'two', 'task', 'closed', 'c', 'u', NULL), "
        "('pn-3', 'three', 'task', 'open', 'c', 'u', NULL);"
        "UPDATE issues SET fixes = 'pn-1' WHERE id = 'pn-2';"
        "DELETE FROM issues WHERE id = 'pn-3';"
        "INSERT INTO deps (issue_id, depends_on_id) VALUES ('pn-2', 'pn-1');"
        "INSERT INTO comments (id, issue_id, actor, text, created_at) "
        "VALUES ('pc-1', 'pn-1', 'a', 'kept', 'c');"
    )
    conn.close()
    with Store.open(path) as store:
        assert store.version() == len(MIGRATIONS) == 11
        assert store.rows("SELECT seq, id, fixes, labels FROM issues ORDER BY seq") == [
            (1, "pn-1", None, '["x"]'),
            (2, "pn-2", "pn-1", None),
        ]
        assert store.rows("SELECT * FROM deps") == [("pn-2", "pn-1", None)]
        assert store.rows("SELECT text FROM comments") == [("kept",)]
        assert store.rows("SELECT seq FROM sqlite_sequence WHERE name = 'issues'") == [(3,)]
        assert store.rows("PRAGMA foreign_keys") == [(1,)]
        assert store.rows("PRAGMA integrity_check") == [("ok",)]
        with store.write() as conn2:  # the new types are accepted, and pn-4 follows pn-3
            conn2.execute(
                "INSERT INTO issues (id, title, issue_type, created_at, updated_at, parent) "
                "VALUES ('pn-4', 'e', 'epic', 'c', 'u', 'pn-1')"
            )
        assert store.rows("SELECT seq FROM issues WHERE id = 'pn-4'") == [(4,)]
        assert ("m008_shapes",) in store.rows("SELECT name FROM migrations")


BEADS = [
    {
        "id": "bd-e1",
        "title": "sign-in",
        "status": "open",
        "priority": 1,
        "issue_type": "epic",
        "created_at": "2025-11-02T21:58:07.295058-08:00",
    },
    {
        "id": "bd-f1",
        "title": "password form",
        "status": "open",
        "priority": 1,
        "issue_type": "feature",
        "created_at": "2025-11-02T22:00:00Z",
        "dependencies": [{"issue_id": "bd-f1", "depends_on_id": "bd-e1", "type": "parent-child"}],
    },
    {
        "id": "bd-t1",
        "title": "hash it",
        "status": "open",
        "priority": 2,
        "issue_type": "task",
        "created_at": "2025-11-02T22:01:00Z",
        "dependencies": [
            {"issue_id": "bd-t1", "depends_on_id": "bd-f1", "type": "parent-child"},
            {"issue_id": "bd-t1", "depends_on_id": "bd-s1", "type": "discovered-from"},
        ],
    },
    {
        "id": "bd-s1",
        "title": "which hash?",
        "status": "closed",
        "priority": 2,
        "issue_type": "spike",
        "created_at": "2025-11-02T21:59:00Z",
        "dependencies": [{"issue_id": "bd-s1", "depends_on_id": "bd-e1", "type": "parent-child"}],
    },
]


@pytest.mark.process
def test_a_beads_export_with_an_epic_and_children_keeps_its_hierarchy(
    pnj: J, repo: Path, tmp_path: Path
) -> None:
    export = tmp_path / "issues.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in BEADS))
    summary = pnj("import", "--from-beads", str(export))
    assert summary["types"] == {"epic": 1, "feature": 1, "spike": 1, "task": 1}
    assert (summary["parents"], summary["deps"], summary["links_as_comments"]) == (3, 0, 0)
    by_beads = {
        next(label for label in i["labels"] if label.startswith("beads:")): i
        for i in pnj("list", "--all")
    }
    epic, feature = by_beads["beads:bd-e1"], by_beads["beads:bd-f1"]
    task, spike = by_beads["beads:bd-t1"], by_beads["beads:bd-s1"]
    assert (feature["parent"], task["parent"], spike["parent"]) == (
        epic["id"],
        feature["id"],
        epic["id"],
    )
    assert task["discovered_from"] == spike["id"]
    assert [c["id"] for c in pnj("show", epic["id"])["children"]] == [spike["id"], feature["id"]]
    assert [i["id"] for i in pnj("ready")] == [task["id"]]  # leaves only
    assert pnj("close", task["id"])["status"] == "closed"
    assert pnj("show", epic["id"])["status"] == "closed"  # the hierarchy works as pensa's own

"""Issue 13 through the real `pn`: forgiving input for people, exact JSON for agents."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Pn

J = Callable[..., Any]


def rename(repo: Path, old: str, new: str) -> None:
    """Give an issue another id, as if UUIDv7 had drawn it (for prefix collisions)."""
    db = sqlite3.connect(repo / ".pensa" / "db.sqlite")
    db.execute("UPDATE issues SET id = ? WHERE id = ?", (new, old))
    db.commit()
    db.close()


def test_ids_are_case_insensitive_pn_optional_and_any_unique_prefix(pnj: J) -> None:
    issue = pnj("create", "findable", "-t", "task")["id"]
    tail = issue.removeprefix("pn-")
    for typed in (issue.upper(), tail, tail[:5], tail[:4].upper(), f"PN-{tail[:6]}"):
        assert pnj("show", typed)["id"] == issue, typed
    assert pnj("update", tail[:5], "-p", "p1")["priority"] == "p1"
    assert pnj("close", tail[:5].upper())["status"] == "closed"
    assert pnj("history", tail[:5])[0]["event_type"] == "closed"


def test_an_ambiguous_prefix_is_one_line_listing_the_candidates(repo: Path, pn: Pn, pnj: J) -> None:
    a = pnj("create", "a", "-t", "task")["id"]
    b = pnj("create", "b", "-t", "task")["id"]
    rename(repo, a, "pn-1a2b0001")
    rename(repo, b, "pn-1a2b0002")
    human = pn("show", "1a2b")
    assert human.code == 1
    assert human.err == (
        "error: 1a2b matches several issues: pn-1a2b0001, pn-1a2b0002; type more digits\n"
    )
    as_json = pn("show", "1a2b", "--json")
    assert as_json.code == 1
    assert as_json.error() == {
        "error": "1a2b matches several issues: pn-1a2b0001, pn-1a2b0002; type more digits",
        "code": "invalid_argument",
    }
    assert pnj("show", "1a2b0002")["title"] == "b"


def test_a_prefix_that_is_too_short_says_how_long_it_must_be(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    error = pn("show", issue[3:6], "--json").error()
    assert error == {
        "error": f"no issue {issue[3:6]} (give at least 4 hex digits of the id)",
        "code": "not_found",
    }


def test_ids_in_options_and_dep_commands_resolve_too(pnj: J) -> None:
    bug = pnj("create", "crash", "-t", "bug")["id"]
    parent = pnj("create", "parent", "-t", "task")["id"]
    child = pnj("create", "child", "-t", "task", "--fixes", bug[3:8].upper(), "--dep", parent[3:8])
    assert child["fixes"] == bug
    assert [d["id"] for d in pnj("show", child["id"])["deps"]] == [parent]
    other = pnj("create", "other", "-t", "task")["id"]
    added = pnj("dep", "add", other[3:8], parent.upper())
    assert added == {"status": "added", "issue_id": other, "depends_on_id": parent}
    assert pnj("dep", "remove", other[3:8], parent[3:8])["status"] == "removed"


@pytest.mark.parametrize(
    ("args", "field", "canonical"),
    [
        (["-p", "1"], "priority", "p1"),
        (["-p", "P0"], "priority", "p0"),
        (["-p", "p3"], "priority", "p3"),
        (["-t", "Bug"], "issue_type", "bug"),
        (["-t", "CHORE"], "issue_type", "chore"),
    ],
)
def test_priorities_and_types_are_forgiving_and_json_is_canonical(
    pnj: J, args: list[str], field: str, canonical: str
) -> None:
    assert pnj("create", "x", *args)[field] == canonical


def test_statuses_are_case_insensitive_in_filters(pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    pnj("update", issue, "--status", "IN_PROGRESS")
    assert [i["id"] for i in pnj("list", "--status", "In_Progress")] == [issue]
    assert pnj("ready", "-p", "2", "-t", "TASK") == []


def test_create_and_q_default_to_a_task(pn: Pn, pnj: J) -> None:
    assert pnj("create", "no type given")["issue_type"] == "task"
    quick = pn("q", "quick").out.strip()
    assert pnj("show", quick)["issue_type"] == "task"


def test_history_of_a_deleted_issue_takes_the_forgiving_id(pnj: J) -> None:
    issue = pnj("create", "doomed")["id"]
    pnj("delete", issue)
    assert pnj("history", issue.upper().removeprefix("PN-"))[0]["event_type"] == "deleted"

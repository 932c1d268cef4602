"""Through the real `pn`: forgiving input for people, exact JSON for agents."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pensa.committed.disk import file_name

from .conftest import Pn, committed

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

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
    assert added == {
        "status": "added",
        "issue_id": other,
        "depends_on_id": parent,
        "kind": "blocks",
    }
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


def test_labels_on_create_update_and_the_label_commands(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "--label", "ui", "--label", "backend")
    assert list(issue)[-8:-6] == ["close_reason", "labels"]
    assert issue["labels"] == ["backend", "ui"]
    assert pnj("update", issue["id"], "--label", "p-later")["labels"] == [
        "backend",
        "p-later",
        "ui",
    ]
    assert pnj("label", "remove", issue["id"], "ui", "p-later")["labels"] == ["backend"]
    assert pnj("label", "add", issue["id"][3:8], "web")["labels"] == ["backend", "web"]
    assert pnj("create", "plain")["labels"] == []
    assert pnj("label", "list") == [{"label": "backend", "count": 1}, {"label": "web", "count": 1}]
    assert "labels: backend, web" in pn("show", issue["id"]).out
    bad = pn("label", "add", issue["id"], "a,b", "--json")
    assert bad.error()["code"] == "invalid_argument"


def test_label_filters_on_list_ready_count_and_claim_next(pnj: J) -> None:
    ui = pnj("create", "ui work", "--label", "ui", "-p", "p0")["id"]
    both = pnj("create", "ui and web", "--label", "ui", "--label", "web")["id"]
    pnj("create", "no labels", "-p", "p0")
    assert [i["id"] for i in pnj("list", "--label", "ui")] == [ui, both]
    assert [i["id"] for i in pnj("ready", "--label", "ui", "--label", "web")] == [both]
    assert pnj("count", "--label", "web") == {"count": 1}
    assert pnj("claim-next", "--label", "web")["id"] == both
    assert pnj("claim-next", "--label", "nope", "--actor", "other") is None


def test_labels_travel_in_the_jsonl_and_back(repo: Path, pnj: J) -> None:
    issue = pnj("create", "x", "--label", "b", "--label", "a")["id"]
    pnj("create", "y")
    pnj("export")
    lines = committed(repo / ".pensa").splitlines()
    labelled = next(line for line in lines if issue in line)
    assert labelled.endswith('"labels":["a","b"]}')
    assert all('"labels"' not in line for line in lines if issue not in line)
    pnj("import")
    assert pnj("show", issue)["labels"] == ["a", "b"]


def test_labels_edited_in_the_file_are_merged_in(repo: Path, pnj: J) -> None:
    issue = pnj("create", "x", "--label", "keep")["id"]
    pnj("export")
    path = repo / ".pensa" / file_name("issues.jsonl", issue)
    path.write_text(path.read_text().replace('"labels":["keep"]', '"labels":["keep","new"]'))
    pnj("label", "add", issue, "mine")  # the database changed meanwhile
    assert pnj("show", issue)["labels"] == ["keep", "mine", "new"]
    pnj("export")
    assert '"labels":["keep","mine","new"]' in path.read_text()


def test_close_takes_several_ids_and_says_what_became_ready(pn: Pn, pnj: J) -> None:
    a = pnj("create", "a")["id"]
    b = pnj("create", "b")["id"]
    waiting = pnj("create", "waits on a and b", "--dep", a, "--dep", b)["id"]
    human = pn("close", a, b[3:8], "-r", "done")
    assert human.code == 0, human.err
    lines = human.out.splitlines()
    assert [line.split()[0] for line in lines[:2]] == [a, b]
    assert lines[2].startswith(f"now ready: {waiting}")
    assert pnj("show", a)["close_reason"] == "done"


def test_close_of_several_is_all_or_nothing_and_json_is_an_array(pn: Pn, pnj: J) -> None:
    a = pnj("create", "a")["id"]
    b = pnj("create", "b")["id"]
    refused = pn("close", a, "pn-00000000", "--json")
    assert refused.error()["code"] == "not_found"
    assert pnj("show", a)["status"] == "open"
    closed = pnj("close", a, b)
    assert [(i["id"], i["status"]) for i in closed] == [(a, "closed"), (b, "closed")]
    assert [i["status"] for i in pnj("reopen", a, b)] == ["open", "open"]
    assert pnj("close", a)["id"] == a  # one id: the object, as before


def test_closing_the_last_fix_says_the_bug_closed_too(pn: Pn, pnj: J) -> None:
    bug = pnj("create", "crash", "-t", "bug")["id"]
    fix = pnj("create", "fix", "--fixes", bug)["id"]
    out = pn("close", fix).out
    assert f"also closed {bug}: fixed by {fix}" in out


def test_blocked_says_what_each_issue_waits_on(pn: Pn, pnj: J) -> None:
    first = pnj("create", "first")["id"]
    second = pnj("create", "second")["id"]
    pnj("update", second, "--claim")
    waiting = pnj("create", "waiting", "--dep", first, "--dep", second)["id"]
    done = pnj("create", "done")["id"]
    pnj("dep", "add", waiting, done)
    pnj("close", done)
    out = pn("blocked").out.splitlines()
    assert out[0].split() == ["id", "pri", "status", "type", "title", "assignee", "waits", "on"]
    assert out[1].startswith(waiting)
    assert out[1].endswith(f"{first} (open), {second} (in_progress)")
    assert [i["id"] for i in pnj("blocked")] == [waiting]  # JSON unchanged: the issues


def test_show_on_a_bug_lists_the_issues_that_fix_it(pn: Pn, pnj: J) -> None:
    bug = pnj("create", "crash", "-t", "bug")["id"]
    fix = pnj("create", "guard the input", "--fixes", bug)["id"]
    out = pn("show", bug).out
    assert f"  fixed by:\n    {fix} [open] guard the input" in out
    assert list(pnj("show", bug))[-4:] == ["deps", "dependents", "children", "comments"]


EDITOR = """\
import os, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
for line in os.environ.get("EDIT_REPLACE", "").split("|"):
    if line:
        old, new = line.split("=>")
        text = text.replace(old.replace("\\\\n", "\\n"), new.replace("\\\\n", "\\n"))
open(os.environ["EDIT_SAW"], "w", encoding="utf-8").write(open(path, encoding="utf-8").read())
open(path, "w", encoding="utf-8").write(text)
"""


@pytest.fixture
def editor(tmp_path: Path) -> Callable[[str], dict[str, str]]:
    """EDITOR set to a script that applies `old=>new|...` replacements to the form."""
    import sys

    script = tmp_path / "editor.py"
    script.write_text(EDITOR)

    def env(replace: str) -> dict[str, str]:
        return {
            "EDITOR": f"{sys.executable} {script}",
            "EDIT_REPLACE": replace,
            "EDIT_SAW": str(tmp_path / "saw.txt"),
        }

    return env


def test_edit_changes_fields_from_the_form_in_one_event(
    tmp_path: Path, pnj: J, editor: Callable[[str], dict[str, str]]
) -> None:
    issue = pnj("create", "old title", "--label", "a", "--description", "old text")["id"]
    env = editor(
        "old title=>new title|priority: p2=>priority: 1|labels: a=>labels: b, c"
        "|old text=>line one\\nline two"
    )
    edited = pnj("edit", issue[3:8], env=env)
    assert (edited["title"], edited["priority"], edited["labels"]) == (
        "new title",
        "p1",
        ["b", "c"],
    )
    assert edited["description"] == "line one\nline two"
    assert edited["issue_type"] == "task"
    saw = (tmp_path / "saw.txt").read_text()
    assert "a task (the type is fixed at creation)" in saw
    assert "title: old title\npriority: p2\nlabels: a\n\ndescription:\nold text" in saw
    [event] = [e for e in pnj("history", issue) if e["event_type"] == "updated"]
    assert event["detail"].endswith("labels: +b +c -a")


def test_edit_without_changes_writes_nothing(
    pnj: J, editor: Callable[[str], dict[str, str]]
) -> None:
    issue = pnj("create", "same")["id"]
    assert pnj("edit", issue, env=editor("same=>same"))["title"] == "same"
    assert [e["event_type"] for e in pnj("history", issue)] == ["created"]


def test_a_broken_form_changes_nothing_and_keeps_the_text(
    pn: Pn, pnj: J, editor: Callable[[str], dict[str, str]]
) -> None:
    issue = pnj("create", "keep me")["id"]
    error = pn("edit", issue, "--json", env=editor("priority:=>prio:")).error()
    assert error["code"] == "invalid_argument"
    assert error["error"].startswith("line 6: expected `title:`")
    kept = Path(error["error"].rsplit("your text is in ", 1)[1])
    assert "prio: p2" in kept.read_text()
    kept.unlink()
    assert pnj("show", issue)["priority"] == "p2"


def test_comment_ids_start_pc_and_old_pn_comment_ids_still_import(repo: Path, pnj: J) -> None:
    issue = pnj("create", "x")["id"]
    comment = pnj("comment", "add", issue, "new style")
    assert comment["id"].startswith("pc-")
    pnj("export")
    path = repo / ".pensa" / "comments.jsonl"
    old = (
        f'{{"id":"pn-0000beef","issue_id":"{issue}","actor":"a","text":"old style",'
        '"created_at":"2020-01-01T00:00:00Z"}\n'
    )
    path.write_text(old + path.read_text())
    assert pnj("import")["comments"] == 2
    assert [c["id"] for c in pnj("comment", "list", issue)] == ["pn-0000beef", comment["id"]]


def test_history_and_comments_read_relative_times_and_no_python_reprs(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "-a", "build-20260226T143000")["id"]
    pnj("update", issue, "-a", "")
    pnj("comment", "add", issue, "a note")
    history = pn("history", issue).out
    assert "None" not in history
    assert "assignee: build-20260226T143000 -> none" in history
    assert all(line.startswith("just now") for line in history.splitlines())
    assert "just now  agent-1: a note" in pn("comment", "list", issue).out
    stamp = pnj("show", issue)["created_at"]
    assert f"created: {stamp} (just now)" in pn("show", issue).out  # exact, and how long ago


def test_graph_prints_mermaid_or_dot_and_refuses_other_formats(pn: Pn, pnj: J) -> None:
    first = pnj("create", "first")["id"]
    second = pnj("create", "second", "--dep", first)["id"]
    out = pn("graph", second[3:8]).out
    assert out.startswith("flowchart TD\n")
    assert f"n_{first.replace('-', '_')} --> n_{second.replace('-', '_')}" in out
    as_json = pnj("graph", "--format", "DOT")
    assert list(as_json) == ["format", "text"]
    assert as_json["format"] == "dot"
    assert as_json["text"].startswith("digraph pensa {")
    bad = pn("graph", "--format", "png", "--json").error()
    assert bad["code"] == "invalid_argument"
    assert "allowed: mermaid, dot" in bad["error"]


def test_edit_without_an_editor_or_a_terminal_fails_at_once(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x")["id"]
    error = pn("edit", issue, "--json", env={"EDITOR": "", "VISUAL": ""}).error()
    assert error["code"] == "invalid_argument"
    assert error["error"].startswith("pn edit opens $EDITOR on a terminal")

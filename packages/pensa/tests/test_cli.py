"""The CLI contract, through the real `pn` console script: exit codes, JSON shapes, errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Pn, committed

ISSUE_KEYS = [
    "id",
    "title",
    "description",
    "issue_type",
    "status",
    "priority",
    "spec",
    "fixes",
    "assignee",
    "created_at",
    "updated_at",
    "closed_at",
    "close_reason",
    "labels",
    "parent",
    "discovered_from",
    "size",
    "objective",
    "artifact",
    "verify",
]
J = Callable[..., Any]


@pytest.mark.process
def test_create_prints_the_issue_with_every_key_in_contract_order(pnj: J) -> None:
    issue = pnj("create", "login crash", "-t", "bug", "-p", "p0")
    assert list(issue) == ISSUE_KEYS
    assert issue["id"].startswith("pn-")
    assert len(issue["id"]) == 11
    assert issue["status"] == "open"
    assert issue["priority"] == "p0"
    assert issue["description"] is None
    assert issue["closed_at"] is None
    assert issue["created_at"].endswith("Z")
    assert issue["created_at"] == issue["updated_at"]


@pytest.mark.process
def test_json_flag_works_before_and_after_the_subcommand(pn: Pn, pnj: J) -> None:
    pnj("create", "a", "-t", "task")
    before = pn("--json", "ready")
    after = pn("ready", "--json")
    assert before.code == after.code == 0
    assert before.json() == after.json()
    assert [i["title"] for i in before.json()] == ["a"]


@pytest.mark.process
def test_q_prints_only_the_id(pn: Pn, pnj: J) -> None:
    plain = pn("q", "quick one", "-t", "chore")
    assert plain.code == 0
    issue_id = plain.out.strip()
    assert issue_id.startswith("pn-")
    assert "\n" not in issue_id
    assert pnj("q", "another", "-t", "task") == {"id": pnj("list")[1]["id"]}


@pytest.mark.process
def test_show_adds_deps_dependents_and_comments(pnj: J) -> None:
    parent = pnj("create", "parent", "-t", "task")["id"]
    child = pnj("create", "child", "-t", "task", "--dep", parent)["id"]
    pnj("comment", "add", child, "a note")
    shown = pnj("show", child)
    assert list(shown) == [*ISSUE_KEYS, "deps", "dependents", "children", "comments"]
    assert [d["id"] for d in shown["deps"]] == [parent]
    assert shown["dependents"] == []
    assert [list(c) for c in shown["comments"]] == [
        ["id", "issue_id", "actor", "text", "created_at"]
    ]
    assert pnj("show", parent)["dependents"][0]["id"] == child
    assert list(pnj("show", child, "--short")) == ISSUE_KEYS


@pytest.mark.process
def test_show_short_is_one_line_for_people(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "one line", "-t", "task")
    result = pn("show", issue["id"], "--short")
    assert result.out.count("\n") == 1
    assert "one line" in result.out


@pytest.mark.process
def test_list_keeps_creation_order_within_a_priority_and_hides_closed(pnj: J) -> None:
    ids = [pnj("create", f"t{n}", "-t", "task")["id"] for n in range(5)]
    urgent = pnj("create", "urgent", "-t", "task", "-p", "p0")["id"]
    pnj("close", ids[2])
    assert [i["id"] for i in pnj("list")] == [urgent, ids[0], ids[1], ids[3], ids[4]]
    assert len(pnj("list", "--all")) == 6
    assert [i["id"] for i in pnj("list", "--status", "closed")] == [ids[2]]
    assert [i["id"] for i in pnj("list", "--sort", "created", "-n", "2")] == ids[:2]


@pytest.mark.process
def test_list_is_an_empty_array_not_null(pnj: J) -> None:
    assert pnj("list") == []
    assert pnj("ready") == []
    assert pnj("blocked") == []


@pytest.mark.process
def test_ready_excludes_bugs_and_blocked_issues(pnj: J) -> None:
    pnj("create", "a bug", "-t", "bug", "-p", "p0")
    parent = pnj("create", "parent", "-t", "task")["id"]
    pnj("create", "child", "-t", "test", "--dep", parent)
    assert [i["title"] for i in pnj("ready")] == ["parent"]
    assert [i["title"] for i in pnj("blocked")] == ["child"]
    pnj("close", parent)
    assert [i["title"] for i in pnj("ready")] == ["child"]


@pytest.mark.process
def test_claim_next_claims_then_prints_null_when_nothing_is_ready(pn: Pn, pnj: J) -> None:
    pnj("create", "only", "-t", "task")
    claimed = pnj("claim-next")
    assert claimed["status"] == "in_progress"
    assert claimed["assignee"] == "agent-1"
    assert pnj("claim-next") == claimed  # one claim per agent: the task it holds
    empty = pn("claim-next", "--json", "--actor", "agent-2")
    assert empty.code == 0
    assert empty.out.strip() == "null"


@pytest.mark.process
def test_claim_next_filters_by_spec_type_and_priority(pnj: J) -> None:
    pnj("create", "other spec", "-t", "task", "--spec", "billing")
    pnj("create", "a test", "-t", "test", "--spec", "auth")
    wanted = pnj("create", "auth task", "-t", "task", "--spec", "auth", "-p", "p1")["id"]
    assert pnj("claim-next", "--spec", "auth", "-t", "task", "-p", "p1")["id"] == wanted


@pytest.mark.process
def test_claim_of_an_issue_held_by_someone_else_names_the_holder(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "contested", "-t", "task")["id"]
    assert pnj("update", issue, "--claim")["assignee"] == "agent-1"
    again = pnj("update", issue, "--claim")  # claiming what you hold is a no-op success
    assert again["status"] == "in_progress"
    other = pn("update", issue, "--claim", "--json", env={"PN_ACTOR": "agent-2"})
    assert other.code == 1
    assert other.error() == {
        "error": f"{issue} is already claimed by agent-1",
        "code": "already_claimed",
    }


@pytest.mark.process
def test_actor_flag_beats_the_environment(pnj: J) -> None:
    pnj("create", "x", "-t", "task")
    assert pnj("claim-next", "--actor", "bob")["assignee"] == "bob"


@pytest.mark.process
def test_release_and_unclaim_reopen_and_clear_the_assignee(pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    pnj("update", issue, "--claim")
    released = pnj("release", issue)
    assert (released["status"], released["assignee"]) == ("open", None)
    pnj("update", issue, "--claim")
    assert pnj("update", issue, "--unclaim")["assignee"] is None


@pytest.mark.process
def test_claim_or_unclaim_with_fields_is_one_event(pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    claimed = pnj("update", issue, "--claim", "-p", "p1", "--label", "ui")
    assert (claimed["status"], claimed["assignee"]) == ("in_progress", "agent-1")
    assert (claimed["priority"], claimed["labels"]) == ("p1", ["ui"])
    released = pnj("update", issue, "--unclaim", "--title", "y")
    assert (released["status"], released["assignee"], released["title"]) == ("open", None, "y")
    assert [(e["event_type"], e["detail"]) for e in pnj("history", issue)] == [
        ("released", "title: x -> y, status: in_progress -> open, assignee: agent-1 -> none"),
        (
            "claimed",
            "priority: p2 -> p1, status: open -> in_progress, assignee: none -> agent-1, "
            "labels: +ui",
        ),
        ("created", "x"),
    ]


CLAIM_SETS_BOTH = "--claim/--unclaim set status and assignee; drop --status/-a"


@pytest.mark.process
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--claim", "--unclaim"], "--claim and --unclaim contradict each other; pick one"),
        (["--claim", "--unclaim", "--status", "open"], "--claim and --unclaim contradict"),
        (["--claim", "--status", "open"], CLAIM_SETS_BOTH),
        (["--unclaim", "-a", "bob"], CLAIM_SETS_BOTH),
    ],
)
def test_update_refuses_claim_flags_that_contradict(
    pn: Pn, pnj: J, flags: list[str], message: str
) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    refused = pn("update", issue, *flags, "--json")
    assert refused.code == 1
    assert refused.error()["code"] == "invalid_argument"
    assert refused.error()["error"].startswith(message)
    plain = pn("update", issue, *flags)
    assert (plain.code, plain.err) == (1, f"error: {refused.error()['error']}\n")
    assert [e["event_type"] for e in pnj("history", issue)] == ["created"]


@pytest.mark.process
def test_close_needs_force_for_someone_elses_claim_or_a_closed_issue(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    pnj("update", issue, "--claim", env={"PN_ACTOR": "agent-2"})
    refused = pn("close", issue, "--json")
    assert refused.code == 1
    assert refused.error()["code"] == "conflict"
    closed = pnj("close", issue, "--force", "--reason", "done by supervisor")
    assert closed["status"] == "closed"
    assert closed["close_reason"] == "done by supervisor"
    assert closed["closed_at"] is not None
    twice = pn("close", issue, "--json")
    assert twice.error()["code"] == "conflict"


@pytest.mark.process
def test_closing_the_last_fix_closes_the_bug(pnj: J) -> None:
    bug = pnj("create", "crash", "-t", "bug")["id"]
    first = pnj("create", "fix a", "-t", "task", "--fixes", bug)["id"]
    second = pnj("create", "fix b", "-t", "task", "--fixes", bug)["id"]
    pnj("close", first)
    assert pnj("show", bug)["status"] == "open"
    pnj("close", second)
    shown = pnj("show", bug)
    assert shown["status"] == "closed"
    assert shown["close_reason"] == f"fixed by {second}"


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["create", "x", "-t", "task", "--fixes", "pn-00000000"], "not_found"),
        (["create", "x", "-t", "task", "--dep", "pn-00000000"], "not_found"),
        (["show", "pn-00000000"], "not_found"),
        (["close", "pn-00000000"], "not_found"),
        (["history", "pn-00000000"], "not_found"),
        (["create", "x", "-t", "story"], "invalid_argument"),
        (["create", "x", "-t", "task", "-p", "high"], "invalid_argument"),
        (["list", "--status", "in-progress"], "invalid_argument"),
        (["create", "-t", "task"], "invalid_argument"),
        (["create", "  ", "-t", "task"], "invalid_argument"),
        (["ready", "--bogus"], "invalid_argument"),
        (["claim", "pn-00000000"], "invalid_argument"),
        (["update", "pn-00000000"], "invalid_argument"),
    ],
)
def test_errors_exit_1_with_one_json_line_on_stderr(pn: Pn, args: list[str], code: str) -> None:
    result = pn(*args, "--json")
    assert result.code == 1
    assert result.out == ""
    assert result.error()["code"] == code


@pytest.mark.process
def test_fixes_must_name_a_bug(pn: Pn, pnj: J) -> None:
    task = pnj("create", "not a bug", "-t", "task")["id"]
    result = pn("create", "x", "-t", "task", "--fixes", task, "--json")
    assert result.error() == {
        "error": f"--fixes must name a bug; {task} is a task",
        "code": "invalid_argument",
    }


@pytest.mark.process
def test_errors_without_json_are_one_plain_line(pn: Pn) -> None:
    result = pn("show", "pn-00000000")
    assert result.code == 1
    assert result.err == "error: no issue pn-00000000\n"


@pytest.mark.process
def test_usage_errors_exit_1_not_2(pn: Pn) -> None:
    result = pn("create")
    assert result.code == 1
    assert result.err.startswith("error: Missing argument 'TITLE'")


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["claim"], "did you mean `pn claim-next` or `pn update ID --claim`?"),
        (["list", "--status", "in-progress"], "did you mean 'in_progress'?"),
        (["create", "x", "-t", "story"], "did you mean 'feature'?"),
        (["create", "x", "-t", "task", "-p", "high"], "did you mean 'p1'?"),
        (["redy"], "did you mean `pn ready`?"),
        (["dep", "ad", "a", "b"], "did you mean `pn dep add`?"),
    ],
)
def test_near_misses_fail_with_a_hint(pn: Pn, args: list[str], hint: str) -> None:
    result = pn(*args)
    assert result.code == 1
    assert hint in result.err


@pytest.mark.process
def test_update_changes_fields_and_clears_with_empty_text(pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task", "--description", "long", "--spec", "auth")["id"]
    updated = pnj("update", issue, "--title", "y", "-p", "p1", "--description", "", "-a", "ann")
    assert (updated["title"], updated["priority"], updated["description"]) == ("y", "p1", None)
    assert updated["assignee"] == "ann"
    assert updated["spec"] == "auth"


@pytest.mark.process
def test_update_refuses_closing_and_type_changes(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    closing = pn("update", issue, "--status", "closed", "--json")
    assert closing.error()["code"] == "invalid_status_transition"
    retype = pn("update", issue, "-t", "bug", "--json")
    assert retype.error()["code"] == "invalid_argument"


@pytest.mark.process
def test_update_with_nothing_to_change_says_so_once(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    error = pn("update", issue, "--json").error()
    assert error["code"] == "invalid_argument"
    assert error["error"].startswith("nothing to change")
    assert error["error"].count("pn update --help") == 1


@pytest.mark.process
def test_reopen_clears_the_close_fields(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    pnj("close", issue, "--reason", "done")
    reopened = pnj("reopen", issue)
    assert (reopened["status"], reopened["closed_at"], reopened["close_reason"]) == (
        "open",
        None,
        None,
    )
    again = pn("reopen", issue, "--json")
    assert again.error()["code"] == "invalid_status_transition"


@pytest.mark.process
def test_delete_refuses_attached_issues_unless_forced(pn: Pn, pnj: J) -> None:
    parent = pnj("create", "parent", "-t", "task")["id"]
    pnj("create", "child", "-t", "task", "--dep", parent)
    refused = pn("delete", parent, "--json")
    assert refused.error()["code"] == "conflict"
    assert pnj("delete", parent, "--force") == {"deleted": parent}
    assert pn("show", parent, "--json").error()["code"] == "not_found"
    assert pnj("list")[0]["title"] == "child"
    assert pnj("history", parent)[0]["event_type"] == "deleted"


@pytest.mark.process
def test_dep_commands_and_their_shapes(pn: Pn, pnj: J) -> None:
    a = pnj("create", "a", "-t", "task")["id"]
    b = pnj("create", "b", "-t", "task")["id"]
    c = pnj("create", "c", "-t", "task")["id"]
    assert pnj("dep", "add", a, b) == {
        "status": "added",
        "issue_id": a,
        "depends_on_id": b,
        "kind": "blocks",
    }
    pnj("dep", "add", b, c)
    listed = pnj("dep", "list", b)
    assert [i["id"] for i in listed["depends_on"]] == [c]
    assert [i["id"] for i in listed["dependents"]] == [a]
    down = pnj("dep", "tree", a)
    assert [(n["id"], n["depth"]) for n in down] == [(b, 1), (c, 2)]
    assert list(down[0]) == ["id", "title", "status", "priority", "issue_type", "depth"]
    assert [n["id"] for n in pnj("dep", "tree", c, "--direction", "up")] == [b, a]
    cycle = pn("dep", "add", c, a, "--json")
    assert cycle.error()["code"] == "cycle_detected"
    assert f"would make a cycle: {a} -> {c} -> {b} -> {a}" in cycle.error()["error"]
    assert pn("dep", "add", a, a, "--json").error()["code"] == "invalid_argument"
    assert pnj("dep", "cycles") == []
    assert pnj("dep", "remove", a, b)["status"] == "removed"
    assert pn("dep", "remove", a, b, "--json").error()["code"] == "not_found"


@pytest.mark.process
def test_comments_and_history(pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    comment = pnj("comment", "add", issue, "ünïcode ok")
    assert list(comment) == ["id", "issue_id", "actor", "text", "created_at"]
    assert comment["text"] == "ünïcode ok"
    assert comment["actor"] == "agent-1"
    assert pnj("comment", "list", issue) == [comment]
    pnj("update", issue, "--claim")
    pnj("close", issue, "--reason", "done")
    history = pnj("history", issue)
    assert [e["event_type"] for e in history] == ["closed", "claimed", "commented", "created"]
    assert list(history[0]) == ["event_type", "actor", "detail", "created_at"]
    assert history[0]["detail"] == "done"


@pytest.mark.process
def test_search_count_and_status(pnj: J) -> None:
    pnj("create", "Login crash", "-t", "bug", "--description", "empty password")
    done = pnj("create", "login form", "-t", "task")["id"]
    pnj("create", "billing", "-t", "task", "-p", "p1")
    pnj("close", done)
    assert [i["title"] for i in pnj("search", "LOGIN")] == ["Login crash", "login form"]
    assert [i["title"] for i in pnj("search", "password")] == ["Login crash"]
    assert pnj("count") == {"count": 2}
    assert pnj("count", "--all") == {"count": 3}
    assert pnj("count", "--all", "--by-status") == {
        "total": 3,
        "groups": {"closed": 1, "open": 2},
    }
    assert pnj("count", "--by-issue-type") == {"total": 2, "groups": {"bug": 1, "task": 1}}
    status = pnj("status")
    assert (status["total"], status["open"], status["closed"], status["ready"]) == (3, 2, 1, 1)
    assert status["by_type"]["bug"] == {"open": 1, "in_progress": 0, "closed": 0}


@pytest.mark.process
def test_count_refuses_two_groupings_instead_of_keeping_the_last(pn: Pn, pnj: J) -> None:
    pnj("create", "x", "-t", "task")
    error = pn("count", "--by-status", "--by-priority", "--json").error()
    assert error["code"] == "invalid_argument"
    assert "--by-priority and --by-status" in error["error"]
    assert pnj("count", "--by-status", "--by-status") == {"total": 1, "groups": {"open": 1}}


@pytest.mark.process
def test_human_output_is_plain_text_when_piped(pn: Pn, pnj: J) -> None:
    pnj("create", "plain title", "-t", "task", "-p", "p1")
    out = pn("list").out
    assert "plain title" in out
    assert "\x1b[" not in out
    header, row = pn("ready").out.splitlines()
    assert header.split() == ["id", "pri", "status", "type", "title", "assignee"]
    assert row.split()[1:4] == ["p1", "open", "task"]
    assert pn("blocked").out == "(no issues)\n"


@pytest.mark.process
def test_commands_find_the_project_from_a_subdirectory(repo: Path, pnj: J) -> None:
    pnj("create", "top", "-t", "task")
    deep = repo / "src" / "deep"
    deep.mkdir(parents=True)
    assert [i["title"] for i in pnj("list", cwd=deep)] == ["top"]
    pnj("create", "from below", "-t", "task", cwd=deep)
    assert not (deep / ".pensa").exists()
    assert pnj("where", cwd=deep) == {"path": str(repo / ".pensa"), "exists": True}


@pytest.mark.process
def test_first_write_creates_pensa_at_the_git_top_level(repo: Path, pnj: J) -> None:
    sub = repo / "sub"
    sub.mkdir()
    assert pnj("where", cwd=sub) == {"path": str(repo / ".pensa"), "exists": False}
    pnj("create", "x", "-t", "task", cwd=sub)
    assert (repo / ".pensa" / "db.sqlite").is_file()
    assert "db.sqlite" in (repo / ".pensa" / ".gitignore").read_text()


@pytest.mark.process
def test_pn_dir_names_the_pensa_directory(tmp_path: Path, pnj: J) -> None:
    elsewhere = tmp_path / "shared" / "tracker"
    pnj("create", "x", "-t", "task", env={"PN_DIR": str(elsewhere)})
    assert (elsewhere / "db.sqlite").is_file()
    assert pnj("where", env={"PN_DIR": str(elsewhere)})["path"] == str(elsewhere)


@pytest.mark.process
def test_reads_without_a_database_are_empty(pn: Pn, pnj: J) -> None:
    assert pnj("list") == []
    assert pnj("ready") == []
    assert pnj("count") == {"count": 0}
    assert pn("show", "pn-00000000", "--json").error()["code"] == "not_found"


@pytest.mark.process
def test_reads_do_not_create_pensa(repo: Path, pnj: J) -> None:
    pnj("list")
    pnj("status")
    pnj("doctor")
    pnj("export")
    assert not (repo / ".pensa").exists()


@pytest.mark.process
def test_prime_lists_the_exact_words(pn: Pn) -> None:
    out = pn("prime").out
    for word in ("pn claim-next", "update ID", "--claim", "in_progress", "p0", "chore"):
        assert word in out
    assert "There is no `pn claim`" in out


@pytest.mark.process
def test_help_and_no_arguments_exit_0(pn: Pn) -> None:
    assert pn("--help").code == 0
    bare = pn()
    assert bare.code == 0
    assert "claim-next" in bare.out


@pytest.mark.process
def test_doctor_json_shape(pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    pnj("update", issue, "--claim")
    report = pnj("doctor")
    assert list(report) == ["findings", "fixes"]
    assert [f["check"] for f in report["findings"]] == ["claim"]  # unexported work: no drift
    assert list(report["findings"][0]) == ["check", "message", "issue_id"]
    assert report["fixes"] == []


@pytest.mark.process
def test_export_then_import_round_trips(repo: Path, pn: Pn, pnj: J) -> None:
    bug = pnj("create", "bug", "-t", "bug")["id"]
    task = pnj("create", "task", "-t", "task", "--fixes", bug)["id"]
    pnj("dep", "add", task, pnj("create", "first", "-t", "chore")["id"])
    pnj("comment", "add", task, "hi")
    assert pnj("export") == {"issues": 3, "deps": 1, "comments": 1, "staged": False}
    before = pnj("show", task)
    assert pnj("import") == {"issues": 3, "deps": 1, "comments": 1, "events_kept": 5}
    assert pnj("show", task) == before
    assert json.loads(committed(repo / ".pensa").splitlines()[0])["id"]


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    from pensa import cli
    from pensa.cli import base

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(base.cli, "main", interrupted)
    assert cli.main(["ready"]) == 130


@pytest.mark.process
def test_a_closed_pipe_is_not_a_traceback(repo: Path, pnj: J) -> None:
    pnj("create", "long " + "x" * 100_000, "-t", "task")  # more than a pipe buffer
    import subprocess

    from .conftest import PN

    # The reader closes its end at once: pn's write fails with EPIPE.
    shell = subprocess.run(
        ["bash", "-c", f"'{PN}' list 2>err | (exec 0<&-; sleep 0.3); echo ${{PIPESTATUS[0]}}"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout.strip() == "1"
    assert (repo / "err").read_text() == ""


@pytest.mark.process
def test_a_file_named_pensa_is_a_one_line_error_and_nothing_is_written(repo: Path, pn: Pn) -> None:
    (repo / ".pensa").write_text("not a directory\n")
    result = pn("q", "x", "-t", "task", "--json")
    assert result.code == 1
    error = result.error()
    assert error["code"] == "read_only"
    assert ".pensa" in error["error"]
    assert (repo / ".pensa").read_text() == "not a directory\n"


@pytest.mark.process
def test_a_file_that_is_not_a_database_points_at_doctor_fix_which_rebuilds_it(
    repo: Path, pn: Pn, pnj: J
) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    pnj("export")
    (repo / ".pensa/db.sqlite").write_text("not sqlite at all\n")
    error = pn("list", "--json").error()
    assert error["code"] == "damaged_database"
    assert "is damaged (not a SQLite database): `pn doctor --fix` rebuilds it" in error["error"]
    assert [f["check"] for f in pnj("doctor")["findings"]] == ["damaged_database"]
    pnj("doctor", "--fix")
    assert [i["id"] for i in pnj("list")] == [issue]


@pytest.mark.process
def test_claim_next_takes_several_types_and_skips_the_others(pnj: J) -> None:
    test_item = pnj("create", "a test item", "-t", "test", "-p", "p0")["id"]
    chore = pnj("create", "a chore", "-t", "chore")["id"]
    assert pnj("claim-next", "-t", "task", "-t", "chore")["id"] == chore
    assert pnj("claim-next", "-t", "task", "-t", "chore", "--actor", "b") is None
    assert pnj("claim-next", "-t", "test", "--actor", "b")["id"] == test_item


@pytest.mark.process
def test_the_cycle_error_draws_its_arrows_as_dep_add_and_graph_do(pn: Pn, pnj: J) -> None:
    a, b = (pnj("create", name, "-t", "task")["id"] for name in "ab")
    added = pn("dep", "add", b, a).out.strip()  # b waits for a
    assert added == f"dep added: {a} -> {b} ({b} waits for {a})"
    assert f"n_{a.replace('-', '_')} --> n_{b.replace('-', '_')}" in pn("graph", a).out
    refused = pn("dep", "add", a, b).err.strip()  # a would wait for b
    assert refused == (
        f"error: {b} -> {a} ({a} waits for {b}) would make a cycle: {b} -> {a} -> {b}"
    )


@pytest.mark.process
def test_claim_after_setting_in_progress_by_hand_takes_the_issue(pn: Pn, pnj: J) -> None:
    issue = pnj("create", "x", "-t", "task")["id"]
    pnj("update", issue, "--status", "in_progress")
    claimed = pn("update", issue, "--claim", "--json")
    assert claimed.code == 0, claimed.err
    assert claimed.json()["assignee"] == "agent-1"
    other = pn("update", issue, "--claim", "--actor", "bob", "--json")
    assert other.error() == {
        "error": f"{issue} is already claimed by agent-1", "code": "already_claimed",
    }  # fmt: skip

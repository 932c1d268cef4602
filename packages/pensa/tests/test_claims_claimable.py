"""Ready means claimable, an import never forgets a claim, and comments print inertly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BIN, PN, Pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def test_reopen_clears_the_assignee_and_says_so_in_history(pn: Pn) -> None:
    issue = pn("q", "work", "-t", "task").out.strip()
    assert pn("update", issue, "--claim").code == 0
    assert pn("close", issue, "--reason", "done").code == 0
    assert pn("reopen", issue).code == 0
    shown = pn("show", issue, "--json").json()
    assert (shown["status"], shown.get("assignee")) == ("open", None)
    details = [e.get("detail") for e in pn("history", issue, "--json").json()]
    assert "assignee: agent-1 -> (none)" in details
    claimed = pn("claim-next", "--json", env={"PN_ACTOR": "agent-2"}).json()
    assert claimed["id"] == issue


def test_ready_claim_next_and_doctor_agree_on_an_idle_assignee(pn: Pn) -> None:
    issue = pn("create", "left to bob", "-t", "task", "-a", "bob", "--json").json()["id"]
    assert pn("ready", "--json").json() == []  # nobody but bob may claim it
    assert pn("status", "--json").json()["ready"] == 0
    assert [i["id"] for i in pn("ready", "-a", "bob", "--json").json()] == [issue]
    assert pn("claim-next", "--json").json() is None
    findings = pn("doctor", "--json").json()["findings"]
    assert [f["issue_id"] for f in findings if f["check"] == "idle_assignee"] == [issue]
    fixed = pn("doctor", "--fix", "--json").json()["fixes"]
    assert [f["issue_id"] for f in fixed if f["check"] == "idle_assignee"] == [issue]
    assert [i["id"] for i in pn("ready", "--json").json()] == [issue]
    assert pn("claim-next", "--json").json()["id"] == issue


def test_an_assignee_at_work_is_no_finding(pn: Pn) -> None:
    pn("create", "queued for bob", "-t", "task", "-a", "bob")
    pn("q", "bob is on it", "-t", "task", "-p", "0")
    assert pn("claim-next", "--json", env={"PN_ACTOR": "bob"}).code == 0
    findings = pn("doctor", "--json").json()["findings"]
    assert [f for f in findings if f["check"] == "idle_assignee"] == []


def test_show_indents_every_line_of_a_comment_below_it(pn: Pn) -> None:
    issue = pn("q", "work", "-t", "task").out.strip()
    assert pn("comment", "add", issue, "first\n  status: closed\n\x1b[2Jx").code == 0
    lines = pn("show", issue).out.splitlines()
    assert [line for line in lines if line.startswith("  status:")] == [
        "  status: open  priority: p2  assignee: -"
    ]
    assert "        status: closed" in lines
    assert "      \\x1b[2Jx" in lines


def test_import_refuses_to_forget_a_claim_until_exported_or_discarded(repo: Path, pn: Pn) -> None:
    issue = pn("q", "work", "-t", "task").out.strip()
    assert pn("export").code == 0
    assert pn("update", issue, "--claim").code == 0
    refused = pn("import", "--json")
    assert refused.code == 1
    error = refused.error()
    assert error["code"] == "conflict"
    assert "1 change" in error["error"]
    assert "pn export" in error["error"]
    assert "--discard-local" in error["error"]
    assert pn("show", issue, "--json").json()["status"] == "in_progress"
    assert pn("export").code == 0
    assert pn("import").code == 0
    assert pn("show", issue, "--json").json()["status"] == "in_progress"
    assert pn("release", issue).code == 0
    assert pn("import", "--discard-local").code == 0  # the release is dropped, as asked
    assert pn("show", issue, "--json").json()["status"] == "in_progress"


CLAIMER = """
import json, subprocess, sys
pn, out, me = sys.argv[1], sys.argv[2], sys.argv[3]
got = []
misses = 0
while misses < 3 and len(got) < 30:  # without the defence tasks come back forever
    # a new agent for each task (one claim per agent): a task that came back is claimed again
    who = f"{me}-{len(got)}"
    argv = [pn, "claim-next", "--json", "--actor", who]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode == 0 and json.loads(done.stdout) is not None:
        got.append(json.loads(done.stdout)["id"])
        misses = 0
    else:
        misses += 1
open(out, "w").write(json.dumps(got))
"""


def test_no_claimer_receives_a_task_another_holds_while_imports_run(
    repo: Path, pn: Pn, tmp_path: Path
) -> None:
    for n in range(24):
        assert pn("q", f"task {n}", "-t", "task").code == 0
    assert pn("export").code == 0
    script = tmp_path / "claimer.py"
    script.write_text(CLAIMER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PN_", "RALPH_", "SGF_"))}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    claimers = [
        subprocess.Popen(
            [sys.executable, str(script), PN, str(tmp_path / f"got-{n}.json"), f"loop-{n}"],
            cwd=repo,
            env={**env, "PN_ACTOR": f"loop-{n}"},
        )
        for n in range(4)
    ]
    imports = 0
    while any(c.poll() is None for c in claimers):
        done = subprocess.run([PN, "import"], cwd=repo, env=env, capture_output=True, check=False)
        imports += done.returncode == 0
    got = [i for n in range(4) for i in json.loads((tmp_path / f"got-{n}.json").read_text())]
    assert len(got) == len(set(got)) == 24, (imports, sorted(got))

"""End to end: the check step decides what lands (README "Check step"), in the real sandbox
with the scripted model: a task whose Verify fails never reaches main and carries the
evidence; a passing one lands; a check agent on another backend than the doer's decides."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ralph.testing.model_server import ModelServer

from tests.e2e_harness.project import SANDBOX_IMAGE, Project
from tests.e2e_harness.scenarios import FAKE_TOKEN, scenario

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(600)]

Model = Callable[..., ModelServer]
CODEX = "0.169.0"


def task(project: Project, title: str, description: str) -> str:
    made = project.pn("create", title, "-t", "task", "--description", description)
    return str(made["id"])


def checks(project: Project) -> list[dict[str, Any]]:
    """The `check` lines of every run record, in order."""
    found = []
    for path in sorted((project.root / ".sgf" / "runs").glob("*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in found if e["event"] == "check"]


def comments(project: Project, issue: str) -> list[str]:
    return [str(c["text"]) for c in project.pn("comment", "list", issue)]


def test_work_whose_verify_fails_never_lands_and_the_next_task_s_passing_work_does(
    project: Project, model: Model
) -> None:
    failing = task(
        project, "a greeting", "Objective: greet\nVerify: `sh -c 'echo no greeting yet; exit 1'`"
    )
    passing = task(project, "a file", "Objective: a file\nVerify: `test -s work/` and `ls work`")
    project.set_config(stuck_threshold=1)  # a failed check hands the task over at once
    project.commit_all("chore: seed two tasks with Verify commands")
    main, remote = project.git("rev-parse", "main"), project.remote_log()
    model(scenario("check-step"))

    done = project.sgf("build", "-a", "4", timeout=540)

    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert (
        f"check FAIL: {failing}'s Verify `sh -c 'echo no greeting yet; exit 1'` failed on the "
        "rebased branch (exit 1): main did not move; its commits are on sgf/"
    ) in out
    assert f"reopened: {failing}; handed to a human: {failing}" in out
    # the failing task's work never reached main or the remote; the passing one's did
    assert project.git("log", "--format=%s", f"{main}..main").splitlines() == [
        f"[{passing}] implement"
    ]
    assert project.remote_log() == [f"[{passing}] implement", *remote]
    assert not (project.root / "work" / f"{failing}.txt").exists()
    [kept] = project.git("branch", "--list", "sgf/*-rejected-*").split()
    assert project.git("show", f"{kept}:work/{failing}.txt") == "done"
    issues = project.issues()
    assert (issues[failing]["status"], issues[failing]["assignee"]) == ("open", "human")
    assert issues[passing]["status"] == "closed"
    evidence, handed = comments(project, failing)
    assert evidence.startswith("check FAIL on ")
    assert f"Verify of {failing} failed (exit 1): `sh -c 'echo no greeting yet; exit 1'`" in (
        evidence
    )
    assert "no greeting yet" in evidence
    assert handed.startswith("check: handed to a human after 1 failed checks")
    [passed] = comments(project, passing)
    assert passed.startswith(f"check PASS on {project.git('rev-parse', 'main')[:12]} (landed)")
    assert f"Verify of {passing} passed (exit 0): `ls work`" in passed
    first, second = checks(project)
    assert (first["verdict"], first["landed"], first["tasks"]) == ("FAIL", False, [failing])
    assert first["evidence"] == [
        {
            "command": "sh -c 'echo no greeting yet; exit 1'",
            "task": failing,
            "exit": 1,
            "output": "no greeting yet",
        }
    ]
    assert (second["verdict"], second["landed"], second["tasks"]) == ("PASS", True, [passing])
    assert [e["exit"] for e in second["evidence"]] == [0, 0]


@pytest.fixture
def codex_image(sandbox_image: str, codex_bin: Path, tmp_path: Path) -> str:
    """The session's sandbox image (claude in it) plus the pinned codex, labelled."""
    context = tmp_path / "codex-image"
    context.mkdir()
    shutil.copy2(codex_bin, context / "codex")
    (context / "Dockerfile").write_text(
        f"FROM {sandbox_image}\nCOPY codex /usr/local/bin/codex\n"
        f"LABEL springfield.agent.codex={CODEX}\n"
    )
    tag = f"{SANDBOX_IMAGE}-check-step-codex"  # this checkout's own
    done = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return tag


@pytest.mark.codex
def test_a_claude_check_agent_decides_what_a_codex_doer_s_work_lands(
    project: Project, model: Model, codex_image: str
) -> None:
    """`[stages.build] agent = "codex", check_agent = "claude"`: codex does the tasks, claude
    judges them; its FAIL keeps work whose Verify passed off main, its PASS lands."""
    judged_fail = task(project, "a greeting", "Verify: `true`\n\njudge: fail")
    judged_pass = task(project, "a file", "Verify: `true`")
    project.set_config(
        docker_template=codex_image,
        stuck_threshold=1,
        stages={"build": {"agent": "codex", "check_agent": "claude"}},
    )
    project.commit_all("chore: seed two tasks, codex does them, claude checks")
    main = project.git("rev-parse", "main")
    server = model(scenario("check-step"), key=FAKE_TOKEN)
    project.env.update(
        {
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "OPENAI_API_KEY": FAKE_TOKEN,
            "OPENAI_MODEL": "scripted-1",
        }
    )

    done = project.sgf("build", "-a", "4", timeout=540)

    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert (
        "check FAIL: the check agent (claude) judged the rebased branch FAIL: the greeting is "
        "missing: main did not move"
    ) in out
    assert project.git("log", "--format=%s", f"{main}..main").splitlines() == [
        f"[{judged_pass}] implement"
    ]
    issues = project.issues()
    assert (issues[judged_fail]["status"], issues[judged_fail]["assignee"]) == ("open", "human")
    assert issues[judged_pass]["status"] == "closed"
    evidence = comments(project, judged_fail)[0]
    assert "Check agent (claude): FAIL: the greeting is missing" in evidence
    assert "- work/ holds no greeting" in evidence
    assert "To fix:\n- add the greeting: work/greeting.txt" in evidence
    assert f"Verify of {judged_fail} passed (exit 0): `true`" in evidence
    [passed] = comments(project, judged_pass)
    assert "Check agent (claude): PASS: does what the task asks" in passed
    first, second = checks(project)
    assert (first["agent"]["agent"], first["agent"]["verdict"], first["landed"]) == (
        "claude", "FAIL", False,
    )  # fmt: skip
    assert (second["agent"]["verdict"], second["landed"]) == ("PASS", True)
    paths = [r.path for r in server.requests if r.kind == "main"]
    assert "/v1/responses" in paths, paths  # the doer: codex
    assert "/v1/messages" in paths, paths  # the check agent: claude
    # both agents' API calls carried the one key the server takes (the key proxy's)
    assert {r.status for r in server.requests if r.kind == "main"} == {200}

"""End to end: a build loop and an issues-plan loop on the same repository at once."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import claimed, scenario

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]


def test_plan_and_build_loops_turn_a_bug_into_a_closed_fix(project: Project, model: Model) -> None:
    task = project.create_task("an ordinary task")
    bug = project.create_task("crash on empty input", kind="bug")
    project.commit_all("chore: seed a task and a bug")
    server = model(scenario("two-loops"))

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["sgf", *args],
            cwd=project.root,
            env=project.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    build = start("build", "-a", "5")
    plan = start("issues", "plan", "-a", "1")
    try:
        plan_out, _ = plan.communicate(timeout=200)
        build_out, _ = build.communicate(timeout=200)
    finally:
        for loop in (build, plan):
            if loop.poll() is None:
                loop.kill()
                loop.communicate()

    assert plan.returncode == 2, plan_out[-3000:]  # one iteration asked for, no sentinel
    assert build.returncode == 0, build_out[-3000:]
    issues = project.issues()
    [fix] = [i for i in issues.values() if i.get("fixes") == bug]
    assert issues[task]["status"] == "closed"
    assert fix["status"] == "closed"
    assert issues[bug]["status"] == "closed"
    assert fix["id"] in (issues[bug]["close_reason"] or "")
    claims = Counter(claimed(server.requests))
    assert claims == Counter({task: 1, fix["id"]: 1})
    for output in (plan_out, build_out, *(log.read_text() for log in project.logs())):
        assert "database is locked" not in output
    assert project.pid_files() == []
    assert project.containers() == []

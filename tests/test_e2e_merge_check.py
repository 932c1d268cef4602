"""End to end: a worktree loop's commits reach main only when the check command passes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import scenario

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(400)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]
CHECK = "run-silent tests -- sh -c 'test ! -e work/BROKEN || { echo work/BROKEN exists; exit 1; }'"


def test_a_task_that_breaks_the_checks_does_not_reach_main_and_is_reopened(
    project: Project, model: Model
) -> None:
    task = project.create_task("a change that breaks the tests at first")
    project.set_config(check_command=CHECK)
    project.commit_all("chore: seed a task, a merge check")
    main, remote = project.git("rev-parse", "main"), project.remote_log()
    model(scenario("merge-check"))

    done = project.sgf("build", "-a", "3", "--worktree", timeout=360)

    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "merge check failed on the rebased branch (exit 1): main did not move" in out
    assert f"reopened: {task}" in out
    # the first, broken attempt never reached main or the remote; the second did
    log = project.git("log", "--format=%s", f"{main}..main").splitlines()
    assert log == [f"[{task}] implement"]
    assert not (project.root / "work" / "BROKEN").exists()
    assert project.remote_log() == [f"[{task}] implement", *remote]
    [kept] = project.git("branch", "--list", "sgf/*-rejected-*").split()
    assert project.git("show", f"{kept}:work/BROKEN") == "broken"
    comments = project.pn("comment", "list", task)
    assert any("Merge check failed (exit 1)" in c["text"] for c in comments)
    assert any("\u2717 tests (exit 1)" in c["text"] and "work/BROKEN exists" in c["text"]
               for c in comments)  # fmt: skip
    assert project.issues()[task]["status"] == "closed"

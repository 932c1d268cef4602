"""End to end: `kill -9` of sgf and ralph mid-iteration, then the next `sgf build` recovers."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.processes import alive, find_below
from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import claimed, scenario
from tests.e2e_harness.waiting import wait_until
from tests.e2e_harness.workspaces import written

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]
SLEEP_STEP = 3  # crash.json: the `sleep 110` step during which the loop is killed


def test_killed_loop_is_recovered_by_the_next_build(project: Project, model: Model) -> None:
    first = project.create_task("first task")
    second = project.create_task("second task")
    project.commit_all("chore: seed tasks")
    server = model(scenario("crash"))

    crashed = subprocess.Popen(
        ["sgf", "build", "-a", "5"],
        cwd=project.root,
        env=project.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(
            lambda: any(r.step == SLEEP_STEP for r in server.main_requests()),
            timeout=120,
            what="the agent to start its long Bash step",
        )
        [held] = claimed(server.requests)
        # the agent works in its loop's workspace, not in the human's tree
        wait_until(
            lambda: written(project, f"work/{held}.py"), timeout=30, what="the half-done file"
        )
        wait_until(project.containers, timeout=30, what="the iteration's container")
        ralphs = wait_until(lambda: find_below(crashed.pid, "ralph"), timeout=10, what="ralph")
        # Freeze both, then kill both: neither may see the other die and clean up (sgf
        # removes its PID file when ralph exits; ralph gets a signal when sgf dies).
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in (*ralphs, crashed.pid):
                os.kill(pid, sig)
        crashed.wait(timeout=10)
        wait_until(lambda: not any(alive(pid) for pid in ralphs), timeout=10, what="ralph to die")
    finally:
        if crashed.poll() is None:
            os.killpg(crashed.pid, signal.SIGKILL)
            crashed.wait()
    assert project.pid_files() != [], "the crashed loop should have left its PID file"
    assert project.containers() != [], "the crashed loop should have left its container"
    assert project.issues()[held]["status"] == "in_progress"

    done = project.sgf("build", "-a", "5")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    issues = project.issues()
    assert {issues[first]["status"], issues[second]["status"]} == {"closed"}
    stashes = project.git("stash", "list")
    assert "sgf-recovery" in stashes
    recovered = (
        project.run(
            "git",
            "show",
            "--name-only",
            "--format=",
            "--include-untracked",
            "stash@{0}",
            check=False,
        ).stdout
        + project.run("git", "show", "--name-only", "--format=", "stash@{0}^3", check=False).stdout
    )
    assert f"work/{held}.py" in recovered
    assert "released" in project.run("pn", "history", held, "--json").stdout
    assert "sgf-recovery" in done.stdout + done.stderr  # says what it recovered and where
    assert project.pid_files() == []
    assert project.containers() == []

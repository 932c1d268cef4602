"""End to end: a hostile agent that ignores every stop cannot write after its leftovers were
kept, and the next launch starts without `--stash`.

The agent, in the real sandbox, traps SIGINT/SIGTERM/SIGHUP and writes a file ten times a
second in its loop's workspace. Whether the loop is stopped with Ctrl+C or ralph is killed
outright (its container then outlives it), the agent must be ended before its leftovers are
gathered: a writer still running would write into the workspace again (into the parked one the
next loop starts from), and what it wrote would reach neither the stash nor the human. The
leftovers come back as the `sgf-recovery` stash; the human's tree stays clean throughout.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.waiting import wait_until
from tests.e2e_harness.workspaces import left_in, written

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]

HOSTILE: dict[str, object] = {
    "steps": [
        {
            "tool": "Bash",
            "input": {
                "command": 'sh -c \'trap "" INT TERM HUP; i=0; while :; do i=$((i+1)); '
                "echo $i > hostile.txt; sleep 0.1; done'",
                "description": "Ignore every stop and keep writing into the tree",
            },
        },
        {"text": "Still here."},
    ]
}
DONE: dict[str, object] = {
    "steps": [
        {"tool": "Bash", "input": {"command": 'echo "$RALPH_LOOP_ID" > .ralph-complete'}},
        {"text": "Done."},
    ]
}


def ralph_pid(project: Project) -> int:
    """ralph's PID, from the label on the loop's container."""
    out = project.run(
        "docker",
        "ps",
        "--filter",
        f"label=springfield.project={project.root}",
        "--format",
        '{{.Label "springfield.ralph-pid"}}',
    ).stdout.split()
    assert len(out) == 1, out
    return int(out[0])


@pytest.mark.parametrize("stop", ["ctrl-c", "kill-ralph"])
def test_a_hostile_agent_cannot_dirty_the_tree_after_its_leftovers_are_kept(
    project: Project, model: Model, stop: str
) -> None:
    model(HOSTILE)
    loop = subprocess.Popen(
        ["sgf", "build", "-a", "1"],
        cwd=project.root,
        env=project.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: written(project, "hostile.txt"), timeout=180, what="the agent to write")
        assert not (project.root / "hostile.txt").exists()  # the human's tree is not its own
        if stop == "ctrl-c":
            loop.send_signal(signal.SIGINT)
        else:
            os.kill(ralph_pid(project), signal.SIGKILL)
        out, _ = loop.communicate(timeout=120)
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.communicate()

    assert loop.returncode == (130 if stop == "ctrl-c" else 137), out[-3000:]
    assert project.containers() == []  # no writer left
    assert left_in(project, "hostile.txt") == [], "written after the leftovers were taken"
    assert project.git("status", "--porcelain") == "", out[-3000:]
    assert "kept as stash 'sgf-recovery build-" in out
    kept = project.git("show", "--name-only", "--format=", "stash@{0}^3")
    assert "hostile.txt" in kept.split()

    model(DONE)
    again = project.sgf("build", "-a", "1")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert project.git("status", "--porcelain") == ""
    assert project.containers() == []

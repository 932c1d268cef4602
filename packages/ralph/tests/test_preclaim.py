"""`--claim ARGS`: the host claims each iteration's task, the agent's pn answers with it.

Real ralph, real pn with `PN_CLAIMS=git` against a real bare remote, the scripted agent on
the host (`--sandbox none`): what the agent sees is what it would see in the container.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Run, Script, git, pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

BIN = Path(sys.executable).parent
BOARD = "refs/pensa/claims"
# the agent's turn: claim as the build prompt says, note what it got, close it
WORK = (
    'id=$(pn claim-next -t task --json | python3 -c "import json,sys; '
    "t = json.load(sys.stdin); print(t['id'] if t else '')\"); "
    'echo "$PN_CLAIMS ${{PN_CLAIM_TRIES:-none}} $id" >> {seen}; '
    '[ -n "$id" ] && pn close "$id" -r done'
)


@pytest.fixture
def tasks(project: Path, remote: Path) -> list[str]:
    """Two ready tasks, committed and pushed to the project's bare remote."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    subprocess.run([str(BIN / "pn"), "init"], cwd=project, env=env, check=True, capture_output=True)
    made = [pn(project, "create", f"task {n}", "-t", "task") for n in range(2)]
    subprocess.run(["pn", "export", "--stage"], cwd=project, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "tasks"], cwd=project, env=env, check=True)
    git(project, "push", "-q")
    return [str(t["id"]) for t in made if isinstance(t, dict)]


@pytest.fixture
def env(ralph_env: dict[str, str]) -> dict[str, str]:
    return {
        **ralph_env,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PN_CLAIMS": "git",
        "PN_CLAIM_TRIES": "5",
        "PN_ACTOR": "build-x@alpha",
    }


def board(remote: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for name in git(remote, "ls-tree", "-r", "--name-only", BOARD).split():
        entry = json.loads(git(remote, "show", f"{BOARD}:{name}"))
        out[name.rsplit("/", 1)[-1]] = (entry["state"], entry["actor"])
    return out


def test_each_iteration_works_on_the_task_the_host_claimed(
    project: Path,
    remote: Path,
    tasks: list[str],
    env: dict[str, str],
    ralph: Run,
    script: Script,
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen"
    steps = [["sh", WORK.format(seen=seen)], ["result"]]
    main = git(remote, "rev-parse", "main")
    done = ralph("-a", "--loop-id", "build-x", "--claim", "-t task", "5", script(default=steps),
                 env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"claimed {tasks[0]} for iteration 1" in done.stdout
    assert "ralph complete after 2 iteration(s): nothing left to claim" in done.stdout
    # the agent's pn answered with the host's claim, and never saw the host's git settings
    assert seen.read_text().splitlines() == [f"held none {tasks[0]}", f"held none {tasks[1]}"]
    assert board(remote) == {task: ("closed", "build-x@alpha") for task in tasks}
    assert git(remote, "rev-parse", "main") == main  # the claims never touched the code


def test_a_claim_that_cannot_be_published_starts_no_agent(
    project: Path,
    remote: Path,
    tasks: list[str],
    env: dict[str, str],
    ralph: Run,
    script: Script,
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen"
    remote.rename(tmp_path / "gone.git")
    steps = [["sh", WORK.format(seen=seen)], ["result"]]
    done = ralph("-a", "--loop-id", "build-x", "--claim", "-t task", "5", script(default=steps),
                 env=env)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert f"cannot claim the iteration's task: cannot claim: git fetch of {BOARD}" in said
    assert not seen.exists()
    assert pn(project, "list", "-a", "build-x@alpha") == []


@pytest.mark.parametrize(
    ("value", "said"),
    [("-t 'task", "No closing quotation"), ("-t task --json", "ralph adds --json itself")],
)
def test_bad_claim_arguments_are_refused(ralph: Run, value: str, said: str) -> None:
    done = ralph("-a", "--claim", value, "1", "say hello")
    assert done.returncode == 1
    assert said in done.stderr

"""`claims = "git"`: clones stand in for machines, sharing a bare remote, each running a build
loop over one backlog. Claims travel on the remote's claims ref, published by the host; the
agent's pn (PN_CLAIMS=held) answers with the task its loop claimed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e_harness.tracker import committed_issues
from tests.loops_harness import BUILDER, Loops, make

pytestmark = [pytest.mark.process, pytest.mark.timeout(900)]
BOARD = "refs/pensa/claims"


def clones(
    tmp_path: Path, names: tuple[str, ...], tasks: int, *, image: str | None = None
) -> tuple[Path, list[Loops]]:
    """A bare remote holding `tasks` ready tasks, and a clone of it per name, `pn init` done;
    with `image`, the loops' agents run in Docker on it."""
    config = {"sandbox": "docker"} if image else {}
    origin = make(tmp_path, os.environ, claims="git", **config)
    if image:  # the agent runs in the container: it comes with the project
        toml = origin.root / ".sgf" / "config.toml"
        text = re.sub(r'(?m)^docker_template = ".*"$', f'docker_template = "{image}"',
                      toml.read_text())  # fmt: skip
        toml.write_text(text)
        (origin.root / "tools").mkdir()
        shutil.copy(BUILDER, origin.root / "tools" / "builder.py")
        (origin.root / "tools" / "builder.py").chmod(0o755)
        origin.git("add", "-A")
        origin.git("commit", "-qm", "chore: the builder agent")
    assert len(origin.seed(tasks)) == tasks
    remote = tmp_path / "remote.git"
    origin.git("init", "-q", "--bare", "-b", "main", str(remote), cwd=tmp_path)
    origin.git("remote", "add", "origin", str(remote))
    origin.git("push", "-q", "-u", "origin", "main")
    made = []
    for name in names:
        path = tmp_path / name
        origin.git("clone", "-q", str(remote), str(path), cwd=tmp_path)
        machine = Loops(path, {**origin.env, "PN_CLAIM_BACKOFF": "0.05"})
        if image:  # where the container sees it: the workspace is at the clone's path
            machine.env["RALPH_COMMAND"] = str(path / "tools" / "builder.py")
        machine.git("config", "user.name", name)
        machine.run("pn", "init")  # once per clone: hooks, merge driver, database
        made.append(machine)
    return remote, made


def build_everywhere(machines: list[Loops], iterations: int) -> None:
    """`sgf build -a N` in every clone at once; each must end complete."""
    started = [
        subprocess.Popen(
            ["sgf", "build", "-a", str(iterations)],
            cwd=machine.root,
            env=machine.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for machine in machines
    ]
    outputs = []
    try:
        for loop in started:
            outputs.append(loop.communicate(timeout=800)[0])
    finally:
        for loop in started:
            if loop.poll() is None:
                loop.kill()
                loop.communicate()
    for loop, out in zip(started, outputs, strict=True):
        assert loop.returncode == 0, out[-4000:]


def worked_once_and_closed(remote: Path, machine: Loops, tasks: int) -> str:
    """Every task's work reached the remote once, closed there and on the claims ref; the
    claims ref's log."""
    log = machine.git("--git-dir", str(remote), "log", "--format=%s", "main")
    worked = Counter(m[1] for m in re.finditer(r"^\[(pn-[0-9a-f]+)\]", log, re.MULTILINE))
    issues = committed_issues(lambda *args: machine.git("--git-dir", str(remote), *args), "main")
    assert len(issues) == tasks
    assert [t for t, n in worked.items() if n > 1] == []  # 0 tasks worked twice
    assert sorted(worked) == sorted(issues)  # every task's work reached the remote
    assert {i["status"] for i in issues.values()} == {"closed"}  # 0 lost closes
    assert "pn: claim" not in log  # claims travel on a ref of their own
    board = machine.git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", BOARD)
    closed = [
        name.rsplit("/", 1)[-1]
        for name in board.split()
        if '"closed"' in machine.git("--git-dir", str(remote), "show", f"{BOARD}:{name}")
    ]
    assert sorted(closed) == sorted(issues)  # and every close reached the claims ref
    return machine.git("--git-dir", str(remote), "log", "--format=%s", BOARD)


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Path, list[Loops]]:
    return clones(tmp_path, ("alpha", "beta", "gamma"), 30)


def test_three_machines_work_each_task_once_and_publish_every_close(
    machines: tuple[Path, list[Loops]],
) -> None:
    remote, clones_ = machines
    build_everywhere(clones_, 40)
    board = worked_once_and_closed(remote, clones_[0], 30)
    # loops on two machines may start in the same second, with one loop id: their actors
    # still differ (<loop-id>@<machine>), or each would take the other's claim for its own
    actors = set(re.findall(r"^pn: claim pn-[0-9a-f]+ by (\S+)$", board, re.MULTILINE))
    assert len({actor.split("@")[1] for actor in actors}) == 3, actors


@pytest.mark.docker
@pytest.mark.claude  # the sandbox image holds claude; the agent here is the scripted builder
def test_in_docker_the_host_claims_and_the_sandbox_never_reaches_the_remote(
    tmp_path: Path, sandbox_image: str
) -> None:
    """The remote is a folder of the host, which no container sees: the agents' pn claims
    nothing and publishes nothing, and every claim, close and push still reaches it."""
    remote, pair = clones(tmp_path, ("alpha", "beta"), 4, image=sandbox_image)
    build_everywhere(pair, 6)
    worked_once_and_closed(remote, pair[0], 4)
    # one claim per task, the host's (the agent's pn, PN_CLAIMS=held, claimed none)
    claims = Counter(
        issue["id"]
        for machine in pair
        for issue in machine.pn("list", "--all")
        for event in history(machine, issue["id"])
        if event["event_type"] == "claimed"
    )
    assert sorted(claims.values()) == [1, 1, 1, 1], claims


def history(machine: Loops, issue: str) -> list[dict[str, str]]:
    """The issue's events in this clone ([] for one it only learnt from another)."""
    done = machine.run("pn", "history", issue, "--json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else []


def test_git_claims_refuse_no_push(machines: tuple[Path, list[Loops]]) -> None:
    _, clones = machines
    unpushed = clones[0].sgf("build", "-a", "--no-push", "1")
    assert unpushed.returncode == 1
    assert 'claims = "git" needs auto_push' in unpushed.stderr

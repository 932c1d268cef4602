"""`claims = "git"` (issue 14 acceptance): three clones stand in for three machines, sharing a
bare remote, each running a build loop over one backlog of 30 tasks."""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e_harness.tracker import committed_issues
from tests.loops_harness import Loops, make

pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Path, list[Loops]]:
    origin = make(tmp_path, os.environ, claims="git")
    tasks = origin.seed(30)
    assert len(tasks) == 30
    remote = tmp_path / "remote.git"
    origin.git("init", "-q", "--bare", "-b", "main", str(remote), cwd=tmp_path)
    origin.git("remote", "add", "origin", str(remote))
    origin.git("push", "-q", "-u", "origin", "main")
    clones = []
    for name in ("alpha", "beta", "gamma"):
        path = tmp_path / name
        origin.git("clone", "-q", str(remote), str(path), cwd=tmp_path)
        machine = Loops(path, {**origin.env, "PN_CLAIM_BACKOFF": "0.05"})
        machine.git("config", "user.name", name)
        machine.run("pn", "init")  # once per clone: hooks, merge driver, database
        clones.append(machine)
    return remote, clones


def test_three_machines_work_each_task_once_and_publish_every_close(
    machines: tuple[Path, list[Loops]],
) -> None:
    remote, clones = machines
    started = [
        subprocess.Popen(
            ["sgf", "build", "-a", "40"],
            cwd=machine.root,
            env=machine.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for machine in clones
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
    log = clones[0].git("--git-dir", str(remote), "log", "--format=%s", "main")
    worked = Counter(m[1] for m in re.finditer(r"^\[(pn-[0-9a-f]+)\]", log, re.MULTILINE))
    issues = committed_issues(lambda *args: clones[0].git("--git-dir", str(remote), *args), "main")
    assert len(issues) == 30
    assert [t for t, n in worked.items() if n > 1] == []  # 0 tasks worked twice
    assert sorted(worked) == sorted(issues)  # every task's work reached the remote
    assert {i["status"] for i in issues.values()} == {"closed"}  # 0 lost closes
    # loops on two machines may start in the same second, with one loop id: their actors
    # still differ (<loop-id>@<machine>), or each would take the other's claim for its own
    # claims travel on a ref of their own: the code branch carries none
    assert "pn: claim" not in log
    board = clones[0].git("--git-dir", str(remote), "log", "--format=%s", "refs/pensa/claims")
    actors = set(re.findall(r"^pn: claim pn-[0-9a-f]+ by (\S+)$", board, re.MULTILINE))
    assert len({actor.split("@")[1] for actor in actors}) == 3, actors


def test_git_claims_refuse_no_push(machines: tuple[Path, list[Loops]]) -> None:
    _, clones = machines
    unpushed = clones[0].sgf("build", "-a", "--no-push", "1")
    assert unpushed.returncode == 1
    assert 'claims = "git" needs auto_push' in unpushed.stderr

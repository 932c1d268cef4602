"""A fork bomb or a memory hog in the real Docker sandbox ends its iteration, says why in the
output and the run record, and the loop and the host go on (sandbox/limits.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralph.sandbox.limits import Limits, folders

from ..conftest import Script, run_ralph

pytestmark = pytest.mark.docker

BOMB = "b() { b | b & }; b"
HOG = "python3 -c 'x = bytearray(1024 ** 3); print(len(x))'"


@pytest.mark.parametrize(
    ("attack", "limits", "said"),
    [
        (BOMB, ["--pids", "64"], "the sandbox's process limit (64) was reached"),
        (HOG, ["--memory", "96m"], "the sandbox's memory limit (96m) was reached"),
    ],
)
def test_a_limit_reached_ends_the_iteration_and_the_loop_goes_on(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    tmp_path: Path,
    attack: str,
    limits: list[str],
    said: str,
) -> None:
    record = tmp_path / "run.jsonl"
    steps = {
        "_1": [["sh", attack], ["say", "still here"], ["hang"]],  # only the limit ends it
        "_2": [
            ["commit", "after.txt", "feat: after"],
            ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ],
    }
    done = run_ralph(
        project, docker_env, "-a", "--loop-id", loop_id, *limits, "--record", str(record), "3",
        script(**steps), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"stopped the iteration: {said}" in done.stdout + done.stderr
    assert "ralph complete after 2 iteration(s)" in done.stdout  # the loop went on
    first = [json.loads(line) for line in record.read_text().splitlines()][2]
    assert first["event"] == "iteration"
    assert said in first["failure"]
    assert (project / "after.txt").is_file()  # and the next iteration's work landed


def test_the_counters_are_found_for_either_cgroup_version(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "7").mkdir(parents=True)
    (proc / "7" / "cgroup").write_text("8:pids:/docker/c1\n4:memory:/docker/c1\n0::/\n")
    (proc / "8").mkdir()
    (proc / "8" / "cgroup").write_text("0::/system.slice/docker-c2.scope\n")
    root = tmp_path / "cg"
    v1 = folders(7, proc=proc, root=root)
    assert v1 == {"pids": root / "pids/docker/c1", "memory": root / "memory/docker/c1"}
    v2 = folders(8, proc=proc, root=root)
    assert v2["pids"] == v2["memory"] == root / "system.slice/docker-c2.scope"
    for folder in v1.values():
        folder.mkdir(parents=True)
    limits = Limits(64, "1g", v1)
    assert limits.hit() is None
    (v1["memory"] / "memory.oom_control").write_text("oom_kill_disable 0\noom_kill 1\n")
    assert "memory limit (1g)" in (limits.hit() or "")
    (v1["pids"] / "pids.events").write_text("max 3\n")
    assert "process limit (64)" in (limits.hit() or "")

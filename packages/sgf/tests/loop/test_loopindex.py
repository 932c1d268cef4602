"""The per-user index of running loops: written at launch, gone at the end, never poisoned."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ralph.shared import pids

from sgf.loop import loopindex, relaunch
from sgf.loop.loops import Launch
from sgf.stages import Stage

Spawn = Callable[..., "subprocess.Popen[str]"]


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"XDG_RUNTIME_DIR": str(tmp_path / "runtime")}


def test_the_index_lives_under_xdg_runtime_dir_else_a_private_temp_folder() -> None:
    assert loopindex.directory({"XDG_RUNTIME_DIR": "/run/user/7"}) == Path(
        "/run/user/7/springfield/loops"
    )
    assert loopindex.directory({"XDG_RUNTIME_DIR": "relative"}, uid=7) == Path(
        "/tmp/springfield-7/loops"
    )
    assert loopindex.directory({"TMPDIR": "/var/tmp"}, uid=7) == Path(
        "/var/tmp/springfield-7/loops"
    )


def test_an_entry_exists_while_registered_and_is_gone_after(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    project = tmp_path / "p"
    with loopindex.registered(project, "build-1", os.getpid(), started_at="t", env=env) as path:
        assert path is not None
        assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
        [entry] = loopindex.entries(env)
        assert (entry.project, entry.loop_id, entry.pid) == (str(project), "build-1", os.getpid())
        assert entry.process_start == pids.start_time(os.getpid())
        assert entry.alive()
    assert loopindex.entries(env) == []


@pytest.mark.process
def test_a_dead_loops_entry_is_never_alive_and_is_pruned_at_the_next_launch(
    tmp_path: Path, dead_pid: int
) -> None:
    env = env_for(tmp_path)
    folder = loopindex.directory(env)
    folder.mkdir(parents=True, mode=0o700)
    folder.parent.chmod(0o700)
    stale = {"project": "/x", "loop_id": "build-old", "started_at": "t"}
    (folder / "dead.json").write_text(json.dumps({**stale, "pid": dead_pid, "process_start": 1}))
    # a live PID, but another process's start time: a reused PID, not the loop
    (folder / "reused.json").write_text(
        json.dumps({**stale, "pid": os.getpid(), "process_start": 1})
    )
    (folder / "garbage.json").write_text("{not json")

    assert sorted(e.alive() for e in loopindex.entries(env)) == [False, False]
    with loopindex.registered(tmp_path, "build-new", os.getpid(), started_at="u", env=env):
        assert [e.loop_id for e in loopindex.entries(env)] == ["build-new"]
    assert list(folder.iterdir()) == []


def test_a_folder_others_can_write_is_not_trusted(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    folder = loopindex.directory(env)
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    entry = {"project": "/x", "loop_id": "l", "pid": os.getpid(), "process_start": None}
    (folder / "planted.json").write_text(json.dumps({**entry, "started_at": "t"}))
    assert loopindex.entries(env) == []
    with loopindex.registered(tmp_path, "l2", os.getpid(), started_at="t", env=env) as path:
        assert path is None  # the loop runs, unlisted


def test_an_unwritable_index_does_not_stop_a_loop(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {"XDG_RUNTIME_DIR": str(blocker)}  # a file where the folder should be
    with loopindex.registered(tmp_path, "l", os.getpid(), started_at="t", env=env) as path:
        assert path is None


@pytest.mark.process
def test_sgf_lists_its_loop_while_it_runs_and_keeps_its_arguments(
    project: Path, spawn_sgf: Spawn, fake_ralph: Any, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    env = fake_ralph.env(FAKE_RALPH_READY=str(ready))
    child = spawn_sgf(project, "build", "-a", "--max-cost", "2.5", "3", env=env)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    environ = dict(os.environ)
    [entry] = loopindex.entries(environ)
    assert entry.project == str(project)
    assert entry.pid == child.pid
    assert entry.alive()
    request = relaunch.load(project, entry.loop_id)
    assert request == Launch(Stage.BUILD, afk=True, iterations=3, max_cost=2.5)

    child.send_signal(2)
    child.communicate(timeout=30)
    assert child.returncode == 130
    assert loopindex.entries(environ) == []

"""Stopping a loop the way Ctrl+C does, and refusing what cannot be stopped or restarted."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sgf import proc
from sgf.loop import relaunch
from sgf.loop.loops import Launch
from sgf.loop.loopstate import LoopRow, State
from sgf.stages import Stage
from sgf.top import control
from sgf.top.control import NotRestartable, NotStoppable

# A stand-in for sgf in foreground mode: one child shares its process group (as ralph does
# when sgf's stdin is a terminal), one has a group of its own (sgf forwards to that one).
PARENT = """
import os, signal, subprocess, sys, time
from pathlib import Path
out = Path(sys.argv[1])
child = '''
import signal, sys, time
from pathlib import Path
def got(n, f):
    Path(sys.argv[1]).write_text("SIGINT")
    sys.exit(0)
signal.signal(signal.SIGINT, got)
Path(sys.argv[1] + ".ready").write_text("")
time.sleep(60)
'''
same = subprocess.Popen([sys.executable, "-c", child, str(out / "same")])
own = subprocess.Popen([sys.executable, "-c", child, str(out / "own")], process_group=0)
signal.signal(signal.SIGINT, lambda n, f: (out / "parent").write_text("SIGINT"))
(out / "children").write_text(f"{same.pid} {own.pid}")
same.wait()
own.kill()
own.wait()
"""


def wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


@pytest.mark.process
def test_interrupt_reaches_sgf_and_the_children_of_its_own_group_only(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT), str(tmp_path)], process_group=0
    )
    try:
        for name in ("children", "same.ready", "own.ready"):
            wait_for(tmp_path / name)
        same, own = map(int, (tmp_path / "children").read_text().split())
        assert sorted(proc.children(parent.pid)) == sorted([same, own])

        assert proc.interrupt_like_ctrl_c(parent.pid) == [parent.pid, same]

        assert parent.wait(timeout=30) == 0
        assert (tmp_path / "parent").read_text() == "SIGINT"
        assert (tmp_path / "same").read_text() == "SIGINT"
        assert not (tmp_path / "own").exists()  # sgf forwards to this one itself
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def row(**kw: object) -> LoopRow:
    values: dict[str, object] = {
        "project": Path("/nowhere"),
        "loop_id": "build-20260301T100000",
        "stage": "build",
        "spec": None,
        "state": State.RUNNING,
        **kw,
    }
    return LoopRow(**values)  # type: ignore[arg-type]


@pytest.mark.process
def test_a_stopped_or_replaced_loop_is_not_signalled(dead_pid: int) -> None:
    with pytest.raises(NotStoppable, match="is not running"):
        control.stop(row(state=State.STOPPED, pid=os.getpid()))
    with pytest.raises(NotStoppable, match="has ended already"):
        control.stop(row(pid=dead_pid))
    with pytest.raises(NotStoppable, match="has ended already"):
        control.stop(row(pid=os.getpid(), process_start=1))  # this PID is another process now


def test_restart_needs_a_stopped_afk_loop_with_its_arguments_kept(tmp_path: Path) -> None:
    with pytest.raises(NotRestartable, match="still running"):
        control.restart_request(row(project=tmp_path))
    stopped = row(project=tmp_path, state=State.STOPPED)
    with pytest.raises(NotRestartable, match="were not kept"):
        control.restart_request(stopped)
    relaunch.save(tmp_path, stopped.loop_id, Launch(Stage.BUILD, spec="auth"))
    with pytest.raises(NotRestartable, match="`sgf build --spec auth` in a terminal"):
        control.restart_request(stopped)
    relaunch.save(tmp_path, stopped.loop_id, Launch(Stage.VERIFY, iterations=2))
    assert control.restart_request(stopped) == Launch(Stage.VERIFY, iterations=2)

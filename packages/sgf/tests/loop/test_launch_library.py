"""launch.prepare and stage.run called directly: the library layer, no leaked descriptors."""

from __future__ import annotations

import io
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sgf.loop import launch, runs, stage
from sgf.loop.loops import Launch
from sgf.stages import Stage

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_run_in_process_tees_records_and_leaks_nothing(
    project: Path, fake_ralph: Any, tool_env: dict[str, str]
) -> None:
    env = {**tool_env, **fake_ralph.env(FAKE_RALPH_EXIT="2")}
    clock = iter(datetime(2026, 3, 1, 12, 0, s) for s in range(60))
    before = open_fds()
    for _ in range(5):
        prepared = launch.prepare(
            project, Launch(Stage.BUILD, afk=True), stash=False, env=env, now=lambda: next(clock)
        )
        out = io.BytesIO()
        pid = os.getpid()
        [ended] = stage.run(project, [prepared], env=env, pid=pid, now=datetime.now, out=out)
        code = ended.code
        assert code == 2
        assert b"fake ralph: done" in out.getvalue()
        assert prepared.log.read_bytes().endswith(b"# sgf: ralph exited with 2\n")
    assert open_fds() <= before  # a lazily opened descriptor may close meanwhile; none is added
    assert list((project / runs.RUN).glob("*.pid")) == []
    outcomes = runs.history(project)
    assert [o.outcome for o in outcomes] == ["exhausted"] * 5
    assert outcomes[0].loop_id == "build-20260301T120004"

"""`pensa.shared.process.alive`: the one answer to "is this process alive" for all three tools."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from pensa.shared.process import alive

WaitFor = Callable[..., None]  # the root conftest's `wait_for` fixture


def test_this_process_is_alive_and_no_pid_is_zero_negative_or_too_large() -> None:
    assert alive(os.getpid())
    assert not alive(0)
    assert not alive(-1)
    assert not alive(2**64)


@pytest.mark.process
def test_a_child_that_ended_is_not_alive_before_or_after_it_is_reaped(wait_for: WaitFor) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # Not yet reaped it is a zombie: it still answers signal 0, and is not alive.
        wait_for(lambda: not alive(child.pid), what="the ended child counted as dead")
    finally:
        child.wait()
    assert not alive(child.pid)

"""`sgf spec` on a real terminal: no first-run screens (issue 11), and the agent's sentinel
ends the session without anybody quitting Claude Code (issue 12).

The real claude binary runs interactively in the sandbox, on the slave side of a fresh pty, with
a HOME that has never seen Claude Code. The scripted model answers the session's first message
and writes the sentinel; the screen must show that answer and none of the theme picker, trust
dialog or bypass-permissions warning that a fresh `~/.claude.json` brings up, and sgf must end
on its own with exit 0.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

ANSWER = "SPEC-INTERVIEW-BEGINS"
# Text of the screens a fresh HOME shows (Claude Code 2.1.330), matched without ANSI codes.
ONBOARDING = (
    "Choose the text style",
    "Let's get started",
    "Do you trust the files in this folder",
    "Yes, I accept",
    "Bypass Permissions mode",
    "Security notes",
    "Press Enter to continue",
)
_ANSI = re.compile(
    rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, links
    rb"|\x1b[()][A-Z0-9]"  # charset selection
)


def screen_text(raw: bytes) -> str:
    """What a reader sees: escape sequences removed, every run of blanks one space."""
    return " ".join(_ANSI.sub(b" ", raw).decode("utf-8", "replace").split())


def _controlling_tty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def read_until(fd: int, wanted: Callable[[bytes], bool], timeout: float) -> bytes:
    """What the terminal showed until `wanted` holds, the terminal closes or `timeout` passes.

    `wanted` is asked again at least every fraction of a second: a condition on the process
    (has it exited?) comes true with no more output, and the test's own open slave end means
    the master never reports the close.
    """
    seen, deadline = b"", time.monotonic() + timeout
    while not wanted(seen) and (left := deadline - time.monotonic()) > 0:
        if select.select([fd], [], [], min(left, 0.2))[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the last slave end closed
                break
            if not data:
                break
            seen += data
    while select.select([fd], [], [], 0)[0]:  # what the process wrote just before it ended
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    return seen


def test_sgf_spec_starts_claude_without_first_run_screens(
    project: Project, model: Callable[[Scenario | dict[str, object]], ModelServer]
) -> None:
    sentinel = {"command": 'echo "$RALPH_LOOP_ID" > .ralph-complete'}
    model({"steps": [{"text": ANSWER, "tool": "Bash", "input": sentinel}, {"text": "Done."}]})
    master, slave = pty.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        ["sgf", "spec"],
        cwd=project.root,
        env={**project.env, "TERM": "xterm-256color"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=_controlling_tty,
    )
    try:
        seen = read_until(master, lambda raw: ANSWER in screen_text(raw), timeout=180)
        shown = screen_text(seen)
        assert ANSWER in shown, f"the model's answer never appeared; the screen:\n{shown[-3000:]}"
        for screen in ONBOARDING:
            assert screen not in shown, f"first-run screen {screen!r} appeared:\n{shown[-3000:]}"
        after = read_until(master, lambda _raw: proc.poll() is not None, timeout=90)
        tail = screen_text(after)[-3000:]
        assert proc.poll() is not None, f"nobody quit Claude Code, and it went on:\n{tail}"
        assert proc.wait() == 0, tail
        assert "session complete" in tail
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        os.close(master)
        os.close(slave)

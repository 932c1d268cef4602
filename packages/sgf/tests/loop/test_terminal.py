"""On a terminal, ralph runs on its own pseudo-terminal: keystrokes reach it, Ctrl+C once."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from ..conftest import SGF, alive

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

WaitFor = Callable[..., None]


def read_until(fd: int, needle: bytes, timeout: float = 30) -> bytes:
    """Read from a pty master until `needle` shows up, failing after `timeout` seconds."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} never came; got {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


class OnTerminal(NamedTuple):
    """sgf started in a session of its own with a fresh pty's slave as its stdin, and the
    pty's modes from before sgf could change them."""

    child: subprocess.Popen[bytes]
    master: int
    slave: int
    before: list[Any]


@contextlib.contextmanager
def sgf_on_terminal(
    *args: str, cwd: Path, env: dict[str, str], **popen: Any
) -> Iterator[OnTerminal]:
    """Run `sgf ARGS` on a new pty (stdout and stderr too, unless given); afterwards kill it
    if it still runs and close both ends."""
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    popen = {"stdout": slave, "stderr": slave, **popen}
    child = subprocess.Popen(
        [str(SGF), *args], cwd=cwd, env=env, stdin=slave, start_new_session=True, **popen
    )
    try:
        yield OnTerminal(child, master, slave, before)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
        os.close(slave)


def test_ctrl_c_on_the_terminal_reaches_ralph_once_and_the_terminal_is_restored(
    project: Path, tool_env: dict[str, str], fake_ralph: Any, tmp_path: Path, wait_for: WaitFor
) -> None:
    ready = tmp_path / "ready"
    env = {**tool_env, **fake_ralph.env(FAKE_RALPH_READY=str(ready)), "TERM": "dumb"}
    with sgf_on_terminal("build", cwd=project, env=env) as term:
        output = read_until(term.master, b"fake ralph: done")
        wait_for(ready.exists, 30, f"{ready} to appear")
        ralph_pid = int(ready.read_text())
        assert os.isatty(term.slave)
        os.write(term.master, b"\x03")  # Ctrl+C, as a keystroke
        output += read_until(term.master, b"interrupted")
        assert term.child.wait(timeout=30) == 130
        assert termios.tcgetattr(term.slave) == term.before
    assert fake_ralph.calls()["signals"] == ["SIGINT"]
    assert not alive(ralph_pid), "ralph is still running"
    (log,) = (project / ".sgf/logs").glob("build-*.log")
    assert b"fake ralph: done" in log.read_bytes()
    assert list((project / ".sgf/run").glob("*.pid")) == []


def test_init_on_a_terminal_asks_for_the_stack(repo: Path, tool_env: dict[str, str]) -> None:
    with sgf_on_terminal("init", cwd=repo, env={**tool_env, "TERM": "dumb"}) as term:
        shown = read_until(term.master, b"Stack")
        assert b"tauri" in shown
        os.write(term.master, b"go\r")
        read_until(term.master, b"installed")
        assert term.child.wait(timeout=60) == 0
    assert 'stack = "go"' in (repo / ".sgf/config.toml").read_text()


def test_piped_output_with_a_terminal_keeps_ralph_in_the_foreground_and_ctrl_c_reaches_it_once(
    project: Path, tool_env: dict[str, str], fake_ralph: Any, tmp_path: Path, wait_for: WaitFor
) -> None:
    """`sgf build -a | tee x`: stdin is the terminal, so ralph must not be a background job."""
    import fcntl

    ready = tmp_path / "ready"

    def take_terminal() -> None:  # runs in the child after setsid: the pty becomes its tty
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {**tool_env, **fake_ralph.env(FAKE_RALPH_READY=str(ready))}
    piped = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "preexec_fn": take_terminal}
    with sgf_on_terminal("build", "-a", cwd=project, env=env, **piped) as term:
        wait_for(ready.exists, 30, f"{ready} to appear")
        ralph_pid = int(ready.read_text())
        assert os.getpgid(ralph_pid) == os.getpgid(term.child.pid)
        os.write(term.master, b"\x03")  # the terminal sends SIGINT to its foreground group
        out, err = term.child.communicate(timeout=30)
    assert term.child.returncode == 130, err
    assert fake_ralph.calls()["signals"] == ["SIGINT"]
    assert b"fake ralph: done" in out

"""On a terminal, ralph runs on its own pseudo-terminal: keystrokes reach it, Ctrl+C once."""

from __future__ import annotations

import os
import select
import subprocess
import termios
import time
from pathlib import Path
from typing import Any


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


def test_ctrl_c_on_the_terminal_reaches_ralph_once_and_the_terminal_is_restored(
    project: Path, tool_env: dict[str, str], fake_ralph: Any, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    sgf_bin = Path(tool_env["PATH"].split(os.pathsep)[0]) / "sgf"
    child = subprocess.Popen(
        [str(sgf_bin), "build"],
        cwd=project,
        env={**tool_env, **fake_ralph.env(FAKE_RALPH_READY=str(ready)), "TERM": "dumb"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    try:
        output = read_until(master, b"fake ralph: done")
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        ralph_pid = int(ready.read_text())
        assert os.isatty(slave)
        os.write(master, b"\x03")  # Ctrl+C, as a keystroke
        output += read_until(master, b"interrupted")
        assert child.wait(timeout=30) == 130
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert fake_ralph.calls()["signals"] == ["SIGINT"]
    assert termios.tcgetattr(slave) == before
    try:
        os.kill(ralph_pid, 0)
        raise AssertionError("ralph is still running")
    except ProcessLookupError:
        pass
    (log,) = (project / ".sgf/logs").glob("build-*.log")
    assert b"fake ralph: done" in log.read_bytes()
    assert list((project / ".sgf/run").glob("*.pid")) == []
    os.close(master)
    os.close(slave)


def test_init_on_a_terminal_asks_for_the_stack(
    repo: Path, tool_env: dict[str, str], git: Any
) -> None:
    master, slave = os.openpty()
    sgf_bin = Path(tool_env["PATH"].split(os.pathsep)[0]) / "sgf"
    child = subprocess.Popen(
        [str(sgf_bin), "init"],
        cwd=repo,
        env={**tool_env, "TERM": "dumb"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    try:
        shown = read_until(master, b"Stack")
        assert b"tauri" in shown
        os.write(master, b"go\r")
        read_until(master, b"installed")
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
        os.close(slave)
    assert 'stack = "go"' in (repo / ".sgf/config.toml").read_text()


def test_piped_output_with_a_terminal_keeps_ralph_in_the_foreground_and_ctrl_c_reaches_it_once(
    project: Path, tool_env: dict[str, str], fake_ralph: Any, tmp_path: Path
) -> None:
    """`sgf build -a | tee x`: stdin is the terminal, so ralph must not be a background job."""
    import fcntl

    ready = tmp_path / "ready"
    master, slave = os.openpty()
    sgf_bin = Path(tool_env["PATH"].split(os.pathsep)[0]) / "sgf"

    def take_terminal() -> None:  # runs in the child after setsid: the pty becomes its tty
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    child = subprocess.Popen(
        [str(sgf_bin), "build", "-a"],
        cwd=project,
        env={**tool_env, **fake_ralph.env(FAKE_RALPH_READY=str(ready))},
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=take_terminal,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        ralph_pid = int(ready.read_text())
        assert os.getpgid(ralph_pid) == os.getpgid(child.pid)
        os.write(master, b"\x03")  # the terminal sends SIGINT to its foreground group
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
        os.close(slave)
    assert child.returncode == 130, err
    assert fake_ralph.calls()["signals"] == ["SIGINT"]
    assert b"fake ralph: done" in out

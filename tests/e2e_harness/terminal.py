"""A program on the slave side of a fresh pseudo-terminal, as a developer's terminal runs it,
and what its screen shows."""

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def terminal(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """Run `argv` in a new session on a 40x120 pty it has as its controlling terminal; yields
    the process and the master end. On the way out a process still running is terminated
    (killed after a minute) and both ends are closed."""
    master, slave = pty.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env={**env, "TERM": "xterm-256color"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=_controlling_tty,
    )
    try:
        yield proc, master
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

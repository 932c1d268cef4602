"""Running ralph on a pseudo-terminal when sgf itself is on one, so the log sees everything.

ralph gets a real terminal (its interactive mode passes it through to Claude Code), sgf copies
keystrokes in and output out, writing the output to the log as well. The user's terminal is in
raw mode meanwhile, so Ctrl+C travels as a byte to ralph's terminal and reaches ralph once;
sgf never sees it. The terminal is restored on every exit path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import struct
import termios
import tty
from collections.abc import Mapping, Sequence
from pathlib import Path

from sgf import proc
from sgf.proc import Sink


def _copy_winsize(src: int, dst: int) -> None:
    with contextlib.suppress(OSError):
        size = fcntl.ioctl(src, termios.TIOCGWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
        fcntl.ioctl(dst, termios.TIOCSWINSZ, size)


def run_on_pty(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Sink,
    stdin: int = 0,
    stdout: int = 1,
) -> int:
    """Run ralph on a new pseudo-terminal relayed to ours; return its exit code."""
    pid, master = proc.spawn_on_pty(argv, cwd=cwd, env=env)
    _copy_winsize(stdin, master)
    saved = termios.tcgetattr(stdin)
    previous_winch = signal.signal(signal.SIGWINCH, lambda *_: _copy_winsize(stdin, master))

    def send(sig: signal.Signals) -> None:
        proc.signal_group(pid, sig)

    try:
        tty.setraw(stdin)
        with proc.forwarding(send):
            _relay(master, stdin=stdin, stdout=stdout, log=log)
            code = proc.wait_for(pid)
    finally:
        termios.tcsetattr(stdin, termios.TCSAFLUSH, saved)
        signal.signal(signal.SIGWINCH, previous_winch)
        os.close(master)
    return code


def _relay(master: int, *, stdin: int, stdout: int, log: Sink) -> None:
    """Copy stdin → master and master → stdout + log until ralph's side closes."""
    watching = [master, stdin]
    while True:
        try:
            ready, _, _ = select.select(watching, [], [])
        except InterruptedError:  # pragma: no cover - PEP 475 retries select itself
            continue
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every process on the terminal has gone
                return
            if not data:
                return
            os.write(stdout, data)
            log.write(data)
            log.flush()
        if stdin in ready:
            data = os.read(stdin, 4096)
            if data:
                os.write(master, data)
            else:
                watching.remove(stdin)

"""A wall-clock limit on a block of Python code that may never yield control."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType


class TimeUp(Exception):
    """A `time_limit` block ran past its budget."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeUp inside the block once `seconds` have passed (SIGALRM: a template loop
    that prints nothing yields no point where the caller could check a clock). Off the main
    thread, where no signal arrives, the block runs unbounded."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeUp

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

"""Logs people can read: no ANSI escapes, no carriage returns, even from a terminal."""

from __future__ import annotations

import io

import pytest

from sgf.loop.plainlog import PlainLog

STYLED = (
    b"\x1b[2m====\x1b[0m\r\n\x1b[1mIteration 1 of 3\x1b[0m\r\n"
    b"\x1b]0;title\x07-> Bash(ls)\r\n\rwaiting 3m\x1b[2K\rwaiting 2m\r\n\x07done\r\n"
)
PLAIN = b"====\nIteration 1 of 3\n-> Bash(ls)\n\nwaiting 3m\nwaiting 2m\ndone\n"


def test_escapes_carriage_returns_and_bells_are_gone() -> None:
    out = io.BytesIO()
    log = PlainLog(out)
    log.write(STYLED)
    log.flush()
    assert out.getvalue() == PLAIN


@pytest.mark.parametrize("cut", range(1, len(STYLED)))
def test_a_sequence_cut_between_writes_is_still_removed(cut: int) -> None:
    out = io.BytesIO()
    log = PlainLog(out)
    log.write(STYLED[:cut])
    log.write(STYLED[cut:])
    assert out.getvalue() == PLAIN

"""Logs people can read: `.sgf/logs/*.log` hold plain text even when the loop ran
on a terminal, where ralph (and in interactive stages Claude Code) print colours, cursor
moves and carriage returns. Escape sequences are dropped, CRLF and lone CR become newlines,
other control characters (bells, backspaces) go; a sequence cut between two writes is held
until its end arrives.
"""

from __future__ import annotations

import re
from typing import BinaryIO

_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks
    rb"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings
    rb"|\x1b[ -/]*[0-~]"  # two-character escapes
)
_CONTROLS = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
# An escape that may still be incomplete at the end of a chunk
_OPEN = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[PX^_][^\x1b]*|[ -/]*)?\Z")


class PlainLog:
    """A binary sink that writes what it is given, made plain, to `file`."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._pending = b""

    def write(self, data: bytes) -> int:
        """Strip escapes and controls, normalise line ends, write the rest."""
        text = self._pending + data
        held = _OPEN.search(text)
        self._pending = text[held.start() :] if held else b""
        text = text[: held.start()] if held else text
        if not self._pending and text.endswith(b"\r"):  # maybe the first half of a CRLF
            text, self._pending = text[:-1], b"\r"
        text = _ESCAPES.sub(b"", text).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        self._file.write(_CONTROLS.sub(b"", text))
        return len(data)

    def flush(self) -> None:
        """Flush the file (an incomplete escape stays held)."""
        self._file.flush()

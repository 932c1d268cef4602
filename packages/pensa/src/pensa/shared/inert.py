"""Hostile text made inert for a terminal.

A published contract module (see `pensa.shared`): every human (non-JSON) line pn, ralph and
sgf print goes through here. Titles, comments, actors and reasons come from users, agents and
the model, as do the model's and tools' words ralph shows and the logs sgf tails. Printed
raw, `pn create $'x\\e]0;pwned\\a\\e[2J' -t task; pn list` retitles and clears the terminal.
So C0 controls (but tab, and newline where a text may hold several lines), DEL, C1 controls
and the bidirectional overrides that can reorder what a reader sees become visible `\\xNN` /
`\\uNNNN` escapes. JSON output is exact.
"""

from __future__ import annotations

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
_CONTROLS = (*range(0x00, 0x20), *range(0x7F, 0xA0))
_TABLE = {cp: f"\\x{cp:02x}" for cp in _CONTROLS if cp not in (0x09, 0x0A)}
_TABLE.update({cp: f"\\u{cp:04x}" for cp in _BIDI})
_ONE_LINE = {**_TABLE, 0x0A: "\\n"}


def inert(text: object, *, multiline: bool = False) -> str:
    """`text` (or its `str`) with every control character shown as an escape; newlines kept
    where `multiline` says it may span lines."""
    return str(text).translate(_TABLE if multiline else _ONE_LINE)

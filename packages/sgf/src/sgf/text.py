"""Text from users, agents or the model made harmless for a terminal, for every view.

It sits below everything that prints (render.py, the build progress, `sgf top`), so a low
module can make its text inert without importing render's reports and what they name.
"""

from __future__ import annotations

_CONTROLS = (*range(0x00, 0x20), *range(0x7F, 0xA0))
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
_INERT = {cp: f"\\x{cp:02x}" for cp in _CONTROLS if cp != 0x09}
_INERT.update({cp: f"\\u{cp:04x}" for cp in _BIDI})


_INERT_LINES = {k: v for k, v in _INERT.items() if k != 0x0A}


def inert(value: object, *, multiline: bool = False) -> str:
    """Text from users, agents or the model made harmless for a terminal: control
    characters and bidirectional overrides become visible escapes; newlines stay only where
    `multiline` says a message may span lines. (pensa and ralph have the same few lines:
    packages share no code.)"""
    return str(value).translate(_INERT_LINES if multiline else _INERT)

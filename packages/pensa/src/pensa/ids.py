"""Issue and comment ids: `pn-` + the last 8 hex digits of a UUIDv7.

The leading digits of a UUIDv7 are its millisecond timestamp, so ids minted in the same
millisecond would share them; the last 8 are random bits (springfield notes §4.3).

The UUIDv7 is built here with the standard library, to the RFC 9562 layout the `uuid6`
package uses (`tests/test_ids.py` checks the two agree): importing `uuid6` loads
`importlib.metadata`; bench/bench_pensa.py prints what `pn create` would cost with it.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import TYPE_CHECKING

from pensa.errors import InvalidArgument

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

PREFIX = "pn-"
COMMENT_PREFIX = "pc-"
ATTEMPTS = 16
HEX = frozenset("0123456789abcdef")
# The shortest prefix `pn show` accepts: 4 hex digits tell 65,536 ids apart, and fewer would
# too often name several (beads also starts its adaptive ids at 4 characters).
MIN_PREFIX = 4
SHOWN_CANDIDATES = 5


def uuid7(*, now_ns: int | None = None, random: bytes | None = None) -> uuid.UUID:
    """A UUIDv7 (RFC 9562 §5.7): 48-bit Unix milliseconds, version 7, variant 10, 74 random bits."""
    millis = (time.time_ns() if now_ns is None else now_ns) // 1_000_000
    rand = int.from_bytes(os.urandom(10) if random is None else random, "big")
    rand_a = (rand >> 62) & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    value = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return uuid.UUID(int=value)


def short_id(value: uuid.UUID, prefix: str = PREFIX) -> str:
    """`pn-` (or `prefix`) and the last 8 hex digits (random bits) of a UUID."""
    return prefix + value.hex[-8:]


def new_id(taken: Callable[[str], bool], *, prefix: str = PREFIX) -> str:
    """A fresh id that `taken` says is unused; a collision is regenerated, never reused.

    Comments use `pc-` so they cannot be mistaken for issues."""
    for _ in range(ATTEMPTS):
        candidate = short_id(uuid7(), prefix)
        if not taken(candidate):
            return candidate
    raise RuntimeError(f"no free id after {ATTEMPTS} attempts")  # 2**-512: not a real path


def looks_like_id(text: str) -> bool:
    """Whether `text` has the shape of a pensa id."""
    tail = text[len(PREFIX) :]
    return text.startswith(PREFIX) and len(tail) == 8 and all(c in "0123456789abcdef" for c in tail)


class AmbiguousId(InvalidArgument):
    """A prefix that names several issues."""

    def __init__(self, text: str, candidates: list[str]) -> None:
        shown = ", ".join(candidates[:SHOWN_CANDIDATES])
        more = ", ..." if len(candidates) > SHOWN_CANDIDATES else ""
        super().__init__(f"{text} matches several issues: {shown}{more}; type more digits")


def resolve(conn: sqlite3.Connection, text: str) -> str | None:
    """The issue id `text` names, forgiving what people type; None when it names none.

    Tried in order, each only if the previous found nothing, so an exact id (what agents
    pass) costs one indexed lookup: the id as given; lower-cased with `pn-` added; then a
    unique prefix of at least 4 hex digits (`1a2b`, `PN-1A2B`). Several matches raise
    AmbiguousId naming them."""
    if _exists(conn, text):
        return text
    folded = text.strip().lower()
    tail = folded.removeprefix(PREFIX)
    full = PREFIX + tail
    if full != text and _exists(conn, full):
        return full
    if not MIN_PREFIX <= len(tail) < 8 or not HEX.issuperset(tail):
        return None
    # Binary text order puts every id starting `full` in [full, full + "g"): 'g' sorts after
    # every hex digit, so the unique index answers the range.
    rows = conn.execute(
        "SELECT id FROM issues WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
        (full, full + "g", SHOWN_CANDIDATES + 1),
    ).fetchall()
    if len(rows) > 1:
        raise AmbiguousId(text, [r[0] for r in rows])
    return str(rows[0][0]) if rows else None


def _exists(conn: sqlite3.Connection, issue_id: str) -> bool:
    return conn.execute("SELECT 1 FROM issues WHERE id = ?", (issue_id,)).fetchone() is not None


def why_not_found(text: str) -> str:
    """What to add to "no issue X" so the reader knows what pn would have accepted."""
    tail = text.strip().lower().removeprefix(PREFIX)
    if looks_like_id(PREFIX + tail):
        return ""
    if HEX.issuperset(tail) and 0 < len(tail) < MIN_PREFIX:
        return f" (give at least {MIN_PREFIX} hex digits of the id)"
    if HEX.issuperset(tail) and tail:
        return ""
    return " (ids look like pn-1a2b3c4d; any unique prefix of 4+ digits works)"

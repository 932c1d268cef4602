"""Issue and comment ids: `pn-` + the last 8 hex digits of a UUIDv7.

The leading digits of a UUIDv7 are its millisecond timestamp, so ids minted in the same
millisecond would share them; the last 8 are random bits (springfield notes §4.3).

The UUIDv7 is built here with the standard library, to the RFC 9562 layout the `uuid6`
package uses (`tests/test_ids.py` checks the two agree): importing `uuid6` costs ~30 ms
(it loads `importlib.metadata`), more than `pn create` may spend in total.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

PREFIX = "pn-"
ATTEMPTS = 16


def uuid7(*, now_ns: int | None = None, random: bytes | None = None) -> uuid.UUID:
    """A UUIDv7 (RFC 9562 §5.7): 48-bit Unix milliseconds, version 7, variant 10, 74 random bits."""
    millis = (time.time_ns() if now_ns is None else now_ns) // 1_000_000
    rand = int.from_bytes(os.urandom(10) if random is None else random, "big")
    rand_a = (rand >> 62) & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    value = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return uuid.UUID(int=value)


def short_id(value: uuid.UUID) -> str:
    """`pn-` and the last 8 hex digits (random bits) of a UUID."""
    return PREFIX + value.hex[-8:]


def new_id(taken: Callable[[str], bool]) -> str:
    """A fresh id that `taken` says is unused; a collision is regenerated, never reused."""
    for _ in range(ATTEMPTS):
        candidate = short_id(uuid7())
        if not taken(candidate):
            return candidate
    raise RuntimeError(f"no free id after {ATTEMPTS} attempts")  # 2**-512: not a real path


def looks_like_id(text: str) -> bool:
    """Whether `text` has the shape of a pensa id."""
    tail = text[len(PREFIX) :]
    return text.startswith(PREFIX) and len(tail) == 8 and all(c in "0123456789abcdef" for c in tail)

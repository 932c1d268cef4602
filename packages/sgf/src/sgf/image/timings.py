"""How long each slow phase of making the sandbox image took the last time, on this machine.

The progress display shows it beside a running phase ("last time 4m31s"): a measurement,
where a fixed figure in the source ("about a minute") is true only on the machine it was
written on. A phase never run here has no figure, and the display shows only its elapsed time.
Kept in sgf's cache folder (`timings.json`); a missing or unreadable file is no figures.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

FILE = "timings.json"


def _read(cache: Path) -> dict[str, float]:
    try:
        data = json.loads((cache / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def last(cache: Path, key: str) -> float | None:
    """The seconds phase `key` took the last time it finished here, or None."""
    return _read(cache).get(key)


def record(cache: Path, key: str, seconds: float) -> None:
    """Remember that phase `key` took `seconds` (a temporary file renamed over the old one).

    A cache folder that cannot be written loses the figure, not the build: OSError is left
    unraised on purpose.
    """
    data = {**_read(cache), key: round(seconds, 1)}
    try:
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{FILE}.", dir=cache)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, cache / FILE)
    except OSError:
        Path(tmp).unlink(missing_ok=True)

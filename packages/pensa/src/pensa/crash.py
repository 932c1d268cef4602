"""The last resort for a bug: one line on stderr naming a crash log that holds the traceback.

pre-commit's `error_handler` is the model: a user sees what went wrong and where the details are,
never a wall of traceback, and a bug report can carry the whole log.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pensa.safefile import write_atomically

TOOL = "pn"


def crash_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/springfield/crashes`, else `~/.cache/springfield/crashes`."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME", "~"), ".cache")
    return Path(cache).expanduser() / "springfield" / "crashes"


def report(error: BaseException, argv: Sequence[str], *, version: str) -> str:
    """Write `error`'s traceback to a new crash log; return the one line to show for it."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = (
        f"{TOOL} {version} on Python {sys.version.split()[0]} ({sys.platform})\n"
        f"argv: {list(argv)!r}\n\n" + "".join(traceback.format_exception(error))
    )
    name = f"{TOOL}-{stamp}-{os.getpid()}.log"
    for folder in (crash_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            write_atomically(path, text.encode("utf-8", errors="backslashreplace"))
        except OSError:
            continue
        where = f"the traceback is in {path}"
        break
    else:
        sys.stderr.write(text)
        where = "the traceback is above"
    what = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    return f"unexpected error ({what}); {where}. This is a bug: please report it with that log"

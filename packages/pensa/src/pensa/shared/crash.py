"""The last resort for a bug in pn, ralph or sgf: one line on stderr naming a crash log that
holds the traceback.

A published contract module (see `pensa.shared`): each tool's `main` calls `report`.
pre-commit's `error_handler` is the model: a user sees what went wrong and where the details are,
never a wall of traceback, and a bug report can carry the whole log. The log is a new file
(`O_EXCL`, never through a link: `pensa.shared.safefile`), in the user's cache or else the
temporary directory; where neither takes it, the traceback goes to stderr.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pensa.shared.safefile import Refused, SafeFiles

_FILES = SafeFiles(Refused)


def crash_dir(environ: Mapping[str, str] = os.environ) -> str:
    """`$XDG_CACHE_HOME/springfield/crashes`, else `~/.cache/springfield/crashes`."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME", "~"), ".cache")
    return os.path.join(os.path.expanduser(cache), "springfield", "crashes")


def report(error: BaseException, argv: Sequence[str], *, version: str) -> str:
    """Write `error`'s traceback to a new crash log named for the tool (`argv[0]`: pn, ralph,
    sgf); return the one line to show for it."""
    tool = argv[0] if argv else "springfield"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = (
        f"{tool} {version} on Python {sys.version.split()[0]} ({sys.platform})\n"
        f"argv: {list(argv)!r}\n\n" + "".join(traceback.format_exception(error))
    )
    name = f"{tool}-{stamp}-{os.getpid()}.log"
    for folder in (crash_dir(), tempfile.gettempdir()):
        try:
            os.makedirs(folder, exist_ok=True)
            data = text.encode("utf-8", "backslashreplace")
            path = _FILES.create(os.path.join(folder, name), data)
        except (OSError, Refused):
            continue
        where = f"the traceback is in {path}"
        break
    else:
        sys.stderr.write(text)
        where = "the traceback is above"
    what = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    return f"unexpected error ({what}); {where}. This is a bug: please report it with that log"

"""What each tool's console script refuses before anything runs.

A published contract module (see `pensa.shared`): the `main` of pn, ralph and sgf each calls
`undecodable` on its argv and the variables it reads, and prints the answer as its one-line
error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence


def undecodable(
    args: Sequence[str], environ: Mapping[str, str], names: Sequence[str]
) -> str | None:
    """What in argv or the named environment variables is not valid UTF-8, or None.

    Python hands such bytes over as lone surrogates, which fail later, deep in SQLite or a
    write, as a traceback; they are refused here, in one line, before anything runs.
    """
    for index, arg in enumerate(args, start=1):
        if not _encodable(arg):
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            return f"argument {index} ({shown}) is not valid UTF-8"
    for name in names:
        value = environ.get(name)
        if value is not None and not _encodable(value):
            return f"environment variable {name} is not valid UTF-8"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

"""The `pn` console script (`[project.scripts]` in pyproject.toml): `pensa.cli.main`, run with
Python's cyclic garbage collector off from the first import to the process's end.

A `pn` process lives for a fraction of a second and ends with `os._exit` (`pensa.cli.main`).
What it builds is modules, classes, functions and a handful of records: nothing that is
garbage in a cycle. Each few hundred new objects, the collector would walk the young ones
again, through the import of click and pensa and through the command, and find nothing to
free. Off, every command starts sooner: bench/bench_pensa.py's row "pn count, collector on"
prints what it would cost with it, against the target it keeps. The import turns the collector
off for its own batch of records too (`pensa.committed.rebuild`), so `Session.import_` called
from a library is as fast; library callers and the tests otherwise keep theirs.
"""

from __future__ import annotations

import gc


def main() -> None:
    """Run `pn` (`pensa.cli.main` ends the process itself)."""
    gc.disable()
    from pensa.cli import main as pn

    pn()

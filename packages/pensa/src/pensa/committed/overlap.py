"""What `pn import` does beside its main work, so that both of a machine's cores are busy.

The import alternates between Python (reading and checking the files, shaping rows, freeing
them) and SQLite (clearing the tables, building the indexes, committing), and SQLite lets
go of the GIL while a statement runs. So the long statements run on a second thread
(`SideStatements`) while this one does the Python work that does not need their result, and
the records are freed on a third (`freed_meanwhile`) while SQLite finishes. The connection
is used by one thread at a time: the main thread touches it only after `wait()`.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterator

    from pensa.committed.contents import Contents


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while the records are built and used. They
    are plain dicts of strings (no cycles to find), but each new batch of them started
    another pass over all the earlier ones.
    Leave it only once they are gone: the first collection after it would walk them all."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class SideStatements:
    """SQL statements run in order on a second thread, on the caller's connection (opened
    with `check_same_thread=False`), inside its transaction.

    `run` hands statements over and returns at once; `wait` returns when they are done and
    raises the first one's error. Leaving the `with` block waits too (without raising when
    the block already failed), so that a rollback never meets a statement still running."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def run(self, statements: list[str]) -> None:
        self.wait()
        self._thread = threading.Thread(
            target=self._execute, args=(statements,), name="pensa-import-sql"
        )
        self._thread.start()

    def _execute(self, statements: list[str]) -> None:
        try:
            for statement in statements:
                self._conn.execute(statement)
        except BaseException as e:  # raised again on the main thread, by `wait`
            self._error = e

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise error

    def __enter__(self) -> SideStatements:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is None:
            self.wait()
        else:
            with contextlib.suppress(Exception):
                self.wait()


@contextlib.contextmanager
def freed_meanwhile(garbage: list[Contents]) -> Iterator[None]:
    """Free what `garbage` holds (its last references) on a second thread until the block
    ends: freeing the records is Python work, while building the indexes and committing
    happen inside SQLite, which lets go of the GIL meanwhile; with a second core free, the
    freeing costs next to nothing.

    The thread frees a slice of each list at a time and lets go of the GIL after each
    (`time.sleep(0)`). One `clear()` of a list is a single call that keeps the GIL until its
    last record is gone: the main thread, which needs the GIL between SQLite's statements and
    to start the thread at all, waited for the whole of it."""
    parts = [
        part
        for contents in garbage
        for table in (contents.issues, contents.deps, contents.comments, contents.tombstones)
        for part in (table.records, table.rows)
    ]
    garbage.clear()
    thread = threading.Thread(target=_free, args=(parts,), name="pensa-import-free")
    thread.start()
    try:
        yield
    finally:
        thread.join()


FREED_AT_ONCE = 500  # records or rows a slice: a fraction of a millisecond with the GIL


def _free(parts: list[list[Any]]) -> None:
    while parts:
        part = parts.pop()
        while part:
            del part[-FREED_AT_ONCE:]
            time.sleep(0)  # lets go of the GIL: the main thread may be waiting for it

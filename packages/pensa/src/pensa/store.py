"""SQLite access: connections with pensa's pragmas, migrations, write transactions, and the
lookups by id every module beside the tracker needs (`get`, `find`, `resolve`).

Every connection sets `trusted_schema=OFF`, `busy_timeout=5000` and `foreign_keys=ON` and a
PERSIST journal: the database is shared with a loop's containers by bind-mounting its files
one by one (never its folder, whose other files the host's git reads), so the journal must be
a file that stays, never one deleted and made again at each transaction (and WAL's shared
memory does not work through a bind mount at all; design, "Runtime sharing model").
There is no daemon.

The sandboxed agent can write the file and everything beside it: a database, journal or lock
that is a symbolic link is refused before SQLite opens anything, and the schema is checked
before every write (`pensa.foreign`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import TYPE_CHECKING, Any

from pensa import foreign
from pensa.errors import Busy, DamagedDatabase, NotFound, PensaError, ReadOnly, StorageError
from pensa.models import ISSUE_COLUMNS, Issue, timestamp, utcnow
from pensa.schema import MIGRATIONS, REBUILDS

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

# The oldest SQLite that reads pensa's schema: m006's generated column needs 3.31 (2020).
OLDEST_SQLITE = (3, 31, 0)
BUSY_TIMEOUT_MS = 5000
# busy_timeout already waits 5 s per attempt; these retries cover the cases SQLite does not
# wait for (a lock lost between attempts), so concurrent claim-next never surfaces it.
LOCK_RETRIES = 8
# Writers take turns on `<db>.lock` before BEGIN IMMEDIATE. SQLite's busy handler
# sleeps longer the longer a writer has waited, so newcomers overtook old waiters and the
# slowest of many concurrent claim-next waited far too long. Polling the lock at a constant
# short interval gives every waiter the same chance (bench/bench_claims.py).
WRITER_POLL_S = 0.001

Row = tuple[Any, ...]


def translate(error: sqlite3.Error, *, path: str | None) -> PensaError:
    """Turn a SQLite error into the pensa error a user can act on."""
    text = str(error)
    where = str(path) if path else "the in-memory database"
    if "readonly" in text or "read-only" in text or "unable to open database file" in text:
        return ReadOnly(
            f"cannot write {where}: {text}; check the permissions of the file and its "
            "directory (nothing was changed)"
        )
    if "locked" in text or "busy" in text:
        return Busy(f"{where} stayed locked by other writers; try again ({text})")
    if "disk is full" in text or "disk I/O error" in text:
        return StorageError(f"cannot write {where}: {text}; free some space and try again")
    if path and ("file is not a database" in text or "malformed" in text):
        # Every command says the same one line, and it names the command that repairs the
        # file rather than one that would fail on it too.
        why = "not a SQLite database" if "not a database" in text else f"SQLite: {text}"
        return DamagedDatabase(where, why)
    return StorageError(f"SQLite failed on {where}: {text}; `pn doctor` checks integrity")


def _distrust_schema(conn: sqlite3.Connection) -> None:
    """`trusted_schema=OFF` (no function with side effects or virtual table run from the
    schema), wherever this SQLite accepts pensa's own schema under it.

    SQLite 3.40 counts json_object, which issues.issue_json calls (schema.m006), as unsafe:
    under OFF it refuses every statement that touches the column, and a database whose schema
    is not yet parsed reads as malformed. So the setting comes after the exact schema check
    (`pensa.foreign`, parsing only, running nothing), and one prepared statement tells
    whether the column still works; where it does not, the check alone keeps the schema
    pensa's."""
    conn.execute("PRAGMA trusted_schema = OFF")
    try:
        conn.execute("SELECT issue_json FROM issues LIMIT 0")
    except sqlite3.DatabaseError:  # "unsafe use of json_object()", or "malformed schema"
        conn.execute("PRAGMA trusted_schema = ON")


def _is_locked(error: sqlite3.Error) -> bool:
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in str(error) or "busy" in str(error)
    )


class Store:
    """One open SQLite database: typed row access and write transactions."""

    def __init__(self, conn: sqlite3.Connection, path: str | None) -> None:
        self.conn = conn
        self.path = path
        # Set once migrated: from then on every write first checks the schema.
        self.guarded = False

    @classmethod
    def open(cls, where: str | os.PathLike[str] | None) -> Store:
        """Open (creating if needed) and migrate `where`; `None` is an empty in-memory store."""
        path = None if where is None else os.fspath(where)
        if sqlite3.sqlite_version_info < OLDEST_SQLITE:
            oldest = ".".join(map(str, OLDEST_SQLITE))
            raise StorageError(
                f"pensa needs SQLite {oldest} or newer; this Python uses SQLite "
                f"{sqlite3.sqlite_version} (a newer Python, or one built with a newer SQLite)"
            )
        if path is not None:
            from pensa.project import DB_SUFFIXES
            from pensa.safefile import refuse_unsafe

            # SQLite opens these itself, and a FIFO as the journal hung every pn command; a
            # folder as the database itself is damage that `pn doctor --fix` repairs
            folder = os.path.dirname(os.path.abspath(path))
            beside = [path + s for s in DB_SUFFIXES if s]
            refuse_unsafe([p for p in [path] if not os.path.isdir(p)] + beside, folders=[folder])
        try:
            conn = sqlite3.connect(
                ":memory:" if path is None else str(path),
                isolation_level=None,
                timeout=BUSY_TIMEOUT_MS / 1000,
                # `pn import` runs statements on a second thread while this one reads the
                # files (pensa.committed.overlap); one thread uses the connection at a time
                check_same_thread=False,
            )
        except sqlite3.Error as e:
            if path is not None and os.path.isdir(path):  # (SQLite: "unable to open")
                raise DamagedDatabase(path, "a directory, not a database file") from e
            raise translate(e, path=path) from e
        store = cls(conn, path)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            store.migrate()  # finds a damaged file first (it reads the schema's version)
            if path is not None:
                conn.execute("PRAGMA journal_mode = PERSIST")
            if path is not None:
                foreign.check(store.rows(foreign.QUERY), path)
                store.guarded = True
            _distrust_schema(conn)
        except BaseException:
            conn.close()
            raise
        return store

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version(self) -> int:
        """How many migrations this database has had."""
        return int(self.rows("PRAGMA user_version")[0][0])

    def migrate(self) -> None:
        """Apply pending migrations, each in its own transaction, and record them."""
        if self.version() == len(MIGRATIONS):
            return
        if self.path is not None:
            foreign.check_before_migrating(self.conn, self.path)
        if self.version() > len(MIGRATIONS):
            raise StorageError(
                f"{self.path} has schema version {self.version()}, newer than this pn "
                f"understands ({len(MIGRATIONS)}); upgrade pensa"
            )
        for number, migration in enumerate(MIGRATIONS, start=1):
            if self.version() >= number:
                continue
            # SQLite ignores `foreign_keys` inside a transaction: a rebuild sets it before.
            rebuilds = migration in REBUILDS
            if rebuilds:
                self.conn.execute("PRAGMA foreign_keys = OFF")
            try:
                with self.write() as conn:
                    # Re-read inside the lock: another process may have migrated meanwhile.
                    if conn.execute("PRAGMA user_version").fetchone()[0] >= number:
                        continue
                    # (a rebuild copies every row as it is: an orphan `pn doctor` would
                    # report before is reported after, not refused here)
                    migration(conn)
                    conn.execute(
                        "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                        (migration.__name__, timestamp(utcnow())),
                    )
                    conn.execute(f"PRAGMA user_version = {number}")
            finally:
                if rebuilds:
                    self.conn.execute("PRAGMA foreign_keys = ON")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a read query and return every row."""
        for attempt in range(LOCK_RETRIES):
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.Error as e:
                if not _is_locked(e) or attempt == LOCK_RETRIES - 1:
                    raise translate(e, path=self.path) from e
        raise AssertionError("unreachable")  # pragma: no cover

    def utf8_column(self, sql: str, params: Sequence[Any] = ()) -> list[bytes]:
        """Run a read query of one text column and return each value's UTF-8 bytes as
        SQLite holds them, not decoded (megabytes of JSON on their way to stdout).

        The garbage collector pauses meanwhile: the thousands of rows of `pn ready` set off
        collections that free nothing."""
        import gc

        collecting = gc.isenabled()
        gc.disable()
        self.conn.text_factory = bytes
        try:
            return [value for (value,) in self.rows(sql, params)]
        finally:
            self.conn.text_factory = str
            if collecting:
                gc.enable()

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """`BEGIN IMMEDIATE` … `COMMIT`, retried while locked; rolled back on any error."""
        with self._writers_turn():
            self._run_locked("BEGIN IMMEDIATE")
            try:
                if self.guarded:  # under the write lock: no schema change can slip in after
                    foreign.check(self.conn.execute(foreign.QUERY).fetchall(), self.path)
                yield self.conn
                self._run_locked("COMMIT")
            except BaseException as e:
                if self.conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self.conn.execute("ROLLBACK")
                if isinstance(e, sqlite3.Error):
                    raise translate(e, path=self.path) from e
                raise

    @contextlib.contextmanager
    def _writers_turn(self) -> Iterator[None]:
        """Hold `<db>.lock` (flock) while writing, so writers queue without SQLite's growing
        sleeps. Only an aid: SQLite's own locking stays what keeps writes apart, so without
        the lock file (a read-only directory, an in-memory store) or after waiting as long as
        SQLite would, the write goes ahead and SQLite decides."""
        if self.path is None:
            yield
            return
        from pensa.safefile import open_lock

        try:
            fd = open_lock(self.path + ".lock")  # never a planted link, FIFO or device
        except OSError:
            yield
            return
        try:
            import fcntl
            import time

            deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000 * LOCK_RETRIES
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(WRITER_POLL_S)
            yield
        finally:
            os.close(fd)  # releases the flock (never SQLite's own locks: another file)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every SELECT inside sees the same committed state."""
        self._run_locked("BEGIN DEFERRED")
        try:
            self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # take the snapshot
            yield self.conn
        except sqlite3.Error as e:
            raise translate(e, path=self.path) from e
        finally:
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")

    def _run_locked(self, statement: str) -> None:
        for attempt in range(LOCK_RETRIES):
            try:
                self.conn.execute(statement)
                return
            except sqlite3.Error as e:
                # A failed COMMIT keeps the transaction open, so retrying it is safe.
                if not _is_locked(e) or attempt == LOCK_RETRIES - 1:
                    raise translate(e, path=self.path) from e


def fetch_issue(conn: sqlite3.Connection, issue_id: str) -> Row | None:
    """The issue row with `ISSUE_COLUMNS`, or None."""
    row: Row | None = conn.execute(
        f"SELECT {ISSUE_COLUMNS} FROM issues WHERE id = ?", (issue_id,)
    ).fetchone()
    return row


def not_found(issue_id: str) -> NotFound:
    """The error for an unknown id, with a hint when the id is misspelt."""
    from pensa import ids  # only lookups need it: `pn ready` never pays for its imports

    return NotFound(f"no issue {issue_id}{ids.why_not_found(issue_id)}")


def get(conn: sqlite3.Connection, issue_id: str) -> Issue:
    """The issue with exactly this id, or NotFound."""
    row = fetch_issue(conn, issue_id)
    if row is None:
        raise not_found(issue_id)
    return Issue.from_row(row)


def find(conn: sqlite3.Connection, text: str) -> Issue:
    """The issue `text` names as a person may type it (`1a2b`, `PN-1A2B3C4D`), or NotFound."""
    from pensa import ids

    issue_id = ids.resolve(conn, text)
    if issue_id is None:
        raise not_found(text)
    return get(conn, issue_id)


def resolve(conn: sqlite3.Connection, text: str, *, flag: str) -> str:
    """The id an option such as `--dep` names, or NotFound saying which option."""
    from pensa import ids

    issue_id = ids.resolve(conn, text)
    if issue_id is None:
        raise NotFound(f"{flag} names no issue: {text}{ids.why_not_found(text)}")
    return issue_id


def set_fields(
    conn: sqlite3.Connection, issue_id: str, changes: dict[str, str | None], now: str
) -> None:
    """Change the issue's columns in `changes` (names from code, never input) and its
    `updated_at`, inside the caller's transaction."""
    columns = ", ".join(f"{k} = ?" for k in changes)
    conn.execute(
        f"UPDATE issues SET {columns}, updated_at = ? WHERE id = ?",
        (*changes.values(), now, issue_id),
    )


def log_event(
    conn: sqlite3.Connection,
    issue_id: str,
    event_type: str,
    *,
    actor: str,
    detail: str | None,
    at: str,
) -> None:
    """Append to the audit log, inside the caller's transaction."""
    conn.execute(
        "INSERT INTO events (issue_id, event_type, actor, detail, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (issue_id, event_type, actor, detail, at),
    )

"""The pensa exception family: every error has a stable machine-readable ``code``.

The CLI maps these once (``pensa.cli.main``) to exit code 1 and either
``{"error": ..., "code": ...}`` (with ``--json``) or ``error: ...`` on stderr.
"""

from __future__ import annotations


class PensaError(Exception):
    """Base of every error pensa reports to its user."""

    code = "error"
    description = "an unexpected failure"


class NotFound(PensaError):
    """An id names no issue, comment or edge."""

    code = "not_found"
    description = "an id (issue, comment, `--fixes`, `--dep`, dependency edge) does not exist"


class AlreadyClaimed(PensaError):
    """A claim on an issue someone else holds, or a closed one, or a second claim."""

    code = "already_claimed"
    description = (
        "`update --claim` on an issue someone else holds, or a closed one; the message names "
        "the holder; or a second claim by an actor that holds a task in progress (one claim "
        "per agent, plus one spike)"
    )


class CycleDetected(PensaError):
    """A dependency or parent that would close a cycle."""

    code = "cycle_detected"
    description = (
        "`dep add` or `--parent` would close a cycle of dependencies and parents; the message "
        "shows the path"
    )


class InvalidStatusTransition(PensaError):
    """A status change the lifecycle does not allow."""

    code = "invalid_status_transition"
    description = "e.g. reopening an open issue, releasing a closed one, `update --status closed`"


class InvalidArgument(PensaError):
    """Bad input on the command line."""

    code = "invalid_argument"
    description = (
        "usage errors, unknown commands or options, invalid enum values, self-dependency, "
        "`--fixes` naming a non-bug"
    )


class Conflict(PensaError):
    """A close or delete that needs --force."""

    code = "conflict"
    description = (
        "close/delete refused for want of `--force`; import refused for want of `--discard-local`"
    )


class InvalidData(PensaError):
    """A JSONL line pn import cannot accept."""

    code = "invalid_data"
    description = (
        "`pn import` found a bad JSONL line (the message is `file:line: reason`), or a JSONL "
        "file is larger than pensa reads (512 MiB)"
    )


class ReadOnly(PensaError):
    """The database cannot be written."""

    code = "read_only"
    description = "the database (or its directory) cannot be written; nothing was changed"


class Busy(PensaError):
    """The database stayed locked."""

    code = "busy"
    description = "the database stayed locked by other writers through every retry"


class GitFailed(PensaError):
    """A git command failed."""

    code = "git_error"
    description = "a git command pn runs (`git add` in `pn export --stage`) failed"


class StorageError(PensaError):
    """Any other SQLite failure."""

    code = "storage_error"
    description = "SQLite reported another failure (disk full, an I/O error, ...)"


class UnsafePath(PensaError):
    """A file pensa reads or writes is a symbolic link, or not a regular file."""

    code = "unsafe_path"
    description = (
        "`.pensa`, its database, journal or lock, or a JSONL file is a symbolic link (planted "
        "to redirect a write), or a JSONL, database or set-up file is a FIFO, device, socket "
        "or directory (planted to hang pn or make it read without end); pensa never follows "
        "or reads one: remove it. Nothing was changed"
    )

    def __init__(self, path: str, *, what: str) -> None:
        # `what`: pensa.shared.safefile's words for what stands there ("a symbolic link",
        # "a socket, not a regular file"); that module raises this for pensa's writes.
        self.path = path
        self.what = what
        super().__init__(
            f"{path} is {what}: pensa never reads or writes through a link, nor anything but a "
            "regular file there (it may have been planted to redirect a write, or to hang or "
            "flood pn): remove it and run the command again (nothing was changed)"
        )


class ForeignSchema(StorageError):
    """The database holds a trigger, view, table, index or column pensa did not create.

    A StorageError, so that `pn import` (pensa.committed.rebuild) rebuilds it beside, like a damaged
    file, rather than writing into it."""

    code = "foreign_schema"
    description = (
        "the database holds a trigger, view, table, index or column pensa did not create; "
        "`pn doctor` names it, `pn doctor --fix` rebuilds the database from the JSONL"
    )

    def __init__(self, path: str, found: list[str]) -> None:
        self.path = path
        self.found = found
        shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        super().__init__(
            f"{path} holds what pensa did not create ({shown}): it may have been tampered "
            "with, so pn will not use it; `pn doctor` names it, `pn doctor --fix` rebuilds the "
            "database from the committed JSONL (nothing was changed)"
        )


class DamagedDatabase(StorageError):
    """The database file is not SQLite, is corrupt, or is not a file at all.

    A StorageError, so that `pn import` (pensa.committed.rebuild) rebuilds it beside, as it
    does a foreign schema; `pn doctor --fix` does too, and keeps the damaged file."""

    code = "damaged_database"
    description = (
        "the database is not SQLite, is corrupt or is a directory; `pn doctor --fix` rebuilds "
        "it from the JSONL and keeps the damaged one"
    )

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(
            f"{path} is damaged ({why}): `pn doctor --fix` rebuilds it from the committed "
            ".pensa/*.jsonl and keeps the damaged one beside it (nothing was changed)"
        )


ALL_ERRORS: tuple[type[PensaError], ...] = (
    NotFound,
    AlreadyClaimed,
    CycleDetected,
    InvalidStatusTransition,
    InvalidArgument,
    Conflict,
    InvalidData,
    ReadOnly,
    Busy,
    GitFailed,
    StorageError,
    UnsafePath,
    ForeignSchema,
    DamagedDatabase,
)

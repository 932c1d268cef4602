"""Where a project's `.pensa/` lives, and who is acting.

Agents `cd` into sub-folders; upstream pn then silently used a new empty database there and
"all issues appeared lost" (springfield notes §5, pn-bc8e349a). So we walk up from the working
directory; `PN_DIR` names the `.pensa` directory itself.

Paths are plain strings here (os.path): `pathlib` costs a few ms of start-up that every read
command would pay (it pulls in urllib.parse and ipaddress).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

DIRNAME = ".pensa"
GITIGNORE = (
    "# pensa: the database is local; the JSONL files are committed.\n"
    "db.sqlite\ndb.sqlite-journal\ndb.sqlite.lock\n*.tmp\n*.tmp-journal\ndb.sqlite.import-*\n"
)

# The files SQLite and the writers' lock keep beside the database.
DB_SUFFIXES = ("", "-journal", "-wal", "-shm", ".lock")
# The committed files, one per kind of record, each also in shards by id (`committed.disk`).
KINDS = ("issues.jsonl", "deps.jsonl", "comments.jsonl", "deleted.jsonl")
# The untracked file a write leaves to say the committed files are behind the database
# (`committed.writeback`).
MARKER = "uncommitted"

# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_ProjectFields = NamedTuple(  # noqa: UP014
    "_ProjectFields",
    [
        ("dir", str),
    ],
)


class Project(_ProjectFields):
    """A `.pensa` directory (absolute path) and the files in it."""

    __slots__ = ()

    @property
    def db(self) -> str:
        """The working database file."""
        return os.path.join(self.dir, "db.sqlite")

    @property
    def issues_jsonl(self) -> str:
        """The committed issues file of ids no shard takes (`committed.disk`); earlier
        versions' one issues file. It exists wherever pensa wrote the files."""
        return os.path.join(self.dir, "issues.jsonl")

    def exists(self) -> bool:
        """Whether the directory exists."""
        return os.path.isdir(self.dir)

    def ensure(self) -> None:
        """Create the directory if missing, and its .gitignore for the database (also in a
        fresh clone, where the untracked .gitignore did not travel: an agent's `git add -A`
        must never commit db.sqlite)."""
        from pensa.safefile import write_atomically

        ignore = os.path.join(self.dir, ".gitignore")
        self.refuse_unsafe()
        try:
            os.makedirs(self.dir, exist_ok=True)
            if not os.path.lexists(ignore):
                write_atomically(ignore, GITIGNORE)
        except OSError as e:  # e.g. a file named .pensa (FileExistsError), a read-only parent
            from pensa.errors import ReadOnly

            raise ReadOnly(
                f"cannot create {self.dir}: {e.strerror or e}; it must be a writable "
                "directory (nothing was changed)"
            ) from e

    def refuse_unsafe(self) -> None:
        """`UnsafePath` if the directory is a symbolic link, or a file in it that pensa reads
        or writes is a link, a FIFO, a device, a socket or a directory: the sandboxed agent can
        plant one to make pn on the host write (or read) elsewhere, hang, or read without end.
        Twelve `lstat` calls, made before every command touches the files (a shard is
        checked as it is read: `safefile.read_regular`)."""
        from pensa.safefile import refuse_unsafe

        db = self.db
        names = (*KINDS, ".gitignore", MARKER)
        # a folder as the database itself is damage `pn doctor --fix` repairs (store.py)
        beside = (db + suffix for suffix in DB_SUFFIXES if suffix or not os.path.isdir(db))
        refuse_unsafe((*(os.path.join(self.dir, n) for n in names), *beside), folders=(self.dir,))


def at(path: str | os.PathLike[str]) -> Project:
    """The project whose `.pensa` directory is `path`."""
    return Project(os.path.abspath(os.fspath(path)))


def locate(cwd: str, env: Mapping[str, str]) -> Project | None:
    """`PN_DIR`, else the nearest `.pensa/` in cwd or a parent; None when there is none."""
    if env.get("PN_DIR"):
        return at(os.path.join(cwd, env["PN_DIR"]))
    folder = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(folder, DIRNAME)
        if os.path.isdir(candidate):
            return Project(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:  # the filesystem root
            return None
        folder = parent


def locate_or_new(cwd: str, env: Mapping[str, str]) -> Project:
    """The project to use for a write: found, or new at the git top level (else cwd)."""
    found = locate(cwd, env)
    if found is not None:
        return found
    from pensa import git  # only a first write needs git

    return at(os.path.join(git.toplevel(cwd, env) or cwd, DIRNAME))


def actor_lookup(flag: str | None, cwd: str, env: Mapping[str, str]) -> Callable[[], str]:
    """Who is acting, started now and known by calling the result (again: the same name):
    `--actor` > `PN_ACTOR` > `git config user.name` > `$USER` > "unknown".

    Without `--actor` or PN_ACTOR the name comes from `git config user.name`, a process
    that a write command starts first and collects when it logs its event: git runs
    while pn opens the database."""
    if flag or env.get("PN_ACTOR"):
        name = flag or env["PN_ACTOR"]
        return lambda: name
    from pensa import git

    started = git.start(["config", "user.name"], cwd=cwd, env=env)
    return lambda: git.user_name_of(started) or env.get("USER") or "unknown"

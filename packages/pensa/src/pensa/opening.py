"""Which database a command opens, and catching it up with the committed JSONL first.

The policy every `pn` command follows (moved it out of the click layer):
- a write opens (creating) the project's database;
- a read never creates files: without a database it sees an empty in-memory one, except in a
  fresh clone (`.pensa/` with JSONL but no database), where the first use imports the files;
- before working, the database merges in JSONL changed since the last sync (a checkout whose
  hook did not run, a teammate without pensa); a read that cannot write reads as it is.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.project import Project
    from pensa.store import Store


class Choice(NamedTuple):
    """Whether to open a database file (else an in-memory store), which one, and whether this
    is a fresh clone's first use."""

    on_disk: bool
    first_use: bool
    db: str = ""


def choose(found: Project | None, *, write: bool, shared: str | None = None) -> Choice:
    """The store a command with these needs opens. `shared` (PN_SHARED_DB) is the main
    checkout's database a worktree loop uses instead of its own (pensa.committed.shared)."""
    if found is None:
        return Choice(on_disk=False, first_use=False)
    db = os.path.abspath(shared) if shared else found.db
    exists = os.path.exists(db)
    first_use = not shared and not exists and os.path.exists(found.issues_jsonl)
    return Choice(on_disk=write or first_use or exists, first_use=first_use, db=db)


def catch_up(
    store: Store,
    found: Project,
    *,
    first_use: bool,
    write: bool,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Merge the committed JSONL in when it changed since the last sync; a line to show the
    user, if any. A bad committed line is said once and the database used as it is: it must
    not stop every agent's claim-next (`pn sync` and `pn export` refuse until it is fixed)."""
    from pensa.committed.disk import is_stale

    if not is_stale(store, found):
        return None
    from pensa.committed import sync
    from pensa.errors import InvalidData, ReadOnly

    try:
        done = sync.sync(store, found, env)
    except ReadOnly:
        if write:
            raise
        return None
    except InvalidData as e:
        from pensa.inert import inert

        return f"pn: warning: .pensa/*.jsonl not merged: {inert(str(e))}"
    if first_use:
        return f"pn: first use here: imported {done.added} issues from {found.dir}"
    return None

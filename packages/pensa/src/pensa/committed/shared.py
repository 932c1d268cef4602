"""One database for several checkouts of a repository: sgf's worktree loops.

`PN_SHARED_DB` names the database file of the main checkout, so claims stay atomic across
every loop. A loop's worktree still has its own `.pensa/*.jsonl`: they travel in its commits
and merge through the driver when the loop rebases. But they are an export of the shared
database made at some commit, not its sync partner. The merging sync (sync.py) is written for
one checkout per database, and would read them wrongly: a claim another loop has since given
back would look like a change and come back, and issues created after the worktree's branch
point would look dropped by a checkout and go. So with `PN_SHARED_DB` set:

- no command catches up from the files (`Env.store`);
- `pn export` writes the database out as it is: it neither merges the files in nor records
  them as the base of the main checkout's sync;
- `pn sync` does nothing and says why; `pn import` refuses (it would replace every loop's
  database with one branch's files).

The main checkout, whose files a loop fast-forwards to its merged exports, calls `adopt`
(`pn sync --adopt`) after the fast-forward: those files came from this very database, so they
become the sync base without being merged in (the same stale-claim trap otherwise).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.committed.sync import Counts
    from pensa.project import Project
    from pensa.store import Store

ENV = "PN_SHARED_DB"


def database(env: Mapping[str, str]) -> str | None:
    """The shared database file named by PN_SHARED_DB (absolute), or None."""
    value = env.get(ENV)
    return os.path.abspath(value) if value else None


def export(store: Store, project: Project) -> Counts:
    """Write the shared database out to `project`'s files as it is, in one transaction.

    Every shard is rendered (what the database changed since the last export is the main
    checkout's to know, `export_dirty`, and stays so), and only files that differ are
    written."""
    from pensa.committed import waiting, writeback
    from pensa.committed.disk import fingerprints, write_files
    from pensa.committed.snapshot import render_db
    from pensa.committed.sync import counts

    with store.write() as conn:
        current = fingerprints(project)
        texts = render_db(conn)
        texts.update({n: "" for n in current if n not in texts})
        # a comment or edge this checkout's files hold for an issue the database lacks waits
        # here, as in any export (committed.waiting)
        texts = waiting.keep_on_disk(conn, project, texts, current)
        write_files(project, texts, existing=current)
        writeback.mark(project, pending=False)
        return counts(conn)


def adopt(store: Store, project: Project) -> None:
    """Record `project`'s files as in sync with the database, without merging them in.

    Only for files that are exports of this database (a worktree loop's commits,
    fast-forwarded into the main checkout): whatever they hold, the database holds too, or
    something newer. Each file that changed is compared with the database, as after any
    sync: what the files now hold is no longer pending, and pensa's marker says what is."""
    from pensa.committed import base as sync_base
    from pensa.committed import writeback
    from pensa.committed.disk import changed, fingerprints, read_files
    from pensa.committed.pending import settle

    with store.write() as conn:
        prints = fingerprints(project)
        stored = dict(conn.execute("SELECT name, fingerprint FROM sync_base").fetchall())
        moved = changed(stored, prints)
        conn.executemany(
            "INSERT OR IGNORE INTO export_dirty (kind, key) VALUES ('file', ?)",
            [(name,) for name in moved],
        )
        files = read_files(project, prints)
        sync_base.replace(conn, files, prints)
        writeback.mark(project, pending=settle(conn, project, files))


def refuse_import(env: Mapping[str, str]) -> None:
    """Raise when PN_SHARED_DB is set: `pn import` would replace every loop's database."""
    if database(env):
        from pensa.errors import PensaError

        raise PensaError(
            f"pn import would replace the database shared by every loop ({ENV}) with this "
            "checkout's files; run it in the main checkout, with the loops stopped"
        )

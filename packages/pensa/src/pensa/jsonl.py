"""JSONL, the git-committed layer: deterministic export and an all-or-nothing import.

Export: one compact object per line, unset fields omitted, fixed key order, UTF-8 (no `\\u`
escapes), issues sorted by id (random ids spread concurrent additions over the file so git
merges rarely conflict), deps by (issue_id, depends_on_id), comments by (issue_id,
created_at, id). Re-exporting an unchanged database gives byte-identical files.

Import (`pn import`, the explicit rebuild, `pensa.rebuild`): every line is validated inside
one write transaction that then replaces the database's contents, so a bad line leaves the
database exactly as it was. The git hooks use the merging `pn sync` instead (`pensa.sync`).
Unknown fields survive both: they are kept per record in an `extra` column.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.snapshot import render_db

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.project import Project
    from pensa.store import Store

EVENT_FIELDS = ("issue_id", "event_type", "actor", "detail", "created_at")
Record = dict[str, Any]


def render(store: Store) -> dict[str, str]:
    """The committed files' exact contents from the database alone, keyed by file name."""
    with store.snapshot() as conn:  # one read transaction over all four tables
        return render_db(conn)


class Summary(NamedTuple):
    """How many records an export or import moved."""

    issues: int
    deps: int
    comments: int
    staged: bool = False
    events_kept: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the output contract."""
        out: dict[str, Any] = {"issues": self.issues, "deps": self.deps, "comments": self.comments}
        if self.events_kept is not None:
            out["events_kept"] = self.events_kept
        else:
            out["staged"] = self.staged
        return out


def export(store: Store, project: Project, env: Mapping[str, str] | None = None) -> Summary:
    """Merge in edits made to the files on disk, then write the files of `project`."""
    from pensa import sync

    return summary(sync.export(store, project, env))


def summary(texts: dict[str, str]) -> Summary:
    """How many records the written files hold."""
    issues, deps, comments = (
        texts[n].count("\n") for n in ("issues.jsonl", "deps.jsonl", "comments.jsonl")
    )
    return Summary(issues, deps, comments)


# --- import -----------------------------------------------------------------------------


def import_(
    project: Project, env: Mapping[str, str] | None = None, *, discard_local: bool = False
) -> Summary | None:
    """Rebuild `project`'s database from its JSONL files (`pensa.rebuild`); None when there
    is nothing to import. It refuses to drop what only the database holds unless
    `discard_local` (`pensa.localwork`)."""
    if not os.path.exists(project.issues_jsonl):
        return None
    from pensa import rebuild
    from pensa.committed import head_files

    project.ensure()
    rebuild.remove_leftovers(project)
    committed = head_files(project, env)
    done = rebuild.rebuild(project, committed=committed, discard_local=discard_local)
    return Summary(done.issues, done.deps, done.comments, events_kept=done.events_kept)

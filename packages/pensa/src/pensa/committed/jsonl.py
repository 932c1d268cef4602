"""`pn export` and `pn import` over the committed files, and what each reports.

`export` merges edits made to the files in (`committed.sync`) and writes out what the database
changed since the last export, as `committed.snapshot` renders it: deterministic,
byte-identical for an unchanged database.
`import_` hands the all-or-nothing rebuild to `committed.rebuild`, against what HEAD holds
(`committed.head`). The file format itself (key order, sorting, escaping) is
`committed.snapshot`'s; checking lines is `committed.records`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.committed.snapshot import render_db

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.project import Project
    from pensa.store import Store

EVENT_FIELDS = ("issue_id", "event_type", "actor", "detail", "created_at")
Record = dict[str, Any]


def render(store: Store) -> dict[str, str]:
    """The committed files' exact contents from the database alone, keyed by file name (every
    file that has records)."""
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
    from pensa.committed import sync

    return Summary(*sync.export(store, project, env))


# --- import -----------------------------------------------------------------------------


def import_(
    project: Project, env: Mapping[str, str] | None = None, *, discard_local: bool = False
) -> Summary | None:
    """Rebuild `project`'s database from its JSONL files (`committed.rebuild`); None when there
    is nothing to import. It refuses to drop what only the database holds unless
    `discard_local` (`pensa.committed.localwork`)."""
    from pensa.committed.disk import has_files

    if not has_files(project):
        return None
    from pensa.committed import rebuild
    from pensa.committed.head import head_tree

    project.ensure()
    rebuild.remove_leftovers(project)
    head = head_tree(project, env)
    committed = None if head is None or env is None else rebuild.Committed(head, env)
    done = rebuild.rebuild(project, committed=committed, discard_local=discard_local)
    return Summary(done.issues, done.deps, done.comments, events_kept=done.events_kept)

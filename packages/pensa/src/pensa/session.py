"""pensa's front door: one run of the tracker from a working directory and an environment.

`Session` is what the `pn` commands drive and what a Python caller uses: it finds the
project, opens (and catches up) the database, and owns the rules that choose between paths:
a worktree loop's shared database (`PN_SHARED_DB`), local or git claims (`PN_CLAIMS`), staging
in a commit hook, and the write-back after a change (`committed.writeback`). It prints nothing:
what a user should hear goes to `say` (the CLI sends it to stderr).

A write opens (creating) the project's database; a read never creates files: without a
database it sees an empty in-memory one, except in a fresh clone (JSONL, no database), whose
first use imports the files. Before working, the database merges in JSONL changed since the
last sync (a checkout whose hook did not run); a read that cannot write reads as it is.

    with Session(cwd=".", environ=os.environ) as pensa:
        issue = pensa.claim_next(spec="auth")
        pensa.write_back()
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, NamedTuple

from pensa import project as projects
from pensa.models import utcnow

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from pensa.beads import Summary as BeadsSummary
    from pensa.committed.apply import Synced
    from pensa.committed.jsonl import Summary
    from pensa.findings import Report
    from pensa.gitsetup import Step
    from pensa.graph import Graph
    from pensa.models import Issue, IssueType, Priority
    from pensa.project import Project
    from pensa.store import Store
    from pensa.tracker import Tracker


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
    first_use = False
    if not shared and not exists:
        from pensa.committed.disk import has_files

        first_use = has_files(found)
    return Choice(on_disk=write or first_use or exists, first_use=first_use, db=db)


def merge_changed_files(
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
        from pensa.shared.inert import inert

        return f"pn: warning: .pensa/*.jsonl not merged: {inert(str(e))}"
    if first_use:
        return f"pn: first use here: imported {done.added} issues from {found.dir}"
    return None


class Skipped(NamedTuple):
    """A sync that had nothing to merge, and why."""

    reason: str


def _quiet(_: str) -> None:
    """The default `say`: a library caller hears nothing."""


class Session:
    """The database opened on first use, and the rules around it, for one run."""

    def __init__(
        self,
        *,
        cwd: str,
        environ: Mapping[str, str],
        actor: str | None = None,
        now: Callable[[], datetime] = utcnow,
        say: Callable[[str], None] = _quiet,
    ) -> None:
        self.cwd = cwd
        self.environ = environ
        self.actor_flag = actor
        self.now = now
        self.say = say
        self._actor: Callable[[], str] | None = None
        self._resources = contextlib.ExitStack()
        self._written: tuple[Store, Project] | None = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database and anything else opened for this run."""
        self._resources.close()

    @property
    def actor(self) -> str:
        """Who is acting, resolved on first use (reads never pay for it)."""
        return self.expect_actor()()

    def expect_actor(self) -> Callable[[], str]:
        """Start finding the actor (once): a command that logs events calls this before it
        opens the database, so that `git config user.name` runs meanwhile
        (`projects.actor_lookup`). The run's end collects git if nothing asked after all."""
        if self._actor is None:
            self._actor = projects.actor_lookup(self.actor_flag, self.cwd, self.environ)
            self._resources.callback(self._actor)
        return self._actor

    def project(self, *, create: bool) -> Project | None:
        """The project in use; with `create`, where a first write would put it."""
        if create:
            return projects.locate_or_new(self.cwd, self.environ)
        return projects.locate(self.cwd, self.environ)

    def shared(self) -> bool:
        """Whether this run uses a database shared by worktree loops (`pensa.committed.shared`)."""
        from pensa.committed import shared

        return shared.database(self.environ) is not None

    def store(self, *, write: bool = False, catch_up: bool = True, tracked: bool = True) -> Store:
        """The project database, opened as `choose` says and caught up by
        `merge_changed_files`. A `write` store is `tracked` unless the command only brings the
        files in (`pn sync`): then `write_back` keeps the files current after the command."""
        from pensa.store import Store

        found = self.project(create=write)
        # A worktree loop's database is the main checkout's (committed.shared): never caught up.
        shared = self.environ.get("PN_SHARED_DB")
        choice = choose(found, write=write, shared=shared)
        if found is None or not choice.on_disk:
            return self._resources.enter_context(Store.open(None))
        found.ensure()
        store = self._resources.enter_context(Store.open(choice.db))
        if (
            catch_up
            and not shared
            and (
                said := merge_changed_files(
                    store, found, first_use=choice.first_use, write=write, env=self.environ
                )
            )
        ):
            self.say(said)
        if write and tracked:
            self._written = (store, found)
        return store

    def write_back(self) -> None:
        """After a command that changed the tracker: in a repository set up for pensa, the
        marker that lets `git add -A && git commit` find the change; the files and the index
        are left alone (`pensa.committed.writeback`)."""
        if self._written is None:
            return
        store, found = self._written
        if store.conn.total_changes == 0:
            return
        from pensa.committed import writeback
        from pensa.errors import PensaError

        try:
            writeback.write_back(store, found)
        except (PensaError, OSError) as e:  # the write itself is done: say why git may not see it
            from pensa.project import MARKER
            from pensa.shared.inert import inert

            self.say(inert(f"pn: warning: .pensa/{MARKER} not written: {e}"))

    def tracker(self, *, write: bool = False) -> Tracker:
        """The issue lifecycle over this run's store."""
        if write:
            self.expect_actor()
        from pensa.tracker import Tracker

        return Tracker(self.store(write=write), now=self.now)

    def graph(self, *, write: bool = False) -> Graph:
        """The dependency graph over this run's store."""
        if write:
            self.expect_actor()
        from pensa.graph import Graph

        return Graph(self.store(write=write), now=self.now)

    def claim_next(
        self,
        *,
        priority: Priority | None = None,
        issue_types: tuple[IssueType, ...] = (),
        spec: str | None = None,
        labels: tuple[str, ...] = (),
        stuck_after: int | None = None,
        require_verify: bool = False,
    ) -> Issue | None:
        """Claim the first ready issue for the actor, or None. PN_CLAIMS chooses how
        (`pensa.gitclaims`): here, published through the remote first (`git`), or the one
        the actor's loop already claimed for it (`held`)."""
        self.expect_actor()
        from pensa import claims, gitclaims

        types = issue_types or None
        asked = claims.Asked(self.actor, priority, types, spec, labels, require_verify)
        store = self.store(write=True)
        return gitclaims.claim(
            store, asked, env=self.environ, now=self.now, stuck_after=stuck_after,
            project=self.project,
        )  # fmt: skip

    def release(
        self,
        issue_id: str | None = None,
        *,
        held_by: str | None = None,
        reason: str | None = None,
        cut_short_since: datetime | None = None,
    ) -> list[Issue]:
        """Give back the issue, or every issue `held_by` holds (a loop that ended). With
        PN_CLAIMS=git the claims ref then learns this clone's releases and closes
        (`gitclaims.publish`); out of reach, it is said, and the next claim publishes them."""
        tracker = self.tracker(write=True)
        if held_by is None:
            assert issue_id is not None
            released = [tracker.release(issue_id, actor=self.actor)]
        else:
            released = tracker.release_held(
                held_by, actor=self.actor, reason=reason, cut_short_since=cut_short_since
            )
        from pensa import gitclaims

        if gitclaims.enabled(self.environ) and (project := self.project(create=True)):
            store = self.store(write=True)
            said = gitclaims.publish(
                store, project, actor=self.actor, env=self.environ, now=self.now,
                release=[issue_id] if issue_id else [],
            )  # fmt: skip
            if said:  # released here all the same; the next claim publishes it
                self.say(said)
        return released

    def export(self, *, stage: bool = False) -> Summary | None:
        """Write `.pensa/*.jsonl` from the database (None without a project), staged when
        asked or when run as a commit hook. A worktree loop writes its shared database out as
        it is; otherwise edits made to the files are merged in first, and only what the
        database changed since the last export is written."""
        from pensa import git
        from pensa.committed import jsonl, shared, writeback

        found = self.project(create=False)
        if found is None:
            return None
        marked = os.path.lexists(writeback.marker(found))
        if self.shared():
            summary = jsonl.Summary(*shared.export(self.store(catch_up=False), found))
        else:
            summary = jsonl.export(self.store(catch_up=False), found, self.environ)
        if stage or git.in_commit_hook(self.environ):
            # From where pn runs (a hook's cwd is the work tree's top): in a linked worktree
            # git hands its hooks GIT_DIR, and with GIT_DIR set git takes the cwd for the top,
            # so from `.pensa/` the files would be staged as `issues.jsonl` at the root.
            writeback.stage(found, cwd=self.cwd, env=self.environ, unmark=marked)
            summary = summary._replace(staged=True)
        return summary

    def sync(self, *, adopt: bool = False) -> Synced | Skipped:
        """Merge `.pensa/*.jsonl` into the database (the git hooks), or say why not: no
        project, a shared database, or `adopt` (the files are this database's own exports and
        become the sync base unmerged)."""
        from pensa.committed import shared
        from pensa.committed import sync as syncing

        found = self.project(create=False)
        if found is None or not found.exists():
            return Skipped("nothing to sync")
        if self.shared():
            return Skipped(f"nothing to sync: the database is shared ({shared.ENV})")
        store = self.store(write=True, catch_up=False, tracked=False)
        if adopt:
            shared.adopt(store, found)
            return Skipped("adopted: the files are the sync base now")
        return syncing.sync(store, found, self.environ)

    def import_(self, *, discard_local: bool = False) -> Summary | None:
        """Rebuild the database from the JSONL files, all or nothing; None without them.
        Refused under a shared database: it would replace every loop's database."""
        from pensa.committed import jsonl
        from pensa.committed.shared import refuse_import

        found = self.project(create=False)
        refuse_import(self.environ)
        if found is None:
            return None
        if os.path.exists(found.issues_jsonl):
            self._set_aside_if_damaged(found)
        return jsonl.import_(found, self.environ, discard_local=discard_local)

    def _set_aside_if_damaged(self, found: Project) -> None:
        """Move a database SQLite cannot read out of the way of a rebuild, kept as
        `pn doctor --fix` keeps it: a rebuild would replace the only copy of whatever it held
        that was never exported (and cannot replace a directory at all)."""
        from pensa import aside
        from pensa.errors import DamagedDatabase, StorageError
        from pensa.store import Store

        if not os.path.lexists(found.db):
            return
        try:
            Store.open(found.db).close()
        except DamagedDatabase:
            kept = aside.move(found, self.now())
            self.say(f"pn: the damaged database is kept as {kept}")
        except StorageError:  # (a foreign schema: the rebuild replaces that beside it)
            pass

    def import_beads(self, path: str) -> BeadsSummary:
        """Add the issues of a beads export to this tracker (all or nothing)."""
        from pensa.beads_import import import_beads

        return import_beads(self.store(write=True), path, actor=self.actor, now=self.now)

    def init(self) -> list[Step]:
        """Set the git repository around the working directory up for pensa (idempotent)."""
        from pensa import gitsetup

        return gitsetup.init(self.cwd, self.environ)

    def doctor(self, *, fix: bool = False, full: bool = False) -> Report:
        """Every health check; with `fix`, the safe repairs. A database pensa refused to open
        (a foreign schema) or that SQLite cannot read (damaged, whenever that shows) is
        reported, and with `fix` rebuilt from the committed JSONL beside a copy of it."""
        from pensa import doctor as checks
        from pensa.errors import DamagedDatabase, ForeignSchema

        found = self.project(create=False)
        now = self.now()
        try:
            store = self.store(write=fix and found is not None)
            return checks.run(
                store,
                found,
                now=now,
                fix=fix,
                actor=self.actor if fix else "",
                setup=checks.git_setup(self.cwd, self.environ),
                full=full,
                env=self.environ,
            )
        except ForeignSchema as e:
            return checks.foreign_schema(found, e, fix=fix, now=now, env=self.environ)
        except DamagedDatabase as e:
            # (a file cut short may open and fail only once a query reaches a missing page)
            self._written = None  # nothing of it to write back
            self.close()  # no connection of this run stays on the file that moves aside
            return checks.damaged(found, e, fix=fix, now=now, env=self.environ)

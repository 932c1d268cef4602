"""Health checks: claims (stale ones as problems), orphaned deps and comments, dangling
`fixes`, cycles, database/JSONL drift and SQLite integrity; `fix=True` repairs what is safe to
repair. Every finding is one line that ends with what to do about it."""

from __future__ import annotations

import importlib
import os
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa import aside, blocked, integrity
from pensa.committed.drift import drift
from pensa.cycles import cycles_among, drawn
from pensa.findings import Finding, Report
from pensa.links import WAITS_FOR
from pensa.models import parse_timestamp, timestamp
from pensa.store import log_event, translate

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from pensa.errors import DamagedDatabase, ForeignSchema
    from pensa.project import Project
    from pensa.store import Store

# A claim is stale when its *latest claim* is this old, not merely its last update.
STALE_AFTER = timedelta(minutes=30)

# Issues whose `fixes` names no bug. `likelihood` (a no-op) tells the planner that few
# issues have `fixes`, so it reads them from issues_fixes instead of scanning the table.
DANGLING_FIXES = (
    "issues WHERE likelihood(fixes IS NOT NULL, 0.001) AND fixes NOT IN "
    "(SELECT id FROM issues WHERE issue_type = 'bug')"
)


class Claim(NamedTuple):
    """An in-progress issue, who holds it and when it was last claimed."""

    issue_id: str
    assignee: str | None
    claimed_at: str

    def age(self, now: datetime) -> timedelta:
        """How long ago the latest claim was made."""
        return now - parse_timestamp(self.claimed_at)

    def is_stale(self, now: datetime) -> bool:
        """Whether the latest claim is over `STALE_AFTER` old."""
        return self.age(now) > STALE_AFTER

    def finding(self, now: datetime) -> Finding:
        """`stale_claim` once stale, else the informational `claim`."""
        age = self.age(now)  # once: doctor makes one finding per claim, 5k at 100k issues
        minutes = max(0, int(age.total_seconds() // 60))
        holder = f"claimed by {self.assignee}" if self.assignee else "with no assignee, claimed"
        message = f"{self.issue_id} is in progress, {holder} {minutes} min ago ({self.claimed_at})"
        if age <= STALE_AFTER:
            return Finding(
                "claim",
                f"{message}; if it was abandoned, `pn release {self.issue_id}` hands it back",
                self.issue_id,
            )
        limit = int(STALE_AFTER.total_seconds() // 60)
        return Finding(
            "stale_claim",
            f"{message}: stale after {limit} min, `pn doctor --fix` releases it",
            self.issue_id,
        )


def where(store: Store, table: str, clause: str, args: Sequence[Any] = (), *, select: str,
          order_by: str) -> list[dict[str, Any]]:  # fmt: skip
    """Rows of `table` through sqlite-utils, for doctor's reads, where its start-up does not
    matter: over pensa's own connection, with no plugin run on it and recursive triggers off
    (as pensa's own triggers expect); a SQLite error is pensa's error, as `Store.rows`'s is."""
    import sqlite3

    from sqlite_utils import Database

    db = Database(store.conn, recursive_triggers=False, execute_plugins=False)
    try:
        return list(db[table].rows_where(clause, list(args), select=select, order_by=order_by))
    except sqlite3.Error as e:
        raise translate(e, path=store.path) from e


def claims(store: Store) -> list[Claim]:
    """Every in-progress issue, in creation order, with the time of its latest claim.

    An issue put in progress without a claim event (`update --status in_progress`) counts from
    its last update.
    """
    rows = where(
        store,
        "issues",
        "status = 'in_progress'",
        select="id, assignee, coalesce((SELECT max(e.created_at) FROM events e "
        "WHERE e.issue_id = issues.id AND e.event_type = 'claimed'), updated_at) AS claimed_at",
        order_by="seq",
    )
    return [Claim(r["id"], r["assignee"], r["claimed_at"]) for r in rows]


def stale_claims(store: Store, now: datetime) -> list[Claim]:
    """The claims whose latest claim is over `STALE_AFTER` old: what `--fix` releases."""
    return [c for c in claims(store) if c.is_stale(now)]


def idle_assignees(
    store: Store, now: datetime, held: Sequence[Claim] | None = None
) -> list[tuple[str, str]]:
    """Open issues (id, assignee) whose assignee holds no live claim, in creation order;
    `held`: the `claims`, when read already (each read walks every claim's events).

    A live claim is an issue in progress under that actor whose latest claim is not stale:
    all pensa knows of an actor still at work. Such an issue is skipped by every other
    actor's `claim-next` and left out of `pn ready`, so it would wait forever. Stuck tasks
    handed to `human` are meant to wait."""
    from pensa.shared.assignee import HUMAN

    held = claims(store) if held is None else held
    live = {c.assignee for c in held if c.assignee and not c.is_stale(now)}
    rows = where(
        store,
        "issues",
        "status = 'open' AND assignee IS NOT NULL AND assignee != ?",
        [HUMAN],
        select="id, assignee",
        order_by="seq",
    )
    return [(r["id"], r["assignee"]) for r in rows if r["assignee"] not in live]


def orphaned_deps(store: Store) -> list[tuple[str, str]]:
    """The dependencies naming an issue that does not exist, by child then parent.

    One query per end, each reading deps in the order of the ids it looks up (the table by
    child, deps_parent by parent), so that the lookups walk the id index in order rather
    than all over it."""
    children = store.rows(
        "SELECT issue_id, depends_on_id FROM deps "
        "WHERE issue_id NOT IN (SELECT id FROM issues) ORDER BY issue_id"
    )
    parents = store.rows(
        "SELECT issue_id, depends_on_id FROM deps "
        "WHERE depends_on_id NOT IN (SELECT id FROM issues) ORDER BY depends_on_id"
    )
    return sorted({(str(c), str(p)) for c, p in (*children, *parents)})


def diagnose(
    store: Store, project: Project | None, *, now: datetime, full: bool = False
) -> list[Finding]:
    """Every check, read-only; each in-progress issue gives one `claim` or `stale_claim`.

    SQLite's `quick_check` runs by default (`pensa.integrity`); `full` runs the complete,
    slower `integrity_check`, which also checks that every index matches
    its table."""
    # SQLite's check reads the whole file and lets go of the GIL meanwhile: sqlite-utils
    # (for `where`, next) is imported on a second thread in that time.
    loading = threading.Thread(
        target=importlib.import_module, args=("sqlite_utils",), name="pensa-doctor-import"
    )
    loading.start()
    try:
        if full:
            verdict = [str(r[0]) for r in store.rows("PRAGMA integrity_check")]
        else:
            verdict = integrity.quick_check(store)
    finally:
        loading.join()
    held = claims(store)
    found = [c.finding(now) for c in held]
    for issue_id, who in idle_assignees(store, now, held):
        found.append(
            Finding(
                "idle_assignee",
                f"{issue_id} is open but assigned to {who}, who holds no live claim: no one "
                f"else can claim it; `pn doctor --fix` clears the assignee",
                issue_id,
            )
        )
    for child, parent in orphaned_deps(store):
        found.append(
            Finding(
                "orphaned_dep",
                f"{child} -> {parent} names a missing issue: `pn doctor --fix` removes it",
                child,
            )
        )
    for issue_id, fixes in store.rows(f"SELECT id, fixes FROM {DANGLING_FIXES} ORDER BY seq"):
        found.append(
            Finding(
                "dangling_fixes",
                f"{issue_id} fixes {fixes}, which is not a bug: `pn doctor --fix` clears it "
                f"(or `pn update {issue_id} --fixes BUG`)",
                issue_id,
            )
        )
    orphans = where(
        store, "comments", "issue_id NOT IN (SELECT id FROM issues)", select="id, issue_id",
        order_by="seq",
    )  # fmt: skip
    for comment_id, issue_id in ((r["id"], r["issue_id"]) for r in orphans):
        found.append(
            Finding(
                "orphaned_comment",
                f"comment {comment_id} is on missing {issue_id}: `pn doctor --fix` removes it",
                issue_id,
            )
        )
    stale = int(store.rows(blocked.STALE)[0][0])
    if stale:
        found.append(
            Finding(
                "blocked_flag",
                f"{stale} issues are marked blocked, or not, against their dependencies (what "
                "`pn ready` reads): `pn doctor --fix` sets the flags again",
            )
        )
    cycles = cycles_among(store.rows(WAITS_FOR))
    deps = set(store.rows("SELECT issue_id, depends_on_id FROM deps")) if cycles else set()
    for cycle in cycles:
        a, b = cycle[0], cycle[1 % len(cycle)]
        if (a, b) in deps:
            fix = f"`pn dep remove {a} {b}` breaks it"
        else:  # a waits for its child b
            fix = f'`pn update {b} --parent ""` breaks it'
        found.append(Finding("dep_cycle", f"dependency cycle {drawn(cycle)}: {fix}", cycle[0]))
    found.extend(Finding("jsonl_drift", message) for message in drift(store, project))
    if verdict != ["ok"]:
        # (SQLite's messages may hold line breaks: a finding is one line)
        detail = "; ".join(" ".join(v.split()) for v in verdict[:5])
        found.append(
            Finding(
                "integrity",
                f"SQLite integrity check failed ({detail}): `pn doctor --fix` rebuilds the "
                "database from the committed JSONL and keeps the damaged one beside it",
            )
        )
    return found


def git_setup(cwd: str, env: Mapping[str, str]) -> list[Finding]:
    """A finding when the git repository around `cwd` is not set up by `pn init`."""
    from pensa import git, gitsetup

    top = git.toplevel(cwd, env)
    if top is None:
        return []
    # Only a repository that shares its tracker through git (a clone) needs the hooks;
    # a project that has never committed .pensa/ is not nagged.
    tracked = git.run(["ls-files", "--", ".pensa/issues.jsonl"], cwd=top, env=env)
    if not tracked.out.strip():
        return []
    missing = gitsetup.missing_setup(top, env)
    if not missing:
        return []
    return [Finding("git_setup", f"missing {', '.join(missing)}: run `pn init` (once per clone)")]


def run(
    store: Store,
    project: Project | None,
    *,
    now: datetime,
    fix: bool,
    actor: str,
    setup: list[Finding] | None = None,
    full: bool = False,
    env: Mapping[str, str] | None = None,
) -> Report:
    """Diagnose; with `fix`, repair stale claims, orphaned deps and comments, and dangling
    `fixes`, or rebuild a database that fails SQLite's integrity check (`pensa.aside`).

    `setup` holds the findings of `git_setup`, which needs the caller's directory."""
    extra = setup or []
    if not fix:
        return Report([*diagnose(store, project, now=now, full=full), *extra], [])
    before = [*diagnose(store, project, now=now, full=full), *extra]
    if (
        project is not None
        and store.path == project.db
        and any(f.check == "integrity" for f in before)
    ):
        # Nothing in a corrupt file is worth repairing in place: rebuild from the files.
        rebuilt = aside.rebuild(project, now=now, env=env)
        return Report(before, [Finding("integrity", rebuilt)])
    fixes: list[Finding] = []
    stamp = timestamp(now)
    with store.write() as conn:
        for issue_id, _, _ in stale_claims(store, now):
            conn.execute(
                "UPDATE issues SET status = 'open', assignee = NULL, updated_at = ? WHERE id = ?",
                (stamp, issue_id),
            )
            log_event(conn, issue_id, "released", actor=actor, detail="stale claim", at=stamp)
            fixes.append(Finding("stale_claim", f"released {issue_id}", issue_id))
        for issue_id, who in idle_assignees(store, now):
            conn.execute(
                "UPDATE issues SET assignee = NULL, updated_at = ? WHERE id = ?", (stamp, issue_id)
            )
            detail = f"assignee: {who} -> (none) (no live claim)"
            log_event(conn, issue_id, "updated", actor=actor, detail=detail, at=stamp)
            fixes.append(Finding("idle_assignee", f"cleared the assignee of {issue_id}", issue_id))
        gone = conn.execute(
            "DELETE FROM deps WHERE issue_id NOT IN (SELECT id FROM issues) "
            "OR depends_on_id NOT IN (SELECT id FROM issues)"
        ).rowcount
        if gone:
            fixes.append(Finding("orphaned_dep", f"removed {gone} orphaned dependencies"))
        gone = conn.execute(
            "DELETE FROM comments WHERE issue_id NOT IN (SELECT id FROM issues)"
        ).rowcount
        if gone:
            fixes.append(Finding("orphaned_comment", f"removed {gone} orphaned comments"))
        gone = conn.execute(blocked.REPAIR).rowcount
        if gone:
            fixes.append(Finding("blocked_flag", f"set {gone} blocked flags again"))
        for (issue_id,) in conn.execute(f"SELECT id FROM {DANGLING_FIXES} ORDER BY seq").fetchall():
            conn.execute("UPDATE issues SET fixes = NULL WHERE id = ?", (issue_id,))
            log_event(conn, issue_id, "updated", actor=actor, detail="fixes: cleared", at=stamp)
            fixes.append(Finding("dangling_fixes", f"cleared fixes of {issue_id}", issue_id))
    return Report(before, fixes)


def foreign_schema(
    project: Project | None,
    error: ForeignSchema,
    *,
    fix: bool,
    now: datetime,
    env: Mapping[str, str] | None = None,
) -> Report:
    """What doctor says of a database it refused to open (`pensa.foreign`): one finding per
    foreign object; with `fix`, the project's database rebuilt from the committed JSONL
    (`pensa.aside`: nothing of the old file is trusted, and it is kept as evidence)."""
    findings = [
        Finding(
            "foreign_schema",
            f"{what} in {error.path} is not pensa's (it may have been tampered with): "
            "`pn doctor --fix` rebuilds the database from the committed JSONL",
        )
        for what in error.found
    ]
    return _fixed(project, error.path, findings, "foreign_schema", fix=fix, now=now, env=env)


def damaged(
    project: Project | None,
    error: DamagedDatabase,
    *,
    fix: bool,
    now: datetime,
    env: Mapping[str, str] | None = None,
) -> Report:
    """What doctor says of a database SQLite cannot read (garbage, a truncated file, a
    directory): one finding; with `fix`, the database rebuilt by `pensa.aside`."""
    finding = Finding(
        "damaged_database",
        f"{error.path} is damaged ({error.why}): `pn doctor --fix` rebuilds it from the "
        "committed JSONL and keeps the damaged one beside it",
    )
    return _fixed(project, error.path, [finding], "damaged_database", fix=fix, now=now, env=env)


def _fixed(
    project: Project | None,
    path: str,
    findings: list[Finding],
    check: str,
    *,
    fix: bool,
    now: datetime,
    env: Mapping[str, str] | None,
) -> Report:
    """`findings` of a database doctor cannot check, and with `fix` its rebuild. A worktree
    loop's shared database (`PN_SHARED_DB`) is the main checkout's: rebuilt only there."""
    if project is not None and path != project.db:
        where = os.path.dirname(os.path.dirname(path))
        shared = Finding(
            check,
            f"{path} is the database this worktree shares: run `pn doctor --fix` in {where}",
        )
        return Report([*findings, shared], [])
    if not fix or project is None:
        return Report(findings, [])
    return Report(findings, [Finding(check, aside.rebuild(project, now=now, env=env))])

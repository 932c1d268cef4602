"""Claims published through git: loops on many machines, one backlog.

`PN_CLAIMS` says how `pn claim-next` claims:

- unset (or `local`): in this database only, atomic between the loops that share it;
- `git`: published first on the remote's claims ref (`pensa.gitremote`), which the code
  branch never carries. ralph sets it for its own `pn claim-next` on the host, before each
  iteration, when sgf runs the loop with `claims = "git"`;
- `held`: the agent's `pn` in that loop's sandbox. Its loop claimed for it, so claim-next
  answers with the task the actor holds and never claims one itself: the sandbox needs
  neither the remote nor credentials for it, and cannot publish a claim past the host.

A `git` claim, under this clone's claim lock (its loops publish one at a time):

1. fetch the claims ref, once (`Board`): that tip is what the claim is decided on;
2. read it against the database: the ids others hold or closed there are skipped
   (`blocked`; the board's word never enters the database), and what this clone knows newer
   than the board (a close, a release: `news`) is published with the claim;
3. choose in the database (`claims.pick`, the actor's held task first: one claim per agent),
   commit the board's tree with that entry and what `news` found as a child of the tip, and
   push it without force: the remote takes it only while the ref still points at the tip;
4. taken, the database records the claim (`claims.take`); rejected (someone published
   first), nothing was written here: fetch the ref again and decide again, at most
   PN_CLAIM_TRIES times, waiting a random part of PN_CLAIM_BACKOFF seconds doubled each
   round (capped at MAX_WAIT).

No step touches the code branch, the checkout or its index, and no hook runs. The close
travels with the code (the issue's shard in the work's commit) and reaches the board with the
actor's next claim or its loop's end (`publish`, run by `pn release` with PN_CLAIMS=git), so
from the close on no machine hands the task out again, even while the code's push waits.
Guarantees and their limits are in docs/running-many-loops.md.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from pensa import gitremote
from pensa.errors import GitFailed, PensaError
from pensa.gitremote import Board, Entry

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Collection, Iterator, Mapping
    from datetime import datetime

    from pensa.claims import Asked
    from pensa.models import Issue
    from pensa.project import Project
    from pensa.store import Store

ENV = "PN_CLAIMS"
MODES = ("local", "git", "held")
# Five clones with a claimer each, or three with sixteen, lose a race now and then several
# times in a row: enough tries that none runs out (bench/bench_git_claims.py). Each wait is
# drawn from 0 to a bound doubled every round, from BACKOFF up to MAX_WAIT: claimers that lost
# together must not try again together, a round being as long as a fetch and a push.
TRIES = 40
BACKOFF = 0.1
MAX_WAIT = 1.6
# Events by which this clone gave a claim up after it was made: a claim the board still shows
# is released on it when one of these is newer.
_FREED = ("released", "returned", "interrupted", "stuck", "reopened")
_FREED_SQL = (
    "SELECT issue_id, max(created_at) FROM events WHERE event_type IN "  # noqa: S608 - constants
    f"({', '.join(repr(name) for name in _FREED)}) "
    "AND issue_id IN (SELECT value FROM json_each(?)) GROUP BY issue_id"
)


def mode(env: Mapping[str, str]) -> str:
    """How claim-next claims (PN_CLAIMS): `local`, `git` or `held`; a clear error otherwise."""
    value = env.get(ENV) or "local"
    if value not in MODES:
        raise PensaError(f"{ENV} must be one of {', '.join(MODES)}; it is {value!r}")
    return value


def enabled(env: Mapping[str, str]) -> bool:
    """Whether claims are published through git (PN_CLAIMS=git)."""
    return env.get(ENV) == "git"


def claim(
    store: Store,
    asked: Asked,
    *,
    env: Mapping[str, str],
    now: Callable[[], datetime],
    stuck_after: int | None,
    project: Callable[..., Project | None],
) -> Issue | None:
    """`pn claim-next` the way PN_CLAIMS says (`mode`); `project(create=True)`: where a first
    write puts the project (git claims need its checkout)."""
    from pensa import claims

    how = mode(env)
    if how == "held":
        return claims.held(store, asked)
    found = project(create=True) if how == "git" else None
    if found is None:
        return claims.claim_next(
            store,
            actor=asked.actor,
            now=now,
            priority=asked.priority,
            issue_type=asked.issue_type,
            spec=asked.spec,
            stuck_after=stuck_after,
            labels=asked.labels,
            require_verify=asked.require_verify,
        )
    return claim_next(store, found, asked, env=env, now=now, stuck_after=stuck_after)


def claim_next(
    store: Store,
    project: Project,
    asked: Asked,
    *,
    env: Mapping[str, str],
    now: Callable[[], datetime],
    stuck_after: int | None = None,
    sleep: Callable[[float], None] | None = None,
) -> Issue | None:
    """Claim an issue the board leaves free for `asked.actor`, published on the tip it was
    decided on; None when nothing is ready."""
    from pensa import claims

    def pick(skip: Collection[str]) -> Issue | None:
        return claims.pick(
            store, asked, now=now, stuck_after=stuck_after, skip=skip, keep_held=True
        )

    def take(issue_id: str, at: str) -> Issue | None:
        return claims.take(store, issue_id, actor=asked.actor, at=at)

    return _run(store, project, asked.actor, env, now, pick=pick, take=take, sleep=sleep)


def publish(
    store: Store,
    project: Project,
    *,
    actor: str,
    env: Mapping[str, str],
    now: Callable[[], datetime],
    release: Collection[str] = (),
    sleep: Callable[[float], None] | None = None,
) -> str | None:
    """Publish what this clone knows newer than the board (closes, releases), claiming
    nothing: `pn release` with PN_CLAIMS=git, a loop's end. The board's claims of `release`
    are released whoever holds them (`pn release ID`: a machine that died holding it). A
    warning line when it could not (the next claim or release publishes it), else None."""
    from pensa.shared.inert import inert

    try:
        _run(store, project, actor, env, now, pick=None, take=None, release=release, sleep=sleep)
    except PensaError as e:
        return inert(f"pn: warning: not published to the claims ref: {e}")
    return None


def _run(
    store: Store,
    project: Project,
    actor: str,
    env: Mapping[str, str],
    now: Callable[[], datetime],
    *,
    pick: Callable[[Collection[str]], Issue | None] | None,
    take: Callable[[str, str], Issue | None] | None,
    sleep: Callable[[float], None] | None,
    release: Collection[str] = (),
) -> Issue | None:
    import time

    from pensa.models import timestamp

    if env.get("PN_SHARED_DB"):
        raise PensaError(
            f"{ENV}=git publishes claims from the checkout whose database it is; a loop's "
            f"agent on a shared database (PN_SHARED_DB) has its loop claim for it: {ENV}=held"
        )
    tries = int(_number(env, "PN_CLAIM_TRIES", TRIES, minimum=1))
    wait = _number(env, "PN_CLAIM_BACKOFF", BACKOFF, minimum=0)
    pause = sleep or time.sleep
    chosen: Issue | None = None
    remote = gitremote.locate(project.dir, env)
    with _locked(remote.common):
        for attempt in range(tries):
            board = gitremote.fetch(remote, env)
            with store.snapshot() as conn:
                skip = blocked(conn, board, actor)
            chosen = pick(skip) if pick is not None else None
            with store.snapshot() as conn:  # after the pick: a task it handed to a human too
                changes = news(conn, board)
            for issue_id in release:
                if (held := board.entries.get(issue_id)) and held.state == "claimed":
                    changes[issue_id] = Entry("released", held.actor, timestamp(now()))
            at = timestamp(now())
            if chosen is not None:
                changes[chosen.id] = Entry("claimed", actor, at)
            if not changes:
                return None
            try:
                message = _message(changes, actor)
                published = gitremote.publish(remote, board, changes, message, env, committer=actor)
            except GitFailed as e:  # no race: the remote refused, or is out of reach
                what = f"the claim of {chosen.id}" if chosen is not None else "closes and releases"
                raise GitFailed(
                    f"cannot publish {what} to {remote.name} {gitremote.REF}: {e}"
                ) from e
            if published:
                if chosen is None or take is None:
                    return None
                taken = take(chosen.id, at)
                if taken is not None:
                    return taken
                continue  # closed here meanwhile: the next round publishes that and goes on
            pause(min(wait * 2**attempt, MAX_WAIT) * _jitter())
    what = f"the claim of {chosen.id}" if chosen is not None else "closes and releases"
    raise PensaError(
        f"could not publish {what} in {tries} tries: other machines kept publishing to "
        f"{remote.name} {gitremote.REF} first; try again"
    )


def blocked(conn: sqlite3.Connection, board: Board, actor: str) -> set[str]:
    """The ids no one may claim here: another actor's claim on the board that this clone has
    not given up since (`_FREED`), and a close it has not reopened since.

    The board's word never enters the database: an issue another machine holds stays as this
    clone knows it (its claim and close come with the code), so the work's commits carry
    only the loop's own changes, and pushes rarely have pensa's files to merge."""
    skip: set[str] = set()
    for issue_id, entry, (status, assignee, _), after in _known(conn, board):
        holds = status == "in_progress" and assignee == entry.actor
        reopened = entry.state == "closed" and status != "closed" and after > entry.at
        freed = entry.state == "claimed" and after > entry.at and not holds
        theirs = entry.state == "claimed" and entry.actor != actor
        if (entry.state == "closed" and not reopened) or (theirs and not freed):
            skip.add(issue_id)
    return skip


def news(conn: sqlite3.Connection, board: Board) -> dict[str, Entry]:
    """What this clone knows newer than the board: the entries to publish.

    Ordered by time stamps, as the merge of the committed files orders edits: a close here
    after the claim closes it on the board; a release here (of any kind, `_FREED`: `pn
    release`, `pn doctor --fix`, a task handed to a human as stuck) after it releases it; a
    reopen here after a close frees it again."""
    changes: dict[str, Entry] = {}
    for issue_id, entry, (status, assignee, updated), after in _known(conn, board):
        holds = status == "in_progress" and assignee == entry.actor
        if entry.state == "closed":
            if status != "closed" and after > entry.at:
                changes[issue_id] = Entry("released", entry.actor, after)
        elif status == "closed" and updated >= entry.at:
            changes[issue_id] = Entry("closed", entry.actor, updated)
        elif entry.state == "claimed" and after > entry.at and not holds:
            changes[issue_id] = Entry("released", entry.actor, after)
    return changes


def _known(
    conn: sqlite3.Connection, board: Board
) -> Iterator[tuple[str, Entry, tuple[str, str | None, str], str]]:
    """The board's entries of issues this database holds: id, entry, (status, assignee,
    updated_at) and the time this clone last gave a claim of it up ("" if never)."""
    import json

    if not board.entries:
        return
    ids = json.dumps(sorted(board.entries))
    rows = {
        row[0]: (str(row[1]), row[2], str(row[3]))
        for row in conn.execute(
            "SELECT id, status, assignee, updated_at FROM issues "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (ids,),
        )
    }
    freed = dict(conn.execute(_FREED_SQL, (ids,)).fetchall())
    for issue_id, entry in board.entries.items():
        if issue_id in rows:  # else not here (yet): nothing to claim or to say
            yield issue_id, entry, rows[issue_id], str(freed.get(issue_id) or "")


def _message(changes: Mapping[str, Entry], actor: str) -> str:
    """`pn: claim ID by ACTOR` (or what else changed), then one line per entry."""
    verbs = {"claimed": "claim", "released": "release", "closed": "close"}
    claimed = [i for i, e in changes.items() if e.state == "claimed" and e.actor == actor]
    if claimed:
        subject = f"pn: claim {claimed[0]} by {actor}"
    else:
        subject = "pn: " + ", ".join(f"{verbs[e.state]} {i}" for i, e in sorted(changes.items()))
    body = "\n".join(f"{e.state} {i} ({e.actor}, {e.at})" for i, e in sorted(changes.items()))
    return f"{subject}\n\n{body}\n"


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    """A number from the environment, or `default` when unset; a clear error when bad."""
    text = env.get(name)
    if not text:
        return default
    try:
        value = int(text) if isinstance(default, int) else float(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise PensaError(f"{name} must be a number, at least {minimum:g}; it is {text!r}")
    return value


def _jitter() -> float:
    import random

    return random.random()  # noqa: S311 - spreading retries, not a secret


@contextlib.contextmanager
def _locked(common: str) -> Iterator[None]:
    """This clone's claimers publish one at a time: racing each other through the remote
    would only add rejected rounds."""
    import fcntl

    from pensa.safefile import open_lock

    # never through a link, FIFO or device planted at the git directory's top
    fd = open_lock(os.path.join(common, "pensa-claims.lock"))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)

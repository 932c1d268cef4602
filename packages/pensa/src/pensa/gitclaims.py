"""Claims published through git: loops on many machines, one backlog.

With `PN_CLAIMS=git` (sgf sets it for `claims = "git"`), `pn claim-next` publishes every
claim before the agent starts, as a compare-and-swap on the branch's upstream:

1. fetch the remote branch, once: its tip T is what the claim is decided on;
2. claim in the database (atomic between this clone's loops) and check the issue against
   T's own copy of it (its shard of `issues-*.jsonl`): held by someone else or closed there,
   take T's record as it is and claim the next ready issue, against the same T;
3. commit T's files with that one record changed, as a child of T (the working tree plays
   no part), and push it without force.

The push only lands while the remote still points at T, so the remote holds exactly what
was decided. Rejected means someone published first: fetch again and decide again against
the new tip, at most PN_CLAIM_TRIES times, waiting PN_CLAIM_BACKOFF seconds doubled (capped
at MAX_WAIT), jittered. Once published, the branch catches up with that commit (a
fast-forward, or a rebase of local commits) and the files are merged into the database.
With nothing ready, the branch catches up with T first, so issues published elsewhere count
before the answer is "nothing to claim".

An earlier version checked the remote with one fetch and pulled with a second: a claim
published in between was overwritten by the later `updated_at`, the merge's rule for
everything else, and two machines did the same task (bench/bench_git_claims.py counts
double claims). Closes travel with the work's commit (ralph's auto-push). Guarantees and
their limits are in docs/running-many-loops.md.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from pensa import git, gitremote
from pensa.errors import GitFailed, PensaError
from pensa.gitremote import Tip, Upstream, checkout, upstream

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from pensa.committed.records import Record
    from pensa.models import Issue
    from pensa.project import Project
    from pensa.store import Store

ENV = "PN_CLAIMS"
# Three clones with sixteen claimers each lose a race now and then several times in a row:
# enough tries that none runs out (bench/bench_git_claims.py), each round short.
TRIES = 40
BACKOFF = 0.05
MAX_WAIT = 1.0
# A non-fast-forward found before sending (the first three), or a ref that moved while the
# remote was taking the push (the others): both mean another claim landed first.
_REJECTED = (
    "rejected",
    "fetch first",
    "non-fast-forward",
    "cannot lock ref",
    "failed to update ref",
    "failed to lock",
)
_CLAIM_FIELDS = ("status", "assignee")


def enabled(env: Mapping[str, str]) -> bool:
    """Whether claims are published through git (PN_CLAIMS=git)."""
    return env.get(ENV) == "git"


def claim_next(
    store: Store,
    project: Project,
    *,
    actor: str,
    env: Mapping[str, str],
    claim: Callable[[], Issue | None],
    sleep: Callable[[float], None] | None = None,
) -> Issue | None:
    """`claim()` an issue the remote leaves free and publish it on the tip it was decided on."""
    import time

    if env.get("PN_SHARED_DB"):
        raise PensaError(
            f"{ENV}=git publishes this clone's claims; loops sharing another checkout's "
            "database (PN_SHARED_DB, sgf's worktree loops) cannot: run one loop per clone"
        )
    top = checkout(project, env)
    tries = int(_number(env, "PN_CLAIM_TRIES", TRIES, minimum=1))
    wait = _number(env, "PN_CLAIM_BACKOFF", BACKOFF, minimum=0)
    pause = sleep or time.sleep
    with _locked(top, env):
        where = upstream(project, top, env)
        held: Issue | None = None
        try:
            for attempt in range(tries):
                tip = gitremote.fetch(where, env)
                held = _choose(where, store, project, tip, held, claim, actor, env)
                if held is None:
                    return None
                published = _publish(where, store, tip, held, actor, env)
                if published is not None:
                    claimed, held = held, None  # on the remote now: never given back here
                    _catch_up(where, store, project, published, env)
                    return claimed
                pause(min(wait * 2**attempt, MAX_WAIT) * (0.5 + _jitter()))
            assert held is not None
            raise PensaError(
                f"could not publish the claim of {held.id} in {tries} tries: other machines "
                f"kept pushing to {where.remote}/{where.branch} first; try again"
            )
        except PensaError as e:
            # never left holding what no other machine can see: the work must not start
            if held is not None:
                _give_back(store, held.id, actor)
                raise type(e)(f"{e}; released {held.id}") from e
            raise


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


def _choose(
    where: Upstream,
    store: Store,
    project: Project,
    tip: Tip,
    held: Issue | None,
    claim: Callable[[], Issue | None],
    actor: str,
    env: Mapping[str, str],
) -> Issue | None:
    """The issue to publish on `tip`: `_decide`'s, unless `tip` deleted it. With nothing
    ready (or only deleted issues), catch up with `tip` once and decide again, so issues
    and deletions published elsewhere count before the answer is "nothing"."""
    for caught_up in (False, True):
        held = _decide(store, held, tip, claim, actor)
        if held is not None and (tip.issue(held.id) is not None or not tip.deleted(held.id)):
            return held
        if held is not None:  # published as deleted: the catch-up's merge removes it here
            _give_back(store, held.id, actor)
            held = None
        if not caught_up:
            _catch_up(where, store, project, tip.commit, env)
    return None


def _decide(
    store: Store, held: Issue | None, tip: Tip, claim: Callable[[], Issue | None], actor: str
) -> Issue | None:
    """`held` while `tip` leaves it free, else the next issue claimed that `tip` leaves free."""
    while True:
        if held is None:
            held = claim()
            if held is None:
                return None
        theirs = tip.issue(held.id)
        if theirs is None or not _lost(theirs, actor):
            return held
        _adopt(store, held.id, theirs, actor)
        held = None


def _jitter() -> float:
    import random

    return random.random()  # noqa: S311 - spreading retries, not a secret


@contextlib.contextmanager
def _locked(top: str, env: Mapping[str, str]) -> Iterator[None]:
    """This clone's loops publish one at a time: racing each other through the remote would
    only add rejected rounds."""
    import fcntl

    from pensa.committed.files import open_lock

    # the sandboxed agent can write the git directory's top: never a link, FIFO or device
    fd = open_lock(os.path.join(_common_dir(top, env), "pensa-claims.lock"))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _common_dir(top: str, env: Mapping[str, str]) -> str:
    common = git.run(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=top, env=env)
    return common.out.strip() or top


def _lost(theirs: Record, actor: str) -> bool:
    """Whether the remote gives the issue to someone else (held by another, or closed)."""
    return theirs.get("status") == "closed" or theirs.get("assignee") not in (None, actor)


def _publish(
    where: Upstream, store: Store, tip: Tip, held: Issue, actor: str, env: Mapping[str, str]
) -> str | None:
    """Push a child of the tip claiming `held`; its commit, or None when the remote moved."""
    from pensa.committed.snapshot import canonical, read_issues
    from pensa.models import ISSUE_FIELDS

    with store.snapshot() as conn:
        ours = read_issues(conn, {held.id})[held.id]
    record = ours
    theirs = tip.issue(held.id)
    if theirs is not None:
        stamp = max(str(ours.get("updated_at", "")), str(theirs.get("updated_at", "")))
        record = {**theirs, **{k: ours.get(k) for k in _CLAIM_FIELDS}, "updated_at": stamp}
        record = {k: v for k, v in record.items() if v is not None}
    files = tip.with_line(held.id, canonical(record, ISSUE_FIELDS))
    commit = gitremote.commit_on(where, tip.commit, files, f"pn: claim {held.id} by {actor}", env)
    pushed = where.git("push", "-q", where.remote, f"{commit}:refs/heads/{where.branch}", env=env)
    if pushed.code != 0:
        # a hook that declines the push is no race: trying again would not help
        if any(word in pushed.err for word in _REJECTED) and "declined" not in pushed.err:
            return None
        raise GitFailed(f"cannot publish the claim of {held.id}: {gitremote.last_line(pushed.err)}")
    if record != ours:
        _adopt(store, held.id, record, actor, lost=False)
    return commit


def _catch_up(
    where: Upstream, store: Store, project: Project, commit: str, env: Mapping[str, str]
) -> None:
    """Bring the branch onto `commit` (local commits rebased, the JSONL through the driver)
    and merge the files into the database.

    A rebase that fails is undone and the branch left where it was: the claim is published
    either way, and ralph's push after the work pulls with rebase and stops on a conflict."""
    from pensa.committed import sync

    # A fast-forward (the usual case: nothing local to replay) never detaches HEAD
    forward = where.git("merge", "-q", "--ff-only", commit, env=env)
    if forward.code != 0 and where.git("rebase", "-q", "--autostash", commit, env=env).code != 0:
        where.git("rebase", "--abort", env=env)
    sync.sync(store, project, env)  # what came in, against what HEAD now holds


def _adopt(store: Store, issue_id: str, theirs: Record, actor: str, *, lost: bool = True) -> None:
    """Make the database's copy of the issue the remote's, as it is.

    A lost race also takes back its `claimed` event: the claim never took effect, and
    `--stuck-after` counts claims, so lost races would hand a task to a human."""
    from pensa.committed.apply import apply
    from pensa.committed.snapshot import Snapshot, read_issues

    with store.write() as conn:
        ours = Snapshot(read_issues(conn, {issue_id}), {}, {}, {})
        apply(conn, ours, Snapshot({issue_id: theirs}, {}, {}, {}))
        if lost:
            conn.execute(
                "DELETE FROM events WHERE seq = (SELECT max(seq) FROM events "
                "WHERE issue_id = ? AND event_type = 'claimed' AND actor = ?)",
                (issue_id, actor),
            )


def _give_back(store: Store, issue_id: str, actor: str) -> None:
    from pensa.tracker import Tracker

    Tracker(store).release(issue_id, actor=actor)

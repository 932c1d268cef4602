"""Claims published through git: loops on many machines, one backlog (issue 14).

With `PN_CLAIMS=git` (sgf sets it for `claims = "git"`), `pn claim-next` claims in the local
database as always (atomic between this clone's loops), then publishes the claim before the
agent starts: it commits the JSONL alone and pushes the branch to its upstream. The remote
orders the machines: a push that is rejected means another machine published first. Then
the claimer fetches, and when the remote's copy of the issue is held by someone else (or
closed) it takes the remote's record as it is and gives up the issue; it pulls with rebase
(the JSONL merge through pensa's driver), merges the files into the database, and claims the
next ready issue, at most PN_CLAIM_TRIES times, waiting PN_CLAIM_BACKOFF seconds, doubled
each time, jittered. The first published claim wins; "the later `updated_at` wins", the rule
the merge uses for everything else, would hand the issue to the later claimer instead.

Closes travel with the work's commit (ralph's auto-push). Guarantees and their limits are in
the README, "Running many loops".
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, NamedTuple

from pensa import git
from pensa.errors import GitFailed, PensaError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from pensa.models import Issue
    from pensa.project import Project
    from pensa.records import Record
    from pensa.store import Store

ENV = "PN_CLAIMS"
TRIES = 6
BACKOFF = 0.2
_REJECTED = ("rejected", "fetch first", "non-fast-forward")


def enabled(env: Mapping[str, str]) -> bool:
    """Whether claims are published through git (PN_CLAIMS=git)."""
    return env.get(ENV) == "git"


class Upstream(NamedTuple):
    """Where claims are published: the checkout, its branch's remote and remote branch."""

    top: str
    remote: str
    branch: str
    files: list[str]  # the JSONL files, relative to `top`

    def git(self, *args: str, env: Mapping[str, str]) -> git.Done:
        """Run git in the checkout, with no hooks (pn runs what they would itself)."""
        full = {**env, "GIT_TERMINAL_PROMPT": "0"}
        return git.run(["-c", "core.hooksPath=/dev/null", *args], cwd=self.top, env=full)


def upstream(project: Project, env: Mapping[str, str]) -> Upstream:
    """The branch's upstream; a clear error when there is none."""
    top = git.toplevel(project.dir, env)
    if top is None:
        raise PensaError(
            f"claims through git ({ENV}=git) need a git checkout; {project.dir} is in none"
        )
    found = git.run(
        ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"], cwd=top, env=env
    ).out.strip()
    if "/" not in found:
        raise PensaError(
            f"claims through git ({ENV}=git) are pushed to the branch's upstream, and this "
            "branch has none: `git push -u origin <branch>` once"
        )
    remote, branch = found.split("/", 1)
    names = ("issues.jsonl", "deps.jsonl", "comments.jsonl", "deleted.jsonl")
    files = [os.path.relpath(os.path.join(project.dir, n), top) for n in names]
    return Upstream(top, remote, branch, files)


def claim_next(
    store: Store,
    project: Project,
    *,
    actor: str,
    env: Mapping[str, str],
    claim: Callable[[], Issue | None],
    sleep: Callable[[float], None] | None = None,
) -> Issue | None:
    """`claim()` an issue and publish it; another when a machine published one first."""
    import time

    if env.get("PN_SHARED_DB"):
        raise PensaError(
            f"{ENV}=git publishes this clone's claims; loops sharing another checkout's "
            "database (PN_SHARED_DB, sgf's worktree loops) cannot: run one loop per clone"
        )
    where = upstream(project, env)
    tries = int(env.get("PN_CLAIM_TRIES") or TRIES)
    wait = float(env.get("PN_CLAIM_BACKOFF") or BACKOFF)
    pause = sleep or time.sleep
    with _locked(where, env):
        held = claim()
        if held is None:
            return None
        try:
            for attempt in range(tries):
                _commit(where, store, project, f"pn: claim {held.id} by {actor}", env)
                pushed = where.git(
                    "push", "-q", where.remote, f"HEAD:refs/heads/{where.branch}", env=env
                )
                if pushed.code == 0:
                    return held
                if not any(word in pushed.err for word in _REJECTED):
                    raise GitFailed(f"cannot publish the claim of {held.id}: {_last(pushed.err)}")
                theirs = _fetched_record(where, project, held.id, env)
                if _lost(theirs, actor):
                    assert theirs is not None
                    _adopt(store, held.id, theirs)
                    held = None
                _pull(where, store, project, env)
                pause(wait * 2**attempt * (0.5 + _jitter()))
                if held is None:
                    held = claim()
                    if held is None:
                        return None
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


def _jitter() -> float:
    import random

    return random.random()  # noqa: S311 - spreading retries, not a secret


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


@contextlib.contextmanager
def _locked(where: Upstream, env: Mapping[str, str]) -> Iterator[None]:
    """This clone's loops publish one at a time."""
    import fcntl

    common = where.git("rev-parse", "--path-format=absolute", "--git-common-dir", env=env)
    path = os.path.join(common.out.strip() or where.top, "pensa-claims.lock")
    try:  # O_NOFOLLOW: the sandboxed agent can write the git directory's top
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        from pensa.files import link_refusal

        if os.path.islink(path):
            raise link_refusal(path) from e
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _commit(
    where: Upstream, store: Store, project: Project, message: str, env: Mapping[str, str]
) -> None:
    """Export the database and commit the JSONL files alone (nothing when unchanged)."""
    from pensa import sync

    sync.export(store, project)
    present = [f for f in where.files if os.path.exists(os.path.join(where.top, f))]
    added = where.git("add", "--", *present, env=env)
    if added.code != 0:
        raise GitFailed(f"git add failed: {_last(added.err)}")
    if where.git("diff", "--cached", "--quiet", "--", *present, env=env).code == 0:
        return
    done = where.git(
        "commit", "-q", "--no-verify", "-m", message, "--only", "--", *present, env=env
    )
    if done.code != 0:
        raise GitFailed(f"git commit of the claim failed: {_last(done.err or done.out)}")


def _fetched_record(
    where: Upstream, project: Project, issue_id: str, env: Mapping[str, str]
) -> Record | None:
    """The issue as the remote has it now (None: the remote does not know it)."""
    from pensa.snapshot import parse

    fetched = where.git("fetch", "-q", where.remote, where.branch, env=env)
    if fetched.code != 0:
        raise GitFailed(f"git fetch failed: {_last(fetched.err)}")
    path = where.files[0]
    shown = where.git("show", f"FETCH_HEAD:{path}", env=env)
    if shown.code != 0:
        return None
    return parse({"issues.jsonl": shown.out.encode()}).issues.get(issue_id)


def _lost(theirs: Record | None, actor: str) -> bool:
    """Whether the remote gives the issue to someone else (held by another, or closed)."""
    if theirs is None:
        return False
    return theirs.get("status") == "closed" or theirs.get("assignee") not in (None, actor)


def _adopt(store: Store, issue_id: str, theirs: Record) -> None:
    """Make the database's copy of the issue the remote's, as it is."""
    from pensa.snapshot import Snapshot, read_issues
    from pensa.sync import apply

    with store.write() as conn:
        ours = Snapshot(read_issues(conn, {issue_id}), {}, {}, {})
        apply(conn, ours, Snapshot({issue_id: theirs}, {}, {}, {}))


def _pull(where: Upstream, store: Store, project: Project, env: Mapping[str, str]) -> None:
    """Rebase onto the remote (the JSONL through the driver) and merge the files in."""
    from pensa import sync

    pulled = where.git("pull", "-q", "--rebase", "--autostash", where.remote, where.branch, env=env)
    if pulled.code != 0:
        where.git("rebase", "--abort", env=env)
        raise GitFailed(f"git pull --rebase failed: {_last(pulled.err)}")
    sync.export(store, project)  # merges what came in, then writes it back out


def _give_back(store: Store, issue_id: str, actor: str) -> None:
    from pensa.tracker import Tracker

    Tracker(store).release(issue_id, actor=actor)

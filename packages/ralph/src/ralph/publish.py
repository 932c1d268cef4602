"""Pushing the target branch from the project's repository, by the host.

After a landing, the target is pushed to its upstream (or `origin`, setting the upstream). A
push the remote rejects because another machine pushed first costs one fetch: the target's
commits the remote lacks are replayed onto the remote's tip (replay.py, in ralph's own
worktree) and pushed again, up to TRIES rounds; then the target moves there with the
checkout's edits carried over (when they are in the way, the target stays where it is and
says why; its commits are on the remote already). There is no `pull --rebase` in the human's
checkout, and nothing is aborted or reset there.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from ralph import git, proc, replay
from ralph.integrate import Lane

_REJECTED = ("rejected", "fetch first", "non-fast-forward")
# Rounds after the first rejection. Each round waits a random part of a bound that doubles
# from BACKOFF up to MAX_WAIT: clones rejected together must not push again together. A round
# fails when another push lands between its fetch and its push, which on a busy machine is
# seconds (a replay, pensa's merge driver), so many short rounds beat a few long waits: five
# clones pushing after every task all land (bench/bench_git_claims.py).
TRIES = 20
BACKOFF = 0.25
MAX_WAIT = 2.0


class PushStatus(StrEnum):
    """How a push ended."""

    PUSHED = "pushed"
    REBASED = "pushed after replaying onto the remote"
    NO_REMOTE = "no remote"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Pushed:
    """The outcome of `push()`, with git's last line of stderr when it failed."""

    status: PushStatus
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status is PushStatus.FAILED


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _refused(done: proc.Completed) -> str:
    """Why git refused the push: the porcelain line of the ref (`[rejected] (fetch first)`),
    else the last line of stderr."""
    refused = [line.split("\t")[-1] for line in done.stdout.splitlines() if line[:1] == "!"]
    return refused[0] if refused else _last_line(done.stderr)


def _config(lane: Lane, key: str) -> str | None:
    done = git.command(lane.repo, "config", "--get", key, env=lane.env)
    return done.stdout.strip() or None if done.ok else None


def where(lane: Lane) -> tuple[str, str, bool] | None:
    """(remote, remote branch ref, has an upstream) for the target; None without a remote."""
    names = git.command(lane.repo, "remote", env=lane.env).stdout.split()
    if not names:
        return None
    remote = _config(lane, f"branch.{lane.target}.remote")
    merge = _config(lane, f"branch.{lane.target}.merge")
    if remote in names and merge:
        return remote, merge, True
    return ("origin" if "origin" in names else names[0]), lane.ref, False


def ahead(lane: Lane) -> int:
    """How many of the target's commits its remote branch lacks (as last fetched)."""
    found = where(lane)
    tip = lane.target_tip()
    if found is None or tip is None:
        return 0
    remote, merge, _ = found
    tracking = git.rev(lane.repo, _tracking(remote, merge), env=lane.env)
    return git.count(lane.repo, f"{tracking}..{tip}" if tracking else tip, env=lane.env)


def _tracking(remote: str, merge: str) -> str:
    return f"refs/remotes/{remote}/{merge.removeprefix('refs/heads/')}"


def push(
    lane: Lane,
    *,
    env: Mapping[str, str] | None = None,
    tries: int = TRIES,
    sleep: Callable[[float], None] = time.sleep,
) -> Pushed:
    """Push the target; when the remote has moved, replay onto it and push again.

    The replayed commits are pushed before the checkout moves onto them: a round is one
    fetch, one replay (`_remade` for a single commit) and one push, so other machines
    pushing meanwhile rarely get in between, and the rounds are spread by a jittered
    backoff."""
    found = where(lane)
    if found is None:
        return Pushed(PushStatus.NO_REMOTE)
    remote, merge, tracked = found
    spec = f"{lane.ref}:{merge}"
    args = ["push", "--porcelain", remote, spec] if tracked else ["push", "-u", remote, spec]
    done = git.command(lane.repo, *args, env=lane.env)
    if done.ok:
        return Pushed(PushStatus.PUSHED)
    rejected = done.stderr + done.stdout
    for attempt in range(tries):
        if not any(word in rejected for word in _REJECTED):
            return Pushed(PushStatus.FAILED, _refused(done))
        tracking = _tracking(remote, merge)
        fetched = git.command(
            lane.repo, "fetch", "-q", remote, f"+{merge}:{tracking}", env=lane.env
        )
        if not fetched.ok:
            return Pushed(PushStatus.FAILED, "fetch failed: " + _last_line(fetched.stderr))
        theirs = git.rev(lane.repo, tracking, env=lane.env)
        ours = lane.target_tip()
        if theirs is None or ours is None:
            return Pushed(PushStatus.FAILED, "the remote branch cannot be read")
        moved = _remade(lane, ours, theirs)
        if moved is None:
            try:
                moved = replay.replay(lane.repo, ours, theirs, theirs, env=lane.env).tip
            except replay.ReplayConflict as e:
                files = ", ".join(e.files) or str(e)
                return Pushed(PushStatus.FAILED, f"the remote's new commits conflict in {files}")
        done = git.command(lane.repo, "push", "--porcelain", remote, f"{moved}:{merge}",
                           env=lane.env)  # fmt: skip
        if done.ok:
            if moved != ours and (why := lane.move_checkout(ours, moved)) is not None:
                # on the remote all the same; the branch here takes them with the next push
                return Pushed(PushStatus.REBASED, f"{lane.target} here stays behind: {why}")
            return Pushed(PushStatus.REBASED)
        rejected = done.stderr + done.stdout
        sleep(min(BACKOFF * 2**attempt, MAX_WAIT) * random.random())  # noqa: S311 - a spread
    return Pushed(PushStatus.FAILED, f"{_refused(done)}, {tries} rounds after the first")


def _remade(lane: Lane, ours: str, theirs: str) -> str | None:
    """`ours`, one commit on an ancestor of `theirs` (a loop's iteration, the usual case),
    made again on `theirs` without a worktree: `git merge-tree` (pensa's driver merges its
    files, as in a replay) and `commit-tree`, author, date and message kept. It keeps a round
    short, so other machines rarely push in between. None when it does not apply, or not
    cleanly: the full replay (replay.py) does it then, or says what conflicts."""
    listed = git.command(lane.repo, "rev-list", "--parents", "-n", "1", ours, env=lane.env)
    ids = listed.stdout.split()
    if len(ids) != 2 or not git.is_ancestor(lane.repo, ids[1], theirs, env=lane.env):
        return None
    merged = git.command(
        lane.repo, "merge-tree", "--write-tree", "--no-messages", theirs, ours, env=lane.env
    )
    shown = git.command(
        lane.repo, "show", "-s", "--date=raw", "--format=%an%x00%ae%x00%ad%x00%B", ours,
        env=lane.env,
    )  # fmt: skip
    author = shown.stdout.split("\0", 3)
    if not (merged.ok and shown.ok) or len(author) != 4:
        return None
    # a merge driver may print on stdout too (pensa's says what it merged): the tree is the
    # line that is an object id
    trees = [line for line in merged.stdout.split() if len(line) >= 40 and _hex(line)]
    if not trees:
        return None
    tree = trees[-1]
    if (
        tree
        == git.command(lane.repo, "rev-parse", f"{theirs}^{{tree}}", env=lane.env).stdout.strip()
    ):
        return theirs  # its change is there already, as a replay would find
    name, email, date, message = author
    env = {**(lane.env or os.environ), "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}
    env["GIT_AUTHOR_DATE"] = date
    with tempfile.TemporaryFile() as text:
        text.write(message.rstrip("\n").encode() + b"\n")
        text.seek(0)
        made = git.command(
            lane.repo, "commit-tree", tree, "-p", theirs, "-F", "-", env=env, stdin=text.fileno()
        )
    return made.stdout.strip() if made.ok else None


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)

"""Claims published through git: loops on many machines, one backlog.

With `PN_CLAIMS=git` (sgf sets it for `claims = "git"`), `pn claim-next` publishes every
claim before the agent starts, as a compare-and-swap on the branch's upstream:

1. fetch the remote branch, once: its tip T is what the claim is decided on;
2. claim in the database (atomic between this clone's loops) and check the issue against
   T's own `issues.jsonl`: held by someone else or closed there, take T's record as it is
   and claim the next ready issue, against the same T;
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
their limits are in the README, "Running many loops".
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

    def must(self, *args: str, env: Mapping[str, str], doing: str) -> str:
        """`git()` that raises GitFailed naming `doing` unless it succeeds; its stdout."""
        done = self.git(*args, env=env)
        if done.code != 0:
            raise GitFailed(f"{doing} failed: {_last(done.err or done.out)}")
        return done.out


class Tip(NamedTuple):
    """The remote branch as one fetch found it: the commit and its issues."""

    commit: str
    lines: list[str]  # issues.jsonl split at "\n"
    issues: dict[str, tuple[int, Record]]  # id -> (index in `lines`, record)


def checkout(project: Project, env: Mapping[str, str]) -> str:
    """The top of the git checkout holding the project; a clear error when there is none."""
    top = git.toplevel(project.dir, env)
    if top is None:
        raise PensaError(
            f"claims through git ({ENV}=git) need a git checkout; {project.dir} is in none"
        )
    return top


def upstream(project: Project, top: str, env: Mapping[str, str]) -> Upstream:
    """The branch's upstream; a clear error when there is none.

    Asked under the clone's claim lock: another claimer's rebase detaches HEAD for a moment,
    and a branch-less HEAD has no upstream."""
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
                tip = _fetch(where, env)
                held = _decide(store, held, tip, claim, actor)
                if held is None:
                    _catch_up(where, store, project, tip.commit, env)
                    held = _decide(store, None, tip, claim, actor)
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


def _decide(
    store: Store, held: Issue | None, tip: Tip, claim: Callable[[], Issue | None], actor: str
) -> Issue | None:
    """`held` while `tip` leaves it free, else the next issue claimed that `tip` leaves free."""
    while True:
        if held is None:
            held = claim()
            if held is None:
                return None
        theirs = tip.issues.get(held.id)
        if theirs is None or not _lost(theirs[1], actor):
            return held
        _adopt(store, held.id, theirs[1], actor)
        held = None


def _jitter() -> float:
    import random

    return random.random()  # noqa: S311 - spreading retries, not a secret


def _last(text: str) -> str:
    """The line of git's stderr that says what went wrong: its first `fatal:` or `error:`,
    else its last."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (said or lines or ["no output"])[0 if said else -1]


@contextlib.contextmanager
def _locked(top: str, env: Mapping[str, str]) -> Iterator[None]:
    """This clone's loops publish one at a time: racing each other through the remote would
    only add rejected rounds."""
    import fcntl

    fd = os.open(
        os.path.join(_common_dir(top, env), "pensa-claims.lock"), os.O_RDWR | os.O_CREAT, 0o644
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _common_dir(top: str, env: Mapping[str, str]) -> str:
    common = git.run(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=top, env=env)
    return common.out.strip() or top


def _fetch(where: Upstream, env: Mapping[str, str]) -> Tip:
    """Fetch the remote branch and read its issues, from the one commit fetched."""
    from pensa.records import parse_file

    ref = f"refs/remotes/{where.remote}/{where.branch}"
    where.must(
        "fetch",
        "-q",
        where.remote,
        f"+refs/heads/{where.branch}:{ref}",
        env=env,
        doing=f"cannot claim: git fetch from {where.remote}/{where.branch}",
    )
    commit = where.must(
        "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", env=env, doing="git rev-parse"
    ).strip()
    shown = where.git("cat-file", "blob", f"{commit}:{where.files[0]}", env=env)
    text = shown.out if shown.code == 0 else ""
    label = f"{where.remote}/{where.branch}:{where.files[0]}"
    found = parse_file(text.encode(), "issues.jsonl", label=label)
    return Tip(commit, text.split("\n"), {r["id"]: (n - 1, r) for n, r in found})


def _lost(theirs: Record, actor: str) -> bool:
    """Whether the remote gives the issue to someone else (held by another, or closed)."""
    return theirs.get("status") == "closed" or theirs.get("assignee") not in (None, actor)


def _publish(
    where: Upstream, store: Store, tip: Tip, held: Issue, actor: str, env: Mapping[str, str]
) -> str | None:
    """Push a child of the tip claiming `held`; its commit, or None when the remote moved."""
    from pensa.models import ISSUE_FIELDS
    from pensa.snapshot import canonical, read_issues

    with store.snapshot() as conn:
        ours = read_issues(conn, {held.id})[held.id]
    record = ours
    if held.id in tip.issues:
        theirs = tip.issues[held.id][1]
        stamp = max(str(ours.get("updated_at", "")), str(theirs.get("updated_at", "")))
        record = {**theirs, **{k: ours.get(k) for k in _CLAIM_FIELDS}, "updated_at": stamp}
        record = {k: v for k, v in record.items() if v is not None}
    lines = _with_line(tip, held.id, canonical(record, ISSUE_FIELDS))
    commit = _commit_on(where, tip.commit, "\n".join(lines), f"pn: claim {held.id} by {actor}", env)
    pushed = where.git("push", "-q", where.remote, f"{commit}:refs/heads/{where.branch}", env=env)
    if pushed.code != 0:
        if any(word in pushed.err for word in _REJECTED):
            return None
        raise GitFailed(f"cannot publish the claim of {held.id}: {_last(pushed.err)}")
    if record != ours:
        _adopt(store, held.id, record, actor, lost=False)
    return commit


def _with_line(tip: Tip, issue_id: str, line: str) -> list[str]:
    """The tip's issues.jsonl lines with the issue's line replaced, or added in id order."""
    lines = list(tip.lines)
    if issue_id in tip.issues:
        lines[tip.issues[issue_id][0]] = line
        return lines
    after = [index for other, (index, _) in tip.issues.items() if other > issue_id]
    if after:
        lines.insert(min(after), line)
    elif lines and lines[-1] == "":
        lines.insert(len(lines) - 1, line)
    else:
        lines.extend([line, ""])
    return lines


def _commit_on(
    where: Upstream, parent: str, issues: str, message: str, env: Mapping[str, str]
) -> str:
    """A commit of `parent`'s tree with issues.jsonl replaced, built in a private index.

    The index and the file live in a fresh temporary directory, not in `.git`, where the
    agent can write: a name planted there (a symlink) would have pn write through it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pensa-claim-") as tmp:
        blob_file = os.path.join(tmp, "issues.jsonl")
        with open(blob_file, "wb") as f:
            f.write(issues.encode())
        private = {**env, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        blob = where.must("hash-object", "-w", blob_file, env=env, doing="git hash-object")
        where.must("read-tree", parent, env=private, doing="git read-tree")
        where.must(
            "update-index",
            "--add",
            "--cacheinfo",
            f"100644,{blob.strip()},{where.files[0]}",
            env=private,
            doing="git update-index",
        )
        tree = where.must("write-tree", env=private, doing="git write-tree").strip()
        made = where.must(
            "commit-tree", tree, "-p", parent, "-m", message, env=env, doing="git commit-tree"
        )
        return made.strip()


def _catch_up(
    where: Upstream, store: Store, project: Project, commit: str, env: Mapping[str, str]
) -> None:
    """Bring the branch onto `commit` (local commits rebased, the JSONL through the driver)
    and merge the files into the database.

    A rebase that fails is undone and the branch left where it was: the claim is published
    either way, and ralph's push after the work pulls with rebase and stops on a conflict."""
    from pensa import sync

    # A fast-forward (the usual case: nothing local to replay) never detaches HEAD
    forward = where.git("merge", "-q", "--ff-only", commit, env=env)
    if forward.code != 0 and where.git("rebase", "-q", "--autostash", commit, env=env).code != 0:
        where.git("rebase", "--abort", env=env)
    sync.export(store, project)  # merges what came in, then writes it back out


def _adopt(store: Store, issue_id: str, theirs: Record, actor: str, *, lost: bool = True) -> None:
    """Make the database's copy of the issue the remote's, as it is.

    A lost race also takes back its `claimed` event: the claim never took effect, and
    `--stuck-after` counts claims, so lost races would hand a task to a human."""
    from pensa.snapshot import Snapshot, read_issues
    from pensa.sync import apply

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

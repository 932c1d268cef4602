"""A worktree loop's commits reach the target branch after every iteration.

sgf runs an isolated loop in `.sgf/worktrees/<loop-id>` on branch `sgf/<loop-id>` and asks
ralph to `--integrate` it into the branch the main checkout had: after each iteration that
made commits, the loop's branch is rebased onto the target (`.pensa/*.jsonl` merge through
pensa's driver, registered in `.git/config`) and the target is fast-forwarded to it. In the
main checkout that is `git merge --ff-only`, so its work tree follows (a user's uncommitted
edits survive or the merge refuses; nothing is overwritten), followed by `pn sync --adopt`:
the files that came in are exports of the shared database and must not be merged back
(pensa.shared). A code conflict aborts the rebase: the branch keeps the loop's commits as
they were, and the loop stops for a human.

Loops integrate one at a time (a lock in the common git directory). Every git command here
has its directories pinned by environment (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE) from what
was read before any agent ran (gitdirs.py), so pointer files an agent may have changed are
never followed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ralph import git, gitdirs, proc, safefile
from ralph.errors import CommandFailed, RalphError
from ralph.models import Config

LOCK = "springfield-integrate.lock"


class IntegrationFailed(RalphError):
    """The loop's commits could not reach the target branch; they stay on the loop's branch."""

    code = "integration_failed"
    kept: str | None = None  # the branch the rejected commits were set aside on


class IntegrationConflict(IntegrationFailed):
    """The loop's commits conflict with the target branch's."""

    code = "integration_conflict"


# Checks a rebased commit before the target moves: None when it passed (gate.py).
Gate = Callable[[str], IntegrationFailed | None]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a worktree loop's commits go: a branch, and the checkout that has it, if any."""

    branch: str
    checkout: gitdirs.Layout | None  # the main checkout (sgf's project root)


@dataclass(frozen=True, slots=True)
class Integrated:
    """What one integration did."""

    commits: int  # how many of the loop's commits the target gained
    head: str  # the target's commit afterwards


def pinned(layout: gitdirs.Layout, env: Mapping[str, str] | None) -> dict[str, str]:
    """`env` with git's directories fixed to `layout`: no pointer file is read."""
    out = {k: v for k, v in (env or os.environ).items() if not k.startswith("GIT_")}
    out.update(
        GIT_DIR=str(layout.git_dir),
        GIT_COMMON_DIR=str(layout.common_dir),
        GIT_WORK_TREE=str(layout.work_tree),
        GIT_TERMINAL_PROMPT="0",
    )
    return out


@contextlib.contextmanager
def locked(
    common: Path, *, timeout: float, clock: Callable[[], float] = time.monotonic
) -> Iterator[None]:
    """Hold the integration lock of the repository (one loop integrates at a time)."""
    path = common / LOCK
    fd = safefile.open_plain(path, os.O_RDWR)  # the agent can write the common directory
    try:
        deadline = clock() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if clock() >= deadline:
                    raise IntegrationFailed(
                        f"another loop held {path} for {timeout:g} s; the commits stay on "
                        "this loop's branch"
                    ) from None
                time.sleep(0.05)  # polling a lock another process holds: no event to wait on
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


class Integrator:
    """Rebases a worktree loop's branch onto its target and fast-forwards the target."""

    def __init__(
        self,
        worktree: gitdirs.Layout,
        target: Target,
        *,
        env: Mapping[str, str] | None,
        tries: int = 3,
        lock_timeout: float = 600.0,
        gate: Gate | None = None,
    ) -> None:
        self.worktree = worktree
        self.target = target
        self.env = env
        self.gate = gate
        self.tries = tries
        self.lock_timeout = lock_timeout

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.target.branch}"

    def _wt(self, *args: str, check: bool = True) -> proc.Completed:
        return self._git(self.worktree, *args, check=check)

    def _git(self, layout: gitdirs.Layout, *args: str, check: bool = True) -> proc.Completed:
        done = git.command(layout.work_tree, *args, env=pinned(layout, self.env))
        if check and not done.ok:
            raise CommandFailed(done.argv, done.returncode, done.stderr, done.stdout)
        return done

    def pending(self) -> int:
        """How many of the loop's commits the target lacks."""
        done = self._wt("rev-list", "--count", f"{self.ref}..HEAD")
        return int(done.stdout.strip() or 0)

    def run(self) -> Integrated | None:
        """Bring the loop's commits into the target; None when there were none.

        Raises IntegrationConflict (rebase aborted, branch as it was) or IntegrationFailed."""
        if self.pending() == 0:
            return None
        with locked(self.worktree.common_dir, timeout=self.lock_timeout):
            last = ""
            for attempt in range(self.tries):
                before = self._rev(self.ref)
                self._rebase()
                head = self._rev("HEAD")
                if self.gate is not None and (failed := self.gate(head)) is not None:
                    failed.kept = self._set_aside(head, before)
                    raise failed  # merge only on PASS (gate.py): the target stays
                moved = self._fast_forward(before, head)
                if moved is None:
                    return Integrated(self._count(before, head), head)
                # the target moved meanwhile (a human's commit), or another git held the
                # main checkout's index (a loop committing there): wait a little, go again
                last = moved
                time.sleep(0.2 * 2**attempt)  # a backoff, not a synchronisation
            raise IntegrationFailed(
                f"cannot fast-forward {self.target.branch} after {self.tries} tries ({last}); "
                f"the commits stay on this loop's branch"
            )

    def _set_aside(self, head: str, target: str) -> str | None:
        """Keep the rejected commits on a branch of their own and start the loop's branch
        again from the target, so the next task is not blocked by this one's failure.

        `reset --keep` refuses rather than lose uncommitted work; then the branch stays as
        it is (and the next integration checks it again)."""
        env = pinned(self.worktree, self.env)
        name = git.branch(self.worktree.work_tree, env=env) or "ralph"
        kept = f"{name}-rejected-{head[:12]}"
        if not self._wt("branch", "-f", kept, head, check=False).ok:
            return None
        self._wt("reset", "-q", "--keep", target, check=False)
        return kept

    def _rev(self, ref: str) -> str:
        return self._wt("rev-parse", "--verify", "-q", ref).stdout.strip()

    def _count(self, before: str, head: str) -> int:
        return int(self._wt("rev-list", "--count", f"{before}..{head}").stdout.strip() or 0)

    def _rebase(self) -> None:
        done = self._wt("rebase", "--autostash", self.ref, check=False)
        if done.ok:
            return
        conflicted = self._wt("diff", "--name-only", "--diff-filter=U", check=False).stdout.split()
        aborted = self._wt("rebase", "--abort", check=False)
        if not aborted.ok:
            raise IntegrationFailed(
                f"rebase onto {self.target.branch} failed and could not be aborted "
                f"({aborted.stderr.strip()}); see `git status` in {self.worktree.work_tree}"
            )
        if conflicted:
            raise IntegrationConflict(
                f"the loop's commits conflict with {self.target.branch} in "
                f"{', '.join(conflicted)}; they are kept on branch "
                f"{git.branch(self.worktree.work_tree, env=pinned(self.worktree, self.env))} "
                f"in {self.worktree.work_tree}: rebase it onto {self.target.branch} by hand"
            )
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise IntegrationFailed(
            f"rebase onto {self.target.branch} failed: {lines[-1] if lines else 'no output'}"
        )

    def _fast_forward(self, before: str, head: str) -> str | None:
        """Move the target from `before` to `head`; why not, or None when it moved."""
        checkout = self.target.checkout
        if checkout is not None and self._checked_out(checkout):
            self._pn(checkout, "sync")  # what the main checkout's files hold, first
            done = self._git(checkout, "merge", "--ff-only", "-q", head, check=False)
            if not done.ok:
                lines = (done.stderr or done.stdout).strip().splitlines()
                why = lines[-1] if lines else "no output"
                busy = "index.lock" in done.stderr
                if self._rev(self.ref) == before and not busy:  # not a race: it refuses
                    raise IntegrationFailed(
                        f"cannot fast-forward {self.target.branch} in {checkout.work_tree}: "
                        f"{why}; the commits stay on this loop's branch"
                    )
                return why
            self._pn(checkout, "sync", "--adopt")
            return None
        done = self._wt("update-ref", self.ref, head, before, check=False)
        return None if done.ok else (done.stderr.strip() or "update-ref failed")

    def _checked_out(self, checkout: gitdirs.Layout) -> bool:
        done = self._git(checkout, "symbolic-ref", "-q", "HEAD", check=False)
        return done.stdout.strip() == self.ref

    def _pn(self, checkout: gitdirs.Layout, *args: str) -> None:
        """Run pn in the main checkout (its own database, no PN_SHARED_DB); skip without pn."""
        if proc.which("pn") is None:
            return
        env = {k: v for k, v in (self.env or os.environ).items() if k != "PN_SHARED_DB"}
        proc.run(["pn", *args], cwd=checkout.work_tree, env=env, check=True, timeout=120)

    def push(self) -> git.Pushed:
        """Push the target branch from the main checkout (auto_push)."""
        layout = self.target.checkout or self.worktree
        env = pinned(layout, self.env)
        names = git.remotes(layout.work_tree, env=env)
        if not names:
            return git.Pushed(git.PushStatus.NO_REMOTE)
        remote = "origin" if "origin" in names else names[0]
        done = git.command(layout.work_tree, "push", remote, self.ref, env=env)
        if done.ok:
            return git.Pushed(git.PushStatus.PUSHED)
        lines = done.stderr.strip().splitlines()
        return git.Pushed(git.PushStatus.FAILED, lines[-1] if lines else "")


def make(
    config: Config,
    layout: gitdirs.Layout | None,
    *,
    env: Mapping[str, str] | None,
    gate: Gate | None = None,
) -> Integrator | None:
    """The integrator `config.integrate` asks for, or None for a loop in a shared tree."""
    if config.integrate is None:
        return None
    if layout is None or not layout.linked:
        raise IntegrationFailed(
            f"--integrate {config.integrate} needs a linked worktree, and {config.project} is "
            "not one (sgf makes them with `sgf build --worktree`)"
        )
    checkout = None
    if config.integrate_checkout is not None:
        checkout = gitdirs.find(config.integrate_checkout)
        if checkout is None or checkout.common_dir != layout.common_dir:
            raise IntegrationFailed(
                f"{config.integrate_checkout} is not a checkout of the repository of "
                f"{config.project}"
            )
    return Integrator(layout, Target(config.integrate, checkout), env=env, gate=gate)

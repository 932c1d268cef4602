"""Landing a loop's vetted commits on the human's branch: one path for every loop.

A loop works towards a target branch (the branch the project had checked out when it
started, or `--integrate BRANCH`). After each iteration the commits that crossed (inbox.py)
and passed the quarantine (quarantine.py) and the check step (check/step.py) land here, in
the project's own repository, by the host:

- onto the target as it is now: fast-forwarded when it has not moved, else replayed on top
  of it (replay.py), a conflict stopping the loop with its commits kept on its branch;
- the target moves together with the human's checkout when that checkout has it: `git merge
  --ff-only`, which keeps the human's uncommitted edits or refuses. Refused, the loop's
  commits wait on `sgf/<loop>` and the next iteration builds on them; they land once the
  edits are out of the way (or the human merges the branch). A target checked out nowhere
  moves by `update-ref`, only from the commit it was read at;
- pensa's exports arrive with the commits: `pn sync` before the checkout moves and `pn sync
  --adopt` after (the files are exports of the one database every loop claims from); after
  a replay onto the remote's tip (publish.py) a plain `pn sync`, which merges what other
  machines pushed.

Loops land one at a time (a lock in the repository's git directory, which no sandbox sees),
so a landing only has to replay when a human committed meanwhile. ralph never runs
`rebase --abort`, `reset` or `checkout` on state it did not make: the only rebase is the
replay's, in a worktree of ralph's own.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ralph import git, proc, replay, safefile, workspace
from ralph.errors import RalphError

LOOP_BRANCH_PREFIX = "sgf/"
LOCK = "springfield-land.lock"


class IntegrationFailed(RalphError):
    """The loop's commits could not reach the target branch; they stay on the loop's branch."""

    code = "integration_failed"
    kept: str | None = None  # the branch the rejected commits were set aside on
    # a gate's failure: the commits go to a branch of their own (True) or wait on the loop's
    set_aside = True


class IntegrationConflict(IntegrationFailed):
    """The loop's commits conflict with the target branch's."""

    code = "integration_conflict"


# Checks a candidate commit before the target moves: None when it passed (check/step.py).
Gate = Callable[[str], IntegrationFailed | None]


@contextlib.contextmanager
def locked(
    folder: Path, *, timeout: float, clock: Callable[[], float] = time.monotonic
) -> Iterator[None]:
    """Hold the repository's landing lock (one loop lands at a time)."""
    path = folder / LOCK
    fd = safefile.open_plain(path, os.O_RDWR)
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


@dataclass(frozen=True, slots=True)
class Landed:
    """What one landing did: the target's new tip and how many commits it gained, or the
    commits waiting on the loop's branch (with git's reason)."""

    tip: str
    commits: int
    waiting: str | None = None


class Lane:
    """A loop's way to its target branch, in the project's repository."""

    def __init__(
        self,
        repo: Path,
        target: str,
        loop_id: str,
        *,
        env: Mapping[str, str] | None,
        tries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        lock_timeout: float = 1800.0,
    ) -> None:
        self.repo = repo
        self.target = target
        self.loop_branch = LOOP_BRANCH_PREFIX + workspace.stem(loop_id)
        self.env = env
        self.tries = tries
        self.sleep = sleep
        self.lock_timeout = lock_timeout

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.target}"

    @property
    def loop_ref(self) -> str:
        return f"refs/heads/{self.loop_branch}"

    def target_tip(self) -> str | None:
        return git.rev(self.repo, self.ref, env=self.env)

    def base(self) -> str | None:
        """Where the next iteration starts: the loop's waiting commits, else the target."""
        return git.rev(self.repo, self.loop_ref, env=self.env) or self.target_tip()

    def waiting(self) -> int:
        """How many of the loop's commits wait on its branch (the target lacks them)."""
        tip = git.rev(self.repo, self.loop_ref, env=self.env)
        if tip is None:
            return 0
        target = self.target_tip()
        return git.count(self.repo, f"{target}..{tip}" if target else tip, env=self.env)

    def keep(self, tip: str) -> None:
        """Keep `tip`'s commits on the loop's branch, landing nothing."""
        git.set_ref(self.repo, self.loop_ref, tip, env=self.env)

    def land(self, tip: str, *, gate: Gate | None = None) -> Landed | None:
        """Bring `tip`'s commits to the target; None when it has them all already.

        Raises IntegrationConflict (nothing moved; the commits on the loop's branch) or
        IntegrationFailed (a failed check: the commits set aside, nothing moved)."""
        common = git.common_dir(self.repo, env=self.env)
        with locked(common, timeout=self.lock_timeout):
            return self._land(tip, gate)

    def _land(self, tip: str, gate: Gate | None) -> Landed | None:
        last = ""
        for attempt in range(self.tries):
            target = self.target_tip()
            if target is not None and git.is_ancestor(self.repo, tip, target, env=self.env):
                self._forget_loop_branch()
                return None
            candidate = self._onto(tip, target)
            if candidate.tip == target:  # every one of its changes is there already
                self._forget_loop_branch()
                return None
            if gate is not None and (failed := gate(candidate.tip)) is not None:
                if failed.set_aside:
                    failed.kept = self._set_aside(candidate.tip)
                else:
                    self.keep(tip)
                    failed.kept = self.loop_branch
                raise failed
            moved = self._move(target, candidate.tip)
            if moved is None:
                self._forget_loop_branch()
                return Landed(candidate.tip, candidate.commits)
            if moved.startswith("wait:"):
                git.set_ref(self.repo, self.loop_ref, candidate.tip, env=self.env)
                return Landed(candidate.tip, candidate.commits, waiting=moved[5:])
            last = moved  # the target moved meanwhile: replay onto its new tip
            self.sleep(0.1 * 2**attempt)  # a backoff, not a synchronisation
        raise IntegrationFailed(
            f"cannot move {self.target} after {self.tries} tries ({last}); the commits "
            f"stay on {self.loop_branch}"
        )

    def _onto(self, tip: str, target: str | None) -> replay.Replayed:
        if target is None:
            return replay.Replayed(tip, git.count(self.repo, tip, env=self.env))
        try:
            return replay.replay(self.repo, tip, target, target, env=self.env)
        except replay.ReplayConflict as e:
            git.set_ref(self.repo, self.loop_ref, tip, env=self.env)
            where = ", ".join(e.files) if e.files else str(e)
            raise IntegrationConflict(
                f"the loop's commits conflict with {self.target} in {where}; they are kept on "
                f"branch {self.loop_branch}: rebase it onto {self.target} by hand and merge it"
            ) from e

    def _set_aside(self, candidate: str) -> str | None:
        kept = f"{self.loop_branch}-rejected-{candidate[:12]}"
        ok = git.set_ref(self.repo, f"refs/heads/{kept}", candidate, env=self.env)
        git.delete_ref(self.repo, self.loop_ref, env=self.env)
        return kept if ok else None

    def _forget_loop_branch(self) -> None:
        tip = git.rev(self.repo, self.loop_ref, env=self.env)
        target = self.target_tip()
        if tip is not None and target and git.is_ancestor(self.repo, tip, target, env=self.env):
            git.delete_ref(self.repo, self.loop_ref, env=self.env)

    def checked_out(self) -> bool:
        """Whether the project's checkout has the target checked out."""
        done = git.command(self.repo, "symbolic-ref", "-q", "HEAD", env=self.env)
        return done.stdout.strip() == self.ref

    def _move(self, old: str | None, new: str) -> str | None:
        """Move the target from `old` to `new` (a descendant); None when it moved, "wait:WHY"
        when the human's edits are in the way, else why it did not move (it moved meanwhile)."""
        if not self.checked_out():
            ok = git.set_ref(self.repo, self.ref, new, old=old or git.ZERO, env=self.env)
            return None if ok else f"{self.target} moved meanwhile"
        self.pn("sync")  # what the checkout's pensa files hold, first
        done = git.command(self.repo, "merge", "--ff-only", "-q", new, env=self.env)
        if done.ok:
            self.pn("sync", "--adopt")
            return None
        if self.target_tip() != old or "index.lock" in done.stderr:
            return f"{self.target} moved meanwhile"
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        return "wait:" + (lines[0] if lines else "git merge --ff-only refused")

    def move_checkout(self, old: str, new: str) -> str | None:
        """Move the target from `old` to `new`, which need not descend from it (a replay onto
        the remote's tip): the checkout's uncommitted edits are carried over, or nothing
        moves. None when it moved, else why not."""
        if not self.checked_out():
            ok = git.set_ref(self.repo, self.ref, new, old=old, env=self.env)
            return None if ok else f"{self.target} moved meanwhile"
        if git.head(self.repo, env=self.env) != old:
            return f"{self.target} moved meanwhile"
        self.pn("sync")
        done = git.command(self.repo, "read-tree", "-m", "-u", old, new, env=self.env)
        if not done.ok:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            return lines[0].strip() if lines else "git read-tree refused"
        if not git.set_ref(self.repo, self.ref, new, old=old, env=self.env):
            git.command(self.repo, "read-tree", "-m", "-u", new, old, env=self.env)
            return f"{self.target} moved meanwhile"
        # merged, not adopted: the files hold other machines' work now (their closes, their
        # new issues), which the database must learn before a loop exports it again
        self.pn("sync")
        return None

    def pn(self, *args: str) -> None:
        """Run pn in the project (its own database); skipped without pn or pensa."""
        if proc.which("pn") is None or not (self.repo / ".pensa").is_dir():
            return
        env = {k: v for k, v in (self.env or os.environ).items() if k != "PN_SHARED_DB"}
        proc.run(["pn", *args], cwd=self.repo, env=env, check=False, timeout=120)

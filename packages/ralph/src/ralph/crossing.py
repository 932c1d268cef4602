"""A loop's work coming home: from the agent's workspace, through the checks, to the branch.

The one path every loop's commits take (Docker and `--sandbox none`, one loop or many):

1. before an iteration, the workspace is aimed at the target's tip (or the loop's waiting
   commits): the sandbox moves the agent's repository there itself (inside/workspace.sh);
2. after it, the sandbox bundles the commits the host lacks; the host takes them as data
   into `refs/sgf/incoming/<loop>` (inbox.py), vets them (quarantine.py), has them checked
   (check/step.py: the tasks' Verify commands or `--check-command`, and the check agent),
   lands them on the target (integrate.py) and pushes (publish.py);
3. when the loop stops, however it stops, the sandbox commits what the agent left
   uncommitted to a stash commit; it crosses the same way, and the human finds it in `git
   stash list` as `sgf-recovery <loop> <time>`. The workspace is then removed.

A workspace whose ralph died (kill -9) is found by the next ralph of the project, which does
step 3 for it: its commits wait on `sgf/<loop>` and its leftovers go to the stash.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from ralph import git, inbox, integrate, pncli, proc, publish, quarantine, workspace
from ralph.errors import RalphError
from ralph.models import Config, SandboxKind
from ralph.sandbox.base import Place, Sandbox
from ralph.shared import pids
from ralph.shared.protected import Protected
from ralph.workspace import Owner, Workspace

INCOMING = "refs/sgf/incoming/"
EXPORT, LEFTOVERS = "refs/ralph/export", "refs/ralph/leftovers"
# The host's own commits are no news: only what no branch, tag or remote has is vetted.
KNOWN = ("--branches", "--tags", "--remotes")


class NoTarget(RalphError):
    """The loop has no branch to bring its commits to."""

    code = "no_target"


@dataclass
class Crossing:
    """One loop's workspace, and its way back to the target branch."""

    config: Config
    env: Mapping[str, str]
    repo: Path  # the project's work tree top
    lane: integrate.Lane
    ws: Workspace
    place: Place
    guard: quarantine.Guard
    quarantined: set[str] = field(default_factory=set)  # tips kept on a quarantine ref
    rejected: set[str] = field(default_factory=set)  # tips a check set aside: never landed

    def workdir(self, config: Config) -> Path:
        """Where the agent works, as it sees it: in Docker its workspace is mounted at the
        project's own path; on the host it is the workspace's folder."""
        inside = config.project.relative_to(self.repo)
        if config.sandbox is SandboxKind.DOCKER:
            return config.project
        return self.ws.repo / inside

    @property
    def incoming(self) -> str:
        return INCOMING + workspace.stem(self.config.loop_id)

    # -- before and after an iteration ---------------------------------------------------

    def aim(self) -> None:
        """Point the next iteration at the target's tip, or at the loop's waiting commits."""
        base = self.lane.base() or ""
        self.place.base = base
        self.ws.update(base=base)
        with contextlib.suppress(OSError):  # the agent may have made its outbox read-only
            os.chmod(self.ws.out, 0o700)
        for name in ("workspace.bundle", "exported"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.ws.out / name)  # a link planted there goes, nothing behind it

    def receive(self, box: Sandbox, wanted: Mapping[str, str]) -> dict[str, str]:
        """Take what the sandbox exported (running the export again when the agent's run did
        not finish it); host ref -> commit."""
        if not os.path.lexists(self.ws.out / "exported"):
            done = box.step("export")
            if not done.ok:
                raise RalphError(
                    "the workspace's commits could not be exported: "
                    + (done.stderr.strip().splitlines() or ["no output"])[-1]
                )
        return inbox.receive(self.repo, self.ws.bundle, wanted, env=self.env)

    def take(self, box: Sandbox) -> str | None:
        """The iteration's new commits, vetted, on the incoming ref; None when there are
        none. Raises Quarantined (nothing lands) when they must not land."""
        taken = self.receive(box, {EXPORT: self.incoming})
        tip = taken.get(self.incoming)
        if tip is None:
            return None
        self.place.taken = tip
        self.ws.update(taken=tip)
        try:
            self.guard.check(tip, self._known())
        except quarantine.Quarantined:
            self.quarantined.add(tip)
            raise
        return tip

    def _known(self) -> list[str]:
        return [*KNOWN, *([self.place.base] if self.place.base else [])]

    def land(self, tip: str, check: integrate.Gate | None) -> integrate.Landed | None:
        """Land `tip`'s commits on the target (integrate.Lane.land)."""
        try:
            return self.lane.land(tip, gate=check)
        except integrate.IntegrationFailed as e:
            if e.kept is not None and e.set_aside:  # the stop's export must not land them
                self.rejected.add(tip)
            raise

    def push(self) -> publish.Pushed:
        return publish.push(self.lane)

    def unpushed(self) -> int:
        return publish.ahead(self.lane)

    # -- the stop -----------------------------------------------------------------------

    def finish(self, box: Sandbox, *, land: bool, check: integrate.Gate | None) -> list[str]:
        """Bring back what the loop left: its last commits (landed when `land`, else kept on
        the loop's branch) and its uncommitted leftovers (a stash); then remove the
        workspace. Lines for the human; the workspace stays when something could not cross."""
        said: list[str] = []
        self.place.stamp = f"sgf-recovery {self.config.loop_id} {_now()}"
        kept = self.incoming + "-leftovers"
        try:
            done = box.step("leftovers")
            if not done.ok:
                raise RalphError("the sandbox could not gather the leftovers: " + _last(done))
            taken = inbox.receive(
                self.repo, self.ws.bundle, {EXPORT: self.incoming, LEFTOVERS: kept}, env=self.env
            )
            tip = taken.get(self.incoming)
            if tip is not None and tip not in self.quarantined | self.rejected:
                self.guard.check(tip, self._known())
                said += self._bring(tip, land=land, check=check)
            if (stash := taken.get(kept)) is not None:
                said.append(self._stash(stash))
                git.delete_ref(self.repo, kept, env=self.env)
        except RalphError as e:
            said.append(f"warning: the workspace {self.ws.home} is kept: {e}")
            return said
        if waiting := self.lane.waiting():
            said.append(
                f"{waiting} commit(s) of the loop wait on {self.lane.loop_branch}: "
                f"`git merge --ff-only {self.lane.loop_branch}` once {self.lane.target} can take "
                "them"
            )
        git.delete_ref(self.repo, self.incoming, env=self.env)  # landed, waiting or kept
        if self.quarantined or not workspace.park(self.ws):  # an agent's traps go with it
            workspace.remove(self.ws)
        return said

    def _bring(self, tip: str, *, land: bool, check: integrate.Gate | None) -> list[str]:
        if not land:
            git.set_ref(self.repo, self.lane.loop_ref, tip, env=self.env)
            return [f"the loop's last commits are on {self.lane.loop_branch}"]
        try:
            landed = self.lane.land(tip, gate=check)
        except integrate.IntegrationFailed as e:
            if e.kept is None:  # a conflict: the workspace stays
                raise
            return [f"warning: {e}; its commits are on {e.kept}"]  # the check said no
        if landed is None:
            return []
        if landed.waiting:
            return [f"{self.lane.loop_branch} waits: {landed.waiting}"]
        return [
            f"{self.lane.target} fast-forwarded to {landed.tip[:12]}: {landed.commits} commit(s)"
        ]

    def _stash(self, stash: str) -> str:
        stamp = self.place.stamp
        hits = self.guard.stash_findings(stash)
        if hits:
            ref = self.guard.free_ref(self.guard.stem + "-leftovers")
            git.set_ref(self.repo, ref, stash, env=self.env)
            return (
                f"the ended loop's uncommitted changes touch protected paths "
                f"({', '.join(hits[:8])}): kept on {ref}, not in your stash; review them with "
                f"`git show --stat {ref}` before taking anything from them"
            )
        done = git.command(self.repo, "stash", "store", "-m", stamp, stash, env=self.env)
        if not done.ok:
            ref = self.guard.free_ref(self.guard.stem + "-leftovers")
            git.set_ref(self.repo, ref, stash, env=self.env)
            return f"the ended loop's uncommitted changes are kept on {ref}"
        return (
            f"uncommitted changes of the ended loop kept as stash {stamp!r} ({stash[:12]}); "
            "get them back with `git stash list` and `git stash pop`"
        )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _last(done: proc.Completed) -> str:
    lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"exit {done.returncode}"


def target_of(config: Config, repo: Path, env: Mapping[str, str]) -> str:
    """The branch the loop's commits go to: `--integrate BRANCH`, else the checked-out one."""
    if config.integrate:
        return config.integrate
    current = git.branch(repo, env=env)
    if current is None:
        raise NoTarget(
            f"HEAD is detached in {repo}: the loop brings its commits to the branch checked out "
            "there; `git switch <branch>` first (or pass --integrate BRANCH)"
        )
    return current


def open_(config: Config, env: Mapping[str, str], *, uid: int, gid: int) -> Crossing | None:
    """The loop's crossing, its workspace made; None when the project is no git repository
    (the agent then works in the folder itself: there is no git to guard)."""
    repo = git.toplevel(config.project, env=env)
    if repo is None:
        return None
    target = target_of(config, repo, env)
    lane = integrate.Lane(repo, target, config.loop_id, env=env)
    owner = Owner(
        loop_id=config.loop_id,
        project=str(repo),
        branch=target,
        pid=os.getpid(),
        start=pids.start_time(os.getpid()),
        sandbox=config.sandbox.value,
        template=config.template,
        user=f"{uid}:{gid}",
    )
    ws = workspace.create(repo, owner, env=env, uid=uid, gid=gid)
    pensa = repo / ".pensa"
    place = Place(
        workspace=ws,
        top=repo,
        branch=target,
        objects=git.objects_dir(repo, env=env),
        pensa=pensa if pensa.is_dir() and not pensa.is_symlink() else None,
    )
    if place.pensa is not None:
        # the loops claim in this database: it must exist and hold the checkout's files
        pncli.run(["sync"], cwd=repo, env={k: v for k, v in env.items() if k != "PN_SHARED_DB"})
    guard = quarantine.Guard(
        repo, protected=Protected.with_extra(config.protect), loop_id=config.loop_id, env=env
    )
    return Crossing(config, env, repo, lane, ws, place, guard)


def recover(config: Config, env: Mapping[str, str], state: Path) -> list[str]:
    """Bring back the workspaces of this project's loops whose ralph died: their commits
    wait on `sgf/<loop>` (vetted), their leftovers go to the stash; lines for the human.

    Each is brought back the way its loop ran: in a container from the loop's own image, or
    on the host for a loop that ran there; a Docker workspace is never touched without
    Docker."""
    repo = git.toplevel(config.project, env=env)
    if repo is None:
        return []
    said: list[str] = []
    for ws, owner in workspace.dead(repo, env):
        if owner.loop_id == config.loop_id:
            continue  # this very loop's, reused below
        kind = SandboxKind(owner.sandbox) if owner.sandbox in ("docker", "none") else None
        if kind is None:
            continue
        try:
            with ws.locked():
                said += _recover_one(config, env, state, repo, ws, owner, kind)
        except workspace.WorkspaceBusy:
            continue
        except RalphError as e:
            said.append(f"warning: loop {owner.loop_id}'s workspace stays at {ws.home}: {e}")
    return said


def _recover_one(
    config: Config,
    env: Mapping[str, str],
    state: Path,
    repo: Path,
    ws: Workspace,
    owner: Owner,
    kind: SandboxKind,
) -> list[str]:
    from ralph import sandbox as sandboxes

    dead = replace(config, loop_id=owner.loop_id, sandbox=kind, template=owner.template)
    pensa = repo / ".pensa"
    place = Place(
        workspace=ws,
        top=repo,
        branch=owner.branch,
        objects=git.objects_dir(repo, env=env),
        pensa=pensa if pensa.is_dir() and not pensa.is_symlink() else None,
        base=owner.base,
        taken=owner.taken,
    )
    box = sandboxes.make(dead, env=env, state=state, place=place)
    try:
        # nothing of the dead loop may write the workspace meanwhile
        removed = [f"removed leftover {leftover}" for leftover in box.remove_leftovers()]
        lane = integrate.Lane(repo, owner.branch, owner.loop_id, env=env)
        guard = quarantine.Guard(
            repo, protected=Protected.with_extra(config.protect), loop_id=owner.loop_id, env=env
        )
        crossing = Crossing(dead, env, repo, lane, ws, place, guard)
        crossing.quarantined.add("")  # a crashed loop's workspace is never parked
        said = crossing.finish(box, land=False, check=None)
    finally:
        box.close()
    return [
        *removed,
        f"recovered the workspace of loop {owner.loop_id}, whose ralph is gone",
        *said,
    ]

"""Pre-launch recovery: after a crash, put the leftovers somewhere safe; destroy nothing.

- A live loop (any PID file whose process exists): touch nothing. The dirty tree and the
  claims may be that loop's work in progress.
- PID files, all stale (a crashed loop): stash the dirty tree as `sgf-recovery <ids> <time>`
  (untracked files included, ignored ones untouched), remove the stale PID files, release the
  crashed loops' claims (see `crashed_claims`) and run `pn doctor --fix`.
- A loop of this tree that stopped (Ctrl+C, SIGTERM/SIGHUP, a budget, `s` in `sgf top`, any
  ending but "complete") while sgf lived: sgf keeps its leftovers the crash's way, before it
  removes the PID file (`keep_stopped`), so the next launch starts without `--stash`.
- No PID files (no crash): a dirty tree is the user's. Launching would let the agent's
  `git add -A` sweep it into a commit, so refuse unless asked to stash it as `sgf-stash <id>`.
- Loops in worktrees of their own leave nothing in this tree: an isolated launch
  ignores a dirty tree here, and a crashed isolated loop's worktree is removed when its branch
  is merged (its leftovers stashed), else kept with its branch for a human.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sgf import config, git, pncli, protected, runs, worktree
from sgf.errors import DirtyTree, SgfError
from sgf.loops import LoopId


@dataclass(frozen=True, slots=True)
class Report:
    """What pre-launch recovery found and did."""

    live: list[str] = field(default_factory=list)  # loops running: nothing was touched
    crashed: list[str] = field(default_factory=list)  # stale PID files removed
    stash: str | None = None  # commit id of the stash made, if any
    stash_message: str | None = None
    # protected paths in the stash: popping it unreviewed could run an agent's choices
    stash_protected: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)  # claims given back
    warnings: list[str] = field(default_factory=list)


# pensa's files are the tracker's, not anyone's leftovers: every pn write (ralph's release as
# a loop ends, too) rewrites and stages `.pensa/*.jsonl` from the database. Stashing them would
# put the tracker's newest state aside (the next pn reads the older committed files back),
# and refusing them would refuse every launch after a loop gave its claims back.
TRACKER = (".pensa",)


def _stash(root: Path, message: str) -> str | None:
    if git.is_dirty(root, exclude=TRACKER) and not git.has_commits(root):
        raise DirtyTree(
            "the work tree has changes but the repository has no commit yet, so they cannot "
            "be stashed; commit them first (git add -A && git commit)"
        )
    return git.stash_all(root, message, exclude=TRACKER)


@dataclass(frozen=True, slots=True)
class Kept:
    """An ended loop's leftovers, put aside as a stash."""

    stash: str  # the stash's commit id
    message: str  # `sgf-recovery <loop-ids> <time>`
    # protected paths in the stash: popping it unreviewed could run an agent's choices
    protected: list[str] = field(default_factory=list)

    def line(self) -> str:
        """The one line that tells the human where the leftovers went."""
        kept = f"uncommitted changes of the ended loop kept as stash {self.message!r}"
        if self.protected:
            return (
                f"{kept} ({self.stash[:12]}); they change protected paths "
                f"({', '.join(self.protected)}): review them with `git stash show -p "
                f"{self.stash[:12]}` before taking anything back, never pop them blind"
            )
        return (
            f"{kept} ({self.stash[:12]}); get them back with `git stash list` and `git stash pop`"
        )


def keep_leftovers(root: Path, loops: list[str], *, now: Callable[[], datetime]) -> Kept | None:
    """Put what `loops` left uncommitted in this tree aside as `sgf-recovery <ids> <time>`.

    The one step that keeps an ended loop's leftovers, after a crash and after a stop alike,
    so a rule about what may be kept lives in one place. Untracked files go into the stash,
    ignored ones stay; nothing is deleted."""
    message = f"sgf-recovery {' '.join(loops)} {runs.now_iso(now)}"
    control = protected.in_status(git.status(root), _extra_protected(root))
    stash = _stash(root, message)
    return Kept(stash, message, control) if stash else None


def keep_stopped(root: Path, loop_id: str, *, now: Callable[[], datetime]) -> Kept | None:
    """Keep the leftovers of `loop_id`, a loop of this tree that just stopped, as a crash's.

    Called while its PID file still exists: if sgf dies half-way, the next launch finds a
    crashed loop and keeps them itself. Another loop running in this tree may own the
    changes, so they stay where they are then (that loop's own ending keeps them)."""
    others = [
        p.loop_id
        for p in runs.scan(root)
        if p.loop_id != loop_id and p.alive() and not worktree.is_isolated(root, p.loop_id)
    ]
    if others or not git.is_dirty(root, exclude=TRACKER):
        return None
    return keep_leftovers(root, [loop_id], now=now)


def _users_changes(root: Path, loop_id: str, stash_them: bool, *, isolated: bool) -> Report:
    """Refuse a dirty tree (the agent's `git add -A` would sweep it up), or stash it when
    asked; an isolated loop works elsewhere, so the tree is left alone unless asked."""
    if not git.is_dirty(root, exclude=TRACKER) or (isolated and not stash_them):
        return Report()
    if not stash_them:
        changes = git.status(root, exclude=TRACKER)
        shown = "\n  ".join(changes[:10]) + ("\n  …" if len(changes) > 10 else "")
        if control := protected.in_status(changes, _extra_protected(root)):
            raise DirtyTree(
                f"the work tree has uncommitted changes:\n  {shown}\n"
                f"some change protected paths ({', '.join(control)}), which decide what runs "
                "on this machine; review them first (`git diff -- <path>`, never run them): "
                "commit them if they are yours, delete them if an agent made them; don't stash "
                "or check out what you have not reviewed"
            )
        raise DirtyTree(
            f"the work tree has uncommitted changes:\n  {shown}\n"
            "the agent commits with `git add -A` and would sweep them into its commit; "
            "commit them, run again with --stash to stash them first, or isolate the loop "
            "in a worktree of its own with --worktree"
        )
    message = f"sgf-stash {loop_id}"
    control = protected.in_status(git.status(root), _extra_protected(root))
    return Report(stash=_stash(root, message), stash_message=message, stash_protected=control)


def _extra_protected(root: Path) -> list[str]:
    """The project's own protected paths, when its config can be read."""
    try:
        return config.load(root).protected or []
    except SgfError:
        return []


def _loop_of(assignee: str | None) -> str:
    """The loop id in an assignee: `<loop-id>`, or `<loop-id>@<machine>` (claims via git)."""
    return (assignee or "").split("@", 1)[0]


def crashed_claims(
    claims: list[pncli.Issue], crashed: list[str], since: datetime
) -> list[pncli.Issue]:
    """The claims the crashed loops left behind.

    ralph sets PN_ACTOR to the loop id, so a loop's claims name it: those of a crashed loop
    are released whenever they were made, and those naming another loop are that loop's
    (pn doctor --fix frees them once stale). A claim by anyone else (a PN_ACTOR set on the
    host, which ralph passes through, or an older ralph's "unknown") counts when it was made
    since the crashed loop started.
    """
    return [
        issue
        for issue in claims
        if _loop_of(issue.assignee) in crashed
        or (LoopId.parse(_loop_of(issue.assignee)) is None and issue.updated_at >= since)
    ]


def prepare(
    root: Path,
    *,
    loop_id: str,
    stash_user_changes: bool,
    env: Mapping[str, str],
    now: Callable[[], datetime],
    isolated: bool = False,
) -> Report:
    """Make the tree ready for a new loop per the rules above; return what happened.

    An `isolated` loop works in a worktree of its own, so a dirty tree here is no reason to
    refuse it; a crashed isolated loop's leftovers are in its worktree, not here."""
    pid_files = runs.scan(root)
    live = [p.loop_id for p in pid_files if p.alive()]
    if live:
        return Report(live=live)
    if not pid_files:
        return _users_changes(root, loop_id, stash_user_changes, isolated=isolated)
    crashed = [p.loop_id for p in pid_files]
    # A crashed loop of this tree left its leftovers here; one in a worktree left them there,
    # and then a dirty tree here is the user's, as without any crash.
    if any(not worktree.is_isolated(root, c) for c in crashed):
        kept = keep_leftovers(root, crashed, now=now)
        stash, message = (kept.stash, kept.message) if kept else (None, None)
        control = kept.protected if kept else []
    else:
        mine = _users_changes(root, loop_id, stash_user_changes, isolated=isolated)
        stash, message = mine.stash, mine.stash_message
        control = mine.stash_protected
    warnings: list[str] = [
        worktree.finish(root, tree).message(root)
        for c in crashed
        if (tree := worktree.found(root, c)) is not None
    ]
    ended = runs.now_iso(now)
    for p in pid_files:
        p.path.unlink(missing_ok=True)
        started = p.started.strftime("%Y-%m-%dT%H:%M:%SZ")
        runs.record(root, runs.Outcome(p.loop_id, started, ended, None, "crashed"))
    # pn's timestamps have whole seconds; a claim in the loop's first second still counts.
    since = min(p.started for p in pid_files).replace(microsecond=0)
    released: list[str] = []
    try:
        for issue in crashed_claims(pncli.in_progress(root, env), crashed, since):
            pncli.release(root, env, issue.id)
            released.append(issue.id)
        pncli.doctor_fix(root, env)
    except SgfError as e:
        warnings.append(f"could not release claims: {e}")
    return Report(
        crashed=crashed,
        stash=stash,
        stash_message=message if stash else None,
        stash_protected=control if stash else [],
        released=released,
        warnings=warnings,
    )

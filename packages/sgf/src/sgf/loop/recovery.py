"""Pre-launch recovery: after a crash, make the project ready again; destroy nothing.

Agents never work in this tree (ralph gives every loop a workspace of its own), so the tree is
the human's: a dirty one is no reason to refuse a launch, and a loop's leftovers are never
here. What a crashed loop left in its workspace comes back when the next ralph starts (ralph's
crossing.recover): its commits on `sgf/<loop-id>`, its uncommitted changes as the stash
`sgf-recovery <loop-id> <time>`.

- A live loop (any PID file whose process exists): touch nothing.
- PID files, all stale (a crashed loop): remove the stale PID files, release the crashed
  loops' claims (see `crashed_claims`) and run `pn doctor --fix`.
- `--stash` asks to put the user's own changes aside first, as `sgf-stash <id>`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sgf import config, git, pncli, protected
from sgf.errors import DirtyTree, SgfError
from sgf.loop import runs
from sgf.loop.loops import LoopId


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


def _users_changes(root: Path, loop_id: str, stash_them: bool) -> Report:
    """Stash the user's changes when asked (`--stash`); otherwise they stay: no agent
    works in this tree."""
    if not stash_them or not git.is_dirty(root, exclude=TRACKER):
        return Report()
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
) -> Report:
    """Make the project ready for a new loop per the rules above; return what happened."""
    pid_files = runs.scan(root)
    live = [p.loop_id for p in pid_files if p.alive()]
    if live:
        return Report(live=live)
    mine = _users_changes(root, loop_id, stash_user_changes)
    if not pid_files:
        return mine
    crashed = [p.loop_id for p in pid_files]
    warnings: list[str] = []
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
        stash=mine.stash,
        stash_message=mine.stash_message,
        stash_protected=mine.stash_protected,
        released=released,
        warnings=warnings,
    )

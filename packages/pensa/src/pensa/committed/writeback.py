"""After a `pn` write in a repository set up by `pn init`: git must see that the tracker
changed, and must never be blocked by it.

Earlier versions wrote `.pensa/*.jsonl` out and staged them after every write. That cost a
write the whole export (and a `git add` of it), and a staged file made `git pull --rebase`,
`git merge`, `git cherry-pick` and `git switch` refuse until the human committed or threw the
exports away; loops that fast-forward the main checkout stopped after one task.

So a write leaves the committed files and the index alone: the database holds the change,
and `export_dirty` (`pensa.schema.m007_shards`) which shards it touched. git still has to see
that there is something to commit (it decides a commit is empty before any hook runs, so
`pn q "fix"; git add -A && git commit` would find nothing): pn leaves one untracked file,
`.pensa/uncommitted`, while the database holds changes the files lack. `git status` shows it,
`git add -A` stages it, and the pre-commit hook's `pn export --stage` writes the changed
shards, stages them and takes the marker out of the index and the work tree. Untracked, it
blocks no pull, merge, cherry-pick or switch; no commit ever carries it.

Outside such a repository nothing commits the files, so there is no marker (`pn export`
writes the files on demand).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

from pensa import git
from pensa.project import MARKER
from pensa.shared import hardgit

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.project import Project
    from pensa.store import Store

# The line `pn init` writes to `.gitattributes` (pensa.gitsetup.ATTRIBUTES_LINE), repeated
# here so a write need not import the set-up module.
ATTRIBUTES_LINE = ".pensa/*.jsonl merge=pensa"
# How long to wait for another git's index lock (a concurrent `git add` or commit).
INDEX_LOCK_WAIT = 2.0
MARKER_TEXT = (
    "pensa: the tracker has changes not yet in .pensa/*.jsonl. The next commit writes and\n"
    "stages them (pensa's pre-commit hook runs `pn export`, which also removes this file):\n"
    "`git add -A && git commit`. This file is never committed.\n"
)


# `.gitattributes` is read only this far: the work tree is the agent's to write, and a host
# `pn release` must not read a huge file, or hang on a FIFO put in its place.
ATTRIBUTES_MAX = 1 << 20


def set_up(project: Project) -> bool:
    """Whether `project` sits at the top of a git work tree that `pn init` set up (a
    `.gitattributes` that is a link, a FIFO, a device or too big says no)."""
    from pensa.errors import PensaError
    from pensa.safefile import read_regular

    top = os.path.dirname(project.dir)
    if not os.path.exists(os.path.join(top, ".git")):
        return False
    try:
        data = read_regular(os.path.join(top, ".gitattributes"), limit=ATTRIBUTES_MAX)
    except PensaError:
        return False
    text = (data or b"").decode("utf-8", "replace")
    return any(line.strip() == ATTRIBUTES_LINE for line in text.splitlines())


def marker(project: Project) -> str:
    """The path of the marker file."""
    return os.path.join(project.dir, MARKER)


def mark(project: Project, *, pending: bool) -> None:
    """Leave the marker while the database holds changes the files lack (in a repository
    set up by `pn init`), else remove it."""
    path = marker(project)
    if not pending:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # (a link planted by that name is removed, never followed)
        return
    if os.path.lexists(path) or not set_up(project):
        return
    from pensa.safefile import write_atomically

    write_atomically(path, MARKER_TEXT)


def write_back(store: Store, project: Project) -> None:
    """After a command that changed the tracker: the marker, when something is to commit."""
    if store.rows("SELECT 1 FROM export_dirty LIMIT 1"):
        mark(project, pending=True)


def stage(project: Project, *, cwd: str, env: Mapping[str, str], unmark: bool) -> None:
    """`git add` the committed files (pensa's own, by name: another file an agent left in
    `.pensa/` is not swept in), and take the marker out of the index when `unmark` (it was
    there to be found by `git add -A`), waiting a little for another git's index lock.
    `GitFailed` when git refuses."""
    from pensa.committed.disk import fingerprints, ordered
    from pensa.errors import GitFailed

    rel = os.path.relpath(project.dir, cwd)
    names = [os.path.join(rel, name) for name in ordered(fingerprints(project))]
    steps = [["add", "-A", "--", *names]]
    if unmark:
        steps.append(["update-index", "--force-remove", "--", os.path.join(rel, MARKER)])
    for args in steps:
        done = _locked_git(args, cwd=cwd, env=env)
        if done.code != 0:
            why = (done.err.strip().splitlines() or [f"exit {done.code}"])[-1]
            raise GitFailed(f"git {args[0]} failed ({done.code}): {why}")


def _locked_git(args: list[str], *, cwd: str, env: Mapping[str, str]) -> git.Done:
    deadline = time.monotonic() + INDEX_LOCK_WAIT
    while True:
        # The repository's configuration is the agent's to write when pn runs on the host
        # (sgf's `pn release`): no hook or fsmonitor it names may run (pensa.shared.hardgit).
        done = git.run([*hardgit.OPTIONS, *args], cwd=cwd, env=env)
        if done.code == 0 or "index.lock" not in done.err or time.monotonic() > deadline:
            return done
        time.sleep(0.02)

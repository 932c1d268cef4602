"""After a `pn` write: the JSONL on disk written out and staged, so git sees the change.

git decides whether a commit is empty before it runs the pre-commit hook, and does not look
again after the hook's `pn export` and `git add`: `pn q "fix"; git add -A && git commit`
failed with "nothing to commit" and left the files staged for a second try. So in a
repository set up for pensa (`pn init`: its `.gitattributes` line), every command that
changed the tracker ends by writing the files and staging them: `git add -A && git commit`,
`git commit -a` and a bare `git commit` all see the change, and the hook's export then
finds nothing left to do, leaving the tree clean.

Outside such a repository nothing commits the files, so writes leave them alone (`pn
export` writes them on demand). A staging that fails (another git holds the index lock for
long) is said in one line and costs nothing: the files on disk are current, and the
pre-commit hook stages them.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.project import Project
    from pensa.store import Store

# The line `pn init` writes to `.gitattributes` (pensa.gitsetup.ATTRIBUTES_LINE), repeated
# here so a write need not import the set-up module.
ATTRIBUTES_LINE = ".pensa/*.jsonl merge=pensa"
# The repository's configuration is the agent's to write when pn runs on the host (sgf's
# `pn release`): no hook or fsmonitor it names may run (as sgf's and ralph's own git).
HARDENED = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
# How long to wait for another git's index lock (a concurrent `git add` or commit).
INDEX_LOCK_WAIT = 2.0


# `.gitattributes` is read only this far: the work tree is the agent's to write, and a host
# `pn release` must not read a huge file, or hang on a FIFO put in its place.
ATTRIBUTES_MAX = 1 << 20


def set_up(project: Project) -> bool:
    """Whether `project` sits at the top of a git work tree that `pn init` set up (a
    `.gitattributes` that is a link, a FIFO, a device or too big says no)."""
    from pensa.committed.files import read_regular
    from pensa.errors import PensaError

    top = os.path.dirname(project.dir)
    if not os.path.exists(os.path.join(top, ".git")):
        return False
    try:
        data = read_regular(os.path.join(top, ".gitattributes"), limit=ATTRIBUTES_MAX)
    except PensaError:
        return False
    text = (data or b"").decode("utf-8", "replace")
    return any(line.strip() == ATTRIBUTES_LINE for line in text.splitlines())


def write_back(
    store: Store, project: Project, *, cwd: str, env: Mapping[str, str], shared: bool
) -> str | None:
    """Write the files out (merging edits made to them first) and stage them; a line to
    show when staging failed, else None."""
    from pensa.committed import shared as shared_db
    from pensa.committed import sync

    if shared:  # a worktree loop's files are exports of the shared database, as it is
        shared_db.export(store, project)
    else:
        sync.export(store, project, env)
    return stage(project, cwd=cwd, env=env)


def stage(project: Project, *, cwd: str, env: Mapping[str, str]) -> str | None:
    """`git add` the files, waiting a little for another git's index lock."""
    from pensa import git

    deadline = time.monotonic() + INDEX_LOCK_WAIT
    while True:
        done = git.run([*HARDENED, "add", "--", *project.jsonl_files()], cwd=cwd, env=env)
        if done.code == 0:
            return None
        if "index.lock" not in done.err or time.monotonic() > deadline:
            why = (done.err.strip().splitlines() or [f"exit {done.code}"])[-1]
            return f"pn: warning: .pensa/*.jsonl written but not staged: {why}"
        time.sleep(0.02)

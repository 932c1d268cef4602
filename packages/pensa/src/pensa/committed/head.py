"""What the last commit holds of `.pensa/`: the base of the merging sync in a git repository.

The sync (`committed.sync`) merges the files on disk into the database against a base. That base
used to be the files as pensa last wrote them, so after a `pn export` (or the export of a
commit another hook then aborted) a file put back to its committed version (`git checkout --`,
`git restore`, `git reset --hard`, `git stash`) looked like a deletion of every issue, claim,
comment and dependency never committed: they were removed, with no tombstone. In a git work
tree the base is what HEAD holds instead: what exists only in the database is then never
in the base, so no way of throwing files away can look like its removal, while what a commit
held and a later checkout no longer holds still follows the checkout.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pensa.committed.disk import FILES

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pensa.project import Project

# As in pensa.committed.writeback: the repository's configuration chooses nothing that runs.
HARDENED = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def in_git(project: Project) -> bool:
    """Whether `project` sits at the top of a git work tree (its parent holds `.git`)."""
    return os.path.exists(os.path.join(os.path.dirname(project.dir), ".git"))


def head_files(project: Project, env: Mapping[str, str] | None) -> dict[str, bytes] | None:
    """Each committed file's bytes in HEAD (missing, or no commit yet: empty); None outside
    a git work tree or when no `env` is given (then the files on disk are the base)."""
    if env is None or not in_git(project):
        return None
    from pensa import git

    started = {
        name: git.start([*HARDENED, "cat-file", "blob", f"HEAD:./{name}"], cwd=project.dir, env=env)
        for name in FILES
    }
    out = {}
    for name, run in started.items():
        done = run.wait()
        out[name] = run.raw_out if done.code == 0 else b""
    return out

"""The repository as the hooks see it: its uncommitted paths, and the guard's facts about it.

The hooks run inside the sandbox as the agent, so they start git (and pn, and the formatter)
themselves: ralph's proc.py is not there. The repository's config is the agent's to write, so
git runs with none of the hooks or monitors it could name. Standard library only (sandbox).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from ralph.inside import baseline

GIT = ("git", "--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def run(argv: Sequence[str], cwd: str, timeout: float = 60) -> str | None:
    """stdout of a command that succeeded, or None."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def dirty(project: str) -> list[str]:
    """Uncommitted paths (changed, staged or untracked), sentinel files left out."""
    return baseline.status_paths(run([*GIT, *baseline.STATUS], project) or "")


class Repo:
    """guard.Facts: the repository now, against what ralph recorded before the iteration."""

    def __init__(self, project: str, start: baseline.Baseline | None) -> None:
        self.project = project
        self.start = start

    def foreign_changes(self) -> list[str]:
        now = dirty(self.project)
        if self.start is None or self.start.dirty is None:
            return now  # no record of the start: any change may be someone else's
        before = set(self.start.dirty)
        return [p for p in now if p in before]

    def keeps_commits(self, ref: str, target: str | None) -> bool:
        if self.start is None:  # no record: the commit it holds now is one to keep
            had = (self._rev(ref) or "").strip()
        else:
            had = self.start.head if ref == "HEAD" else self.start.refs.get(ref, "")
        if not had:
            return True  # a ref this iteration made, or a HEAD with no commit yet
        argv = [*GIT, "merge-base", "--is-ancestor", "--end-of-options", had, target or "HEAD"]
        return run(argv, self.project) is not None

    def names_commit(self, word: str) -> bool:
        return self._rev(word + "^{commit}") is not None

    def _rev(self, name: str) -> str | None:
        return run([*GIT, "rev-parse", "--verify", "-q", "--end-of-options", name], self.project)

"""Replaying a loop's commits onto a branch that moved, away from everybody's work tree.

When the branch a loop integrates into has moved since the iteration started (another loop
landed, the human committed, the remote got ahead), the loop's commits are rebased onto it.
That happens in a private worktree of the project's repository made for the purpose in a
temporary folder (ralph's own state: nobody else's edits are in it) and removed afterwards,
so neither the human's checkout nor the agent's workspace is touched, and a conflict is
simply abandoned with the worktree. `.pensa/` files merge through pensa's driver, as the
project's configuration registers it; the repository's rebase settings that would reach
beyond the replay (updating other branches, signing the agent's commits with the human's
key, autosquash) are off.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ralph import git
from ralph.errors import RalphError

_SETTINGS = (
    "-c", "rebase.updateRefs=false", "-c", "rebase.autoSquash=false",
    "-c", "rebase.autoStash=false", "-c", "rebase.missingCommitsCheck=ignore",
    "-c", "commit.gpgSign=false", "-c", "core.quotePath=true",
)  # fmt: skip


class ReplayConflict(RalphError):
    """The commits do not apply to the moved branch; the files that conflict are named."""

    code = "integration_conflict"

    def __init__(self, files: list[str], detail: str = "") -> None:
        self.files = files
        super().__init__(detail or ", ".join(files))


@dataclass(frozen=True, slots=True)
class Replayed:
    """The replayed tip, and how many commits it has over `onto`."""

    tip: str
    commits: int


@contextlib.contextmanager
def _worktree(repo: Path, start: str, env: Mapping[str, str] | None) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ralph-replay-"))
    tree = folder / "tree"
    try:
        added = git.command(repo, "worktree", "add", "-q", "--detach", str(tree), start, env=env)
        if not added.ok:
            raise RalphError(f"cannot make a worktree to replay in: {added.stderr.strip()}")
        yield tree
    finally:
        git.command(repo, "worktree", "remove", "--force", str(tree), env=env)
        shutil.rmtree(folder, ignore_errors=True)
        git.command(repo, "worktree", "prune", env=env)


def replay(
    repo: Path, tip: str, upstream: str, onto: str, *, env: Mapping[str, str] | None
) -> Replayed:
    """The commits of `tip` that `upstream` lacks, rebased onto `onto` (already there: kept
    as they are). Raises ReplayConflict, having changed no ref, when they do not apply."""
    if git.is_ancestor(repo, onto, tip, env=env):
        return Replayed(tip, git.count(repo, f"{onto}..{tip}", env=env))
    with _worktree(repo, tip, env) as tree:
        done = git.command(tree, *_SETTINGS, "rebase", "-q", "--onto", onto, upstream, env=env)
        if not done.ok:
            conflicted = git.command(
                tree, "-c", "core.quotePath=true", "diff", "--name-only", "--diff-filter=U",
                env=env,
            ).stdout.split()  # fmt: skip
            git.command(tree, "rebase", "--abort", env=env)  # the worktree is ralph's own
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise ReplayConflict(conflicted, "" if conflicted else (lines[-1] if lines else ""))
        new = git.head(tree, env=env)
    if new is None:
        raise RalphError("the replay left no commit")
    return Replayed(new, git.count(repo, f"{onto}..{new}", env=env))

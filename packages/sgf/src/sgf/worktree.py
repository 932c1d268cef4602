"""Isolated loops: each in `.sgf/worktrees/<loop-id>`, on branch `sgf/<loop-id>`.

A loop in the shared tree commits with `git add -A`, so a second loop beside it (a plan loop
next to a build loop) can sweep the other's half-done edits into its commit. A worktree loop
has a work tree of its own, made from HEAD, and shares only what must be shared: the git
objects and refs, and the main checkout's pensa database (`PN_SHARED_DB`, so claims stay
atomic). After every iteration with commits, ralph rebases the loop's branch onto the branch
the main checkout had and fast-forwards that branch (`ralph --integrate`); a conflict stops
the loop with its branch kept. When the loop ends with its branch merged, the worktree and
the branch are removed here; an unmerged branch stays for a human.

Worktrees are not the default: the shared tree needs no rebase, no second checkout on disk
(dependencies and build caches included, per loop), and shows the agent's edits in the
directory the developer has open, which the supervised first rounds of `sgf build` rely on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sgf import git, gitguard, pncli, safefile
from sgf.errors import SgfError, UnsafeRepository

WORKTREES = Path(".sgf") / "worktrees"
BRANCH_PREFIX = "sgf/"
# The folder ignores itself, so no tracked .gitignore changes (and no project needs one).
SELF_IGNORING = "# sgf: loop worktrees, never committed\n*\n"


@dataclass(frozen=True, slots=True)
class Worktree:
    """An isolated loop's checkout and where its commits go."""

    loop_id: str
    path: Path
    branch: str  # sgf/<loop-id>
    target: str  # the branch the main checkout had when the loop started
    common_dir: Path  # the repository's common git directory, read before any agent ran

    def ralph_flags(self, root: Path) -> list[str]:
        """ralph's flags for bringing this loop's commits to its target."""
        return ["--integrate", self.target, "--integrate-checkout", str(root)]

    def env(self, root: Path) -> dict[str, str]:
        """What the loop's ralph and agents need on top of sgf's environment."""
        return {"PN_SHARED_DB": str(root / ".pensa" / "db.sqlite")}


@dataclass(frozen=True, slots=True)
class Finished:
    """What became of a loop's worktree when the loop ended."""

    worktree: Worktree
    removed: bool
    unmerged: int = 0  # commits on the loop's branch that its target lacks
    stash: str | None = None  # uncommitted leftovers, stashed before the removal

    def message(self, root: Path) -> str:
        """One line for the user."""
        where = self.worktree.path.relative_to(root)
        if self.removed:
            stashed = (
                f"; its uncommitted changes are in stash {self.stash[:12]}" if self.stash else ""
            )
            return f"worktree {where} and branch {self.worktree.branch} removed{stashed}"
        return (
            f"branch {self.worktree.branch} holds {self.unmerged} commit(s) that "
            f"{self.worktree.target} lacks: kept, with its worktree {where}; rebase it onto "
            f"{self.worktree.target} and merge it (then `git worktree remove {where}`)"
        )


def path_of(root: Path, loop_id: str) -> Path:
    """Where loop `loop_id` has its worktree."""
    return root / WORKTREES / loop_id


def is_isolated(root: Path, loop_id: str) -> bool:
    """Tell whether loop `loop_id` runs (or ran) in a worktree of its own."""
    return path_of(root, loop_id).is_dir()


def taken(root: Path, loop_id: str) -> bool:
    """Tell whether a worktree or branch already carries this loop id."""
    return is_isolated(root, loop_id) or git.rev(root, BRANCH_PREFIX + loop_id) is not None


def common_dir(root: Path) -> Path:
    """The repository's common git directory (where a linked worktree's objects live)."""
    return git.common_dir(root)


def create(root: Path, loop_id: str, *, env: Mapping[str, str]) -> Worktree:
    """Make `.sgf/worktrees/<loop-id>` on a new branch `sgf/<loop-id>` from HEAD."""
    target = git.current_branch(root)
    if target is None:
        raise SgfError(
            "HEAD is detached: an isolated loop brings its commits to the branch checked out "
            "here; `git switch <branch>` first"
        )
    if not git.has_commits(root):
        raise SgfError("the repository has no commit yet: commit once, then start the loop")
    ignore = safefile.folder(root / WORKTREES, root=root) / ".gitignore"
    if not ignore.exists():
        safefile.replace(ignore, SELF_IGNORING.encode(), root=root)
    # The loops claim from this database: it must exist and hold this checkout's files.
    pncli.sync(root, env)
    path = path_of(root, loop_id)
    branch = BRANCH_PREFIX + loop_id
    git.worktree_add(root, path, branch, "HEAD")
    return Worktree(loop_id, path, branch, target, common_dir(root))


def finish(root: Path, tree: Worktree) -> Finished:
    """Remove the loop's worktree and branch when the target has all its commits; else keep.

    Uncommitted leftovers (an interrupted iteration's) are stashed first, never deleted."""
    try:  # every host git checks this; here the message says what is kept
        gitguard.check(root)
    except UnsafeRepository as e:
        raise UnsafeRepository(f"{e}; worktree {tree.path} and branch {tree.branch} kept") from e
    head = git.rev(root, tree.branch)
    if head is not None and not git.is_ancestor(root, head, tree.target):
        return Finished(tree, removed=False, unmerged=git.count(root, f"{tree.target}..{head}"))
    stash = None
    if tree.path.is_dir() and git.is_dirty(tree.path):
        stash = git.stash_all(tree.path, f"sgf-worktree {tree.loop_id}")
    if tree.path.exists():
        git.worktree_remove(root, tree.path)
    if head is not None:
        git.delete_branch(root, tree.branch)
    return Finished(tree, removed=True, stash=stash)


def found(root: Path, loop_id: str) -> Worktree | None:
    """The worktree a loop left (after a crash, say), as `finish` needs it; None if none."""
    path = path_of(root, loop_id)
    if not path.is_dir():
        return None
    target = git.current_branch(root) or "HEAD"
    return Worktree(loop_id, path, BRANCH_PREFIX + loop_id, target, common_dir(root))

"""Small named git operations, all through proc.run."""

from __future__ import annotations

from pathlib import Path

from sgf import proc
from sgf.errors import InsideGitDir, NotAGitRepo

# Repository configuration is attacker input (the threat model of git's safe.directory work
# and CVE-2022-24765): an agent in the sandbox can write the work tree, so nothing ralph or
# sgf runs on the host may let the repository choose what executes. Hooks point at a
# directory that holds none, fsmonitor and pagers are off, and the `ext::` transport is
# refused; `-c` reaches every git this one spawns (GIT_CONFIG_PARAMETERS), submodules too.
# .git/config, .git/hooks and .git/info are read-only inside the container (ralph's
# sandbox), so filters, drivers and includes there are the developer's own.
HARDENED = (
    "git",
    "--no-pager",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "diff.external=",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "submodule.recurse=false",
)


def _git(*args: str, cwd: Path, check: bool = True) -> proc.Result:
    """Run git hardened against repository configuration (see HARDENED)."""
    return proc.run([*HARDENED, *args], cwd=cwd, check=check)


def toplevel(cwd: Path) -> Path:
    """Return the work tree root containing `cwd`; NotAGitRepo, or InsideGitDir in `.git`."""
    result = _git("rev-parse", "--show-toplevel", cwd=cwd, check=False)
    if result.returncode != 0:
        # `git init` here (sgf init --git-init) would nest a repository inside the git dir.
        inside = _git("rev-parse", "--is-inside-git-dir", cwd=cwd, check=False)
        if inside.returncode == 0 and inside.stdout.strip() == "true":
            raise InsideGitDir(cwd)
        raise NotAGitRepo(cwd)
    return Path(result.stdout.strip())


def init(cwd: Path) -> Path:
    """Run `git init` in `cwd` and return the new work tree root."""
    _git("init", "--quiet", cwd=cwd)
    return toplevel(cwd)


# pensa's `.pensa/*.jsonl` are exports of its database, written and staged by every `pn`
# write: not the user's uncommitted work. They are neither reported nor stashed (stashing
# them loses nothing either: pensa's sync base is what was committed, so files put back to
# it change nothing in the database, and the next write exports them again).
NOT_TRACKER_EXPORTS = ("--", ".", ":(exclude).pensa/*.jsonl")


def status(root: Path) -> list[str]:
    """Return `git status --porcelain` lines: modified, staged and untracked (not ignored),
    pensa's exports aside."""
    out = _git(
        "status", "--porcelain", "--untracked-files=all", *NOT_TRACKER_EXPORTS, cwd=root
    ).stdout
    return [line for line in out.splitlines() if line]


def is_dirty(root: Path) -> bool:
    """Tell whether the tree has changes or untracked files that are not ignored."""
    return bool(status(root))


def has_commits(root: Path) -> bool:
    """Tell whether HEAD points at a commit (a fresh repository has none)."""
    return _git("rev-parse", "--verify", "-q", "HEAD", cwd=root, check=False)[0] == 0


def stash_all(root: Path, message: str) -> str | None:
    """Stash every change, untracked files included (ignored ones and pensa's exports
    untouched).

    Returns the stash's commit id, or None when there was nothing to stash. `git stash`
    keeps both the index and the work tree, so nothing is lost; `git stash pop` restores it.
    """
    if not is_dirty(root):
        return None
    _git(
        "stash", "push", "--include-untracked", "--message", message, *NOT_TRACKER_EXPORTS, cwd=root
    )
    return _git("rev-parse", "stash@{0}", cwd=root).stdout.strip()


def current_branch(root: Path) -> str | None:
    """The branch checked out in `root`, or None on a detached HEAD."""
    done = _git("symbolic-ref", "--short", "-q", "HEAD", cwd=root, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def rev(root: Path, ref: str) -> str | None:
    """The commit `ref` names, or None when it names none."""
    done = _git("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", cwd=root, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def is_ancestor(root: Path, older: str, newer: str) -> bool:
    """Tell whether commit `older` is reachable from `newer`."""
    done = _git("merge-base", "--is-ancestor", older, newer, cwd=root, check=False)
    return done.returncode == 0


def count(root: Path, spec: str) -> int:
    """How many commits `git rev-list SPEC` lists."""
    return int(_git("rev-list", "--count", spec, cwd=root).stdout.strip() or 0)


def worktree_add(root: Path, path: Path, branch: str, start: str) -> None:
    """`git worktree add -b BRANCH PATH START`, hooks off like every host git here (so no
    post-checkout `pn sync` makes the new worktree a database of its own)."""
    _git("worktree", "add", "--quiet", "-b", branch, str(path), start, cwd=root)


def worktree_remove(root: Path, path: Path) -> None:
    """Remove a linked worktree and its administrative files (untracked files with it)."""
    _git("worktree", "remove", "--force", str(path), cwd=root)
    _git("worktree", "prune", cwd=root, check=False)


def delete_branch(root: Path, branch: str) -> None:
    """Delete a branch (the caller has checked it is merged)."""
    _git("branch", "--quiet", "-D", branch, cwd=root)


def common_dir(root: Path) -> Path:
    """The repository's common git directory, absolute."""
    out = _git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=root).stdout
    return Path(out.strip())


def config_value(root: Path, key: str) -> str | None:
    """`git config --get KEY`, or None when unset."""
    done = _git("config", "--get", key, cwd=root, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None

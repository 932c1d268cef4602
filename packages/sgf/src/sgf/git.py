"""Small named git operations, all through proc.run."""

from __future__ import annotations

from pathlib import Path

from pensa.shared.hardgit import HARDENED, SUBMODULE_SAFETY

from sgf import gitguard, proc
from sgf.errors import InsideGitDir, NotAGitRepo

# Repository configuration is attacker input: an agent in the sandbox can write the work tree,
# so nothing sgf runs on the host may let the repository choose what executes. No container
# sees the project's .git (agents work in workspaces of their own: ralph's sandbox), so its
# config, hooks and filters are the developer's own; the options hold even so. HARDENED and
# SUBMODULE_SAFETY (what `pn init` writes into .git/config, ensured again here before every
# launch) are pensa.shared.hardgit's, the one owner of the rule, which pn and ralph use too
# (docs/security.md).


def _git(*args: str, cwd: Path, check: bool = True) -> proc.Result:
    """Run git hardened against repository configuration (see HARDENED), after checking that
    no agent planted a pointer git would follow (gitguard.py)."""
    gitguard.check(cwd)
    return proc.run([*HARDENED, *args], cwd=cwd, check=check)


def keep_out_of_submodules(root: Path) -> list[str]:
    """Set SUBMODULE_SAFETY in the repository's own .git/config; return the keys it set."""
    set_now = []
    for key, value in SUBMODULE_SAFETY:
        found = _git("config", "--local", "--get", key, cwd=root, check=False).stdout.strip()
        if found != value:
            _git("config", "--local", key, value, cwd=root)
            set_now.append(key)
    return set_now


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


def _pathspec(exclude: tuple[str, ...]) -> list[str]:
    return ["--", ".", *(f":(exclude){path}" for path in exclude)] if exclude else []


def status(root: Path, *, exclude: tuple[str, ...] = ()) -> list[str]:
    """Return `git status --porcelain` lines: modified, staged and untracked (not ignored),
    outside the paths in `exclude`."""
    args = ["status", "--porcelain", "--untracked-files=all", *_pathspec(exclude)]
    return [line for line in _git(*args, cwd=root).stdout.splitlines() if line]


def is_dirty(root: Path, *, exclude: tuple[str, ...] = ()) -> bool:
    """Tell whether the tree has changes or untracked files that are not ignored (outside
    the paths in `exclude`)."""
    return bool(status(root, exclude=exclude))


# ralph keeps a loop's commits that could not land yet on `sgf/<loop-id>` (ralph's
# integrate.py): the human's tree had edits in the way, or they conflicted.
LOOP_BRANCH_PREFIX = "sgf/"


def waiting(root: Path) -> list[tuple[str, int]]:
    """The loops' branches holding commits the checked-out branch lacks, with how many."""
    done = _git(
        "for-each-ref", "--format=%(refname:short)", f"refs/heads/{LOOP_BRANCH_PREFIX}",
        cwd=root, check=False,
    )  # fmt: skip
    found = []
    for branch in done.stdout.split() if done.returncode == 0 else []:
        counted = _git("rev-list", "--count", f"HEAD..{branch}", cwd=root, check=False)
        if counted.returncode == 0 and (n := int(counted.stdout.strip() or 0)):
            found.append((branch, n))
    return found


def quarantined(root: Path) -> list[str]:
    """The refs ralph keeps an iteration's commits on when they changed protected paths."""
    done = _git(
        "for-each-ref", "--format=%(refname)", "refs/sgf/quarantine/", cwd=root, check=False
    )
    return done.stdout.split() if done.returncode == 0 else []


def has_commits(root: Path) -> bool:
    """Tell whether HEAD points at a commit (a fresh repository has none)."""
    return _git("rev-parse", "--verify", "-q", "HEAD", cwd=root, check=False)[0] == 0


def stash_all(root: Path, message: str, *, exclude: tuple[str, ...] = ()) -> str | None:
    """Stash every change outside `exclude`, untracked files included (ignored ones untouched).

    Returns the stash's commit id, or None when there was nothing to stash. `git stash`
    keeps both the index and the work tree, so nothing is lost; `git stash pop` restores it.
    """
    if not is_dirty(root, exclude=exclude):
        return None
    if exclude:
        # a stash limited by paths still records the whole index: unstage the excluded paths
        # first (their bytes stay in the work tree), or the stash would hold them too
        _git("reset", "--quiet", "--", *exclude, cwd=root)
    args = ["stash", "push", "--include-untracked", "--message", message, *_pathspec(exclude)]
    _git(*args, cwd=root)
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

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


def status(root: Path) -> list[str]:
    """Return `git status --porcelain` lines: modified, staged and untracked (not ignored)."""
    out = _git("status", "--porcelain", "--untracked-files=all", cwd=root).stdout
    return [line for line in out.splitlines() if line]


def is_dirty(root: Path) -> bool:
    """Tell whether the tree has changes or untracked files that are not ignored."""
    return bool(status(root))


def has_commits(root: Path) -> bool:
    """Tell whether HEAD points at a commit (a fresh repository has none)."""
    return _git("rev-parse", "--verify", "-q", "HEAD", cwd=root, check=False)[0] == 0


def stash_all(root: Path, message: str) -> str | None:
    """Stash every change, untracked files included (ignored ones untouched).

    Returns the stash's commit id, or None when there was nothing to stash. `git stash`
    keeps both the index and the work tree, so nothing is lost; `git stash pop` restores it.
    """
    if not is_dirty(root):
        return None
    _git("stash", "push", "--include-untracked", "--message", message, cwd=root)
    return _git("rev-parse", "stash@{0}", cwd=root).stdout.strip()

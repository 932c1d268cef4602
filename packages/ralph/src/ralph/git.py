"""The git operations ralph needs on the host: where HEAD is, and pushing what moved."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ralph import gitdirs, proc

_REJECTED = ("rejected", "fetch first", "non-fast-forward")

# Repository configuration is attacker input (the threat model of git's safe.directory work
# and CVE-2022-24765): an agent in the sandbox can write the work tree, so nothing ralph or
# sgf runs on the host may let the repository choose what executes. Hooks point at a
# directory that holds none, fsmonitor and pagers are off, and the `ext::` transport is
# refused; `-c` reaches every git this one spawns (GIT_CONFIG_PARAMETERS), submodules too.
# .git/config, .git/hooks and .git/info are read-only inside the container (ralph's
# sandbox), so filters, drivers and includes there are the developer's own. A nested
# repository's config is the agent's: git never looks inside one (diff.ignoreSubmodules,
# no recursion), so its filters and fsmonitor never run here (README "Security model").
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
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "fetch.recurseSubmodules=false",
    "-c",
    "push.recurseSubmodules=no",
)


def _git(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = False
) -> proc.Completed:
    full = None if env is None else {**env, "GIT_TERMINAL_PROMPT": "0"}
    return proc.run([*HARDENED, *args], cwd=cwd, env=full, check=check)


def command(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> proc.Completed:
    """Run a hardened git in `cwd` and return what it did (never raises on a non-zero exit)."""
    return _git(cwd, *args, env=env)


def protected_paths(project: Path) -> list[tuple[Path, bool]]:
    """(path, read_only) bind mounts for the git directories of the checkout holding `project`
    (gitdirs.py): the common directory of a linked worktree too, and read-only what git
    reads and may execute (config, hooks, info/) or follows (a worktree's pointers)."""
    layout = gitdirs.find(project)
    return [] if layout is None else gitdirs.mounts(layout, project=project)


def head(cwd: Path, *, env: Mapping[str, str] | None = None) -> str | None:
    """The commit HEAD points at, or None outside a repository or before the first commit."""
    done = _git(cwd, "rev-parse", "--verify", "-q", "HEAD", env=env)
    return done.stdout.strip() or None if done.ok else None


def branch(cwd: Path, *, env: Mapping[str, str] | None = None) -> str | None:
    """The current branch name, or None on a detached HEAD."""
    done = _git(cwd, "symbolic-ref", "--short", "-q", "HEAD", env=env)
    return done.stdout.strip() or None if done.ok else None


def upstream(cwd: Path, *, env: Mapping[str, str] | None = None) -> str | None:
    """The branch's upstream (`origin/main`), or None when it has none."""
    done = _git(cwd, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}", env=env)
    return done.stdout.strip() or None if done.ok else None


def remotes(cwd: Path, *, env: Mapping[str, str] | None = None) -> list[str]:
    """The names of the configured remotes."""
    done = _git(cwd, "remote", env=env)
    return done.stdout.split() if done.ok else []


def ahead(cwd: Path, *, env: Mapping[str, str] | None = None) -> int:
    """How many commits HEAD has that its upstream lacks (all of them when there is a remote
    but no upstream; 0 when there is no remote at all)."""
    if not remotes(cwd, env=env):
        return 0
    spec = "@{u}..HEAD" if upstream(cwd, env=env) else "HEAD"
    done = _git(cwd, "rev-list", "--count", spec, env=env)
    return int(done.stdout.strip() or 0) if done.ok else 0


def identity(cwd: Path, *, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """GIT_AUTHOR_*/GIT_COMMITTER_* from `git config user.name/email`, for agents elsewhere."""
    found: dict[str, str] = {}
    for key, role in (("user.name", "NAME"), ("user.email", "EMAIL")):
        done = _git(cwd, "config", key, env=env)
        if done.ok and (value := done.stdout.strip()):
            found[f"GIT_AUTHOR_{role}"] = found[f"GIT_COMMITTER_{role}"] = value
    return found


class PushStatus(StrEnum):
    """How an auto-push ended."""

    PUSHED = "pushed"
    REBASED = "pushed after pull --rebase"
    NO_REMOTE = "no remote"
    DETACHED = "detached HEAD"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Pushed:
    """The outcome of `push()`, with git's last line of stderr when it failed."""

    status: PushStatus
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status is PushStatus.FAILED


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def push(cwd: Path, *, env: Mapping[str, str] | None = None, tries: int = 3) -> Pushed:
    """Push the current branch; when rejected, `git pull --rebase` and push again, up to
    `tries` rounds (loops on other machines push too)."""
    names = remotes(cwd, env=env)
    if not names:
        return Pushed(PushStatus.NO_REMOTE)
    current = branch(cwd, env=env)
    if current is None:
        return Pushed(PushStatus.DETACHED)
    remote = "origin" if "origin" in names else names[0]
    if upstream(cwd, env=env):
        push_args, pull_args = ["push"], ["pull", "--rebase", "--autostash"]
    else:
        push_args = ["push", "--set-upstream", remote, current]
        pull_args = ["pull", "--rebase", "--autostash", remote, current]
    first = _git(cwd, *push_args, env=env)
    if first.ok:
        return Pushed(PushStatus.PUSHED)
    if not any(word in first.stderr for word in _REJECTED):
        return Pushed(PushStatus.FAILED, _last_line(first.stderr))
    for _ in range(tries):
        pulled = _git(cwd, *pull_args, env=env)
        if not pulled.ok:
            _git(cwd, "rebase", "--abort", env=env)
            return Pushed(PushStatus.FAILED, "pull --rebase failed: " + _last_line(pulled.stderr))
        again = _git(cwd, *push_args, env=env)
        if again.ok:
            return Pushed(PushStatus.REBASED)
        if not any(word in again.stderr for word in _REJECTED):
            break
    return Pushed(PushStatus.FAILED, _last_line(again.stderr))

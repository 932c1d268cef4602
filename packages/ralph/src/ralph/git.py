"""ralph's git on the host: hardened, and only ever in repositories the sandbox cannot write.

The agent works in a repository of its own (workspace.py), so host git runs in the human's
repository alone (and in private temporary worktrees of it, replay.py). Even so, everything
that reaches it from the sandbox is data, and the repository's configuration may have been
written by someone else's tool: hooks point at a directory that holds none, fsmonitor and
pagers are off, the `ext::` transport is refused, nothing recurses into submodules, and
replace refs are ignored (an object must read the same on the host as everywhere else).
`-c` reaches every git this one spawns (GIT_CONFIG_PARAMETERS), submodules too. The options
are `pensa.shared.hardgit.HARDENED`, the one owner of the rule, which sgf's git uses as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pensa.shared.hardgit import HARDENED

from ralph import proc
from ralph.errors import RalphError

ZERO = "0" * 40


def environment(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """`env` for a host git: no prompts, no replace objects."""
    if env is None:
        return None
    return {**env, "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1"}


def command(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: int | None = None,
    timeout: float | None = 300.0,
) -> proc.Completed:
    """Run a hardened git in `cwd` and return what it did (never raises on a non-zero exit)."""
    return proc.run(
        [*HARDENED, *args],
        cwd=cwd,
        env=environment(env),
        check=False,
        stdin=stdin,
        timeout=timeout,
    )


def _out(cwd: Path, *args: str, env: Mapping[str, str] | None) -> str | None:
    done = command(cwd, *args, env=env)
    return done.stdout.strip() or None if done.ok else None


def head(cwd: Path, *, env: Mapping[str, str] | None = None) -> str | None:
    """The commit HEAD points at, or None outside a repository or before the first commit."""
    return _out(cwd, "rev-parse", "--verify", "-q", "HEAD^{commit}", env=env)


def branch(cwd: Path, *, env: Mapping[str, str] | None = None) -> str | None:
    """The current branch name, or None on a detached HEAD."""
    return _out(cwd, "symbolic-ref", "--short", "-q", "HEAD", env=env)


def rev(cwd: Path, ref: str, *, env: Mapping[str, str] | None = None) -> str | None:
    """The commit `ref` names, or None."""
    return _out(cwd, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", env=env)


def is_ancestor(cwd: Path, older: str, newer: str, *, env: Mapping[str, str] | None) -> bool:
    """Whether `older` is `newer` or one of its ancestors."""
    return command(cwd, "merge-base", "--is-ancestor", older, newer, env=env).ok


def count(cwd: Path, spec: str, *, env: Mapping[str, str] | None) -> int:
    """How many commits `git rev-list SPEC` lists."""
    return int(_out(cwd, "rev-list", "--count", spec, env=env) or 0)


def has_commit(cwd: Path, ident: str, *, env: Mapping[str, str] | None) -> bool:
    """Whether the repository holds commit `ident`."""
    return command(cwd, "cat-file", "-e", f"{ident}^{{commit}}", env=env).ok


def set_ref(
    cwd: Path, ref: str, ident: str, *, old: str | None = None, env: Mapping[str, str] | None
) -> bool:
    """Point `ref` at `ident` (only while it still points at `old`, when given)."""
    args = ["update-ref", ref, ident] + ([old] if old is not None else [])
    return command(cwd, *args, env=env).ok


def delete_ref(cwd: Path, ref: str, *, env: Mapping[str, str] | None) -> None:
    command(cwd, "update-ref", "-d", ref, env=env)


def refs(cwd: Path, *patterns: str, env: Mapping[str, str] | None) -> dict[str, str]:
    """ref name -> object, for the refs under `patterns`."""
    listed = _out(cwd, "for-each-ref", "--format=%(objectname) %(refname)", *patterns, env=env)
    out: dict[str, str] = {}
    for line in (listed or "").splitlines():
        ident, _, name = line.partition(" ")
        out[name] = ident
    return out


def index_pack(
    cwd: Path, pack: int, *, max_bytes: int, env: Mapping[str, str] | None
) -> proc.Completed:
    """Store the pack read from descriptor `pack`, every object checked as a fetch checks it
    (fsck), thin deltas completed from the repository's own objects."""
    return command(
        cwd,
        "index-pack",
        "--strict",
        "--fix-thin",
        "--stdin",
        f"--max-input-size={max_bytes}",
        env=env,
        stdin=pack,
        timeout=1800.0,
    )


def complete_commit(
    cwd: Path, ident: str, known: Sequence[str], *, env: Mapping[str, str] | None
) -> bool:
    """Whether `ident` is a commit whose every object is here."""
    if _out(cwd, "cat-file", "-t", ident, env=env) != "commit":
        return False
    args = ["rev-list", "--objects", "--quiet", ident]
    if known:
        args += ["--not", *known]
    return command(cwd, *args, env=env).ok


def identity(cwd: Path, *, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """GIT_AUTHOR_*/GIT_COMMITTER_* from `git config user.name/email`, for agents elsewhere."""
    found: dict[str, str] = {}
    for key, role in (("user.name", "NAME"), ("user.email", "EMAIL")):
        if value := _out(cwd, "config", key, env=env):
            found[f"GIT_AUTHOR_{role}"] = found[f"GIT_COMMITTER_{role}"] = value
    return found


def common_dir(cwd: Path, *, env: Mapping[str, str] | None = None) -> Path:
    """The repository's common git directory (shared by its linked worktrees)."""
    found = _out(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir", env=env)
    if not found:
        raise RalphError(f"{cwd} is not in a git repository")
    return Path(found)


def objects_dir(cwd: Path, *, env: Mapping[str, str] | None = None) -> Path | None:
    """The repository's object directory (its common directory's, for a linked worktree)."""
    found = _out(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir", env=env)
    return Path(found) / "objects" if found else None


def committed(top: Path, path: Path, *, env: Mapping[str, str] | None = None) -> bool:
    """Whether HEAD's commit holds `path` (a path below the work tree `top`)."""
    return (
        _out(top, "ls-tree", "--name-only", "HEAD", "--", str(path.relative_to(top)), env=env)
        is not None
    )


def toplevel(cwd: Path, *, env: Mapping[str, str] | None = None) -> Path | None:
    """The work tree holding `cwd`, or None outside one."""
    found = _out(cwd, "rev-parse", "--show-toplevel", env=env)
    return Path(found) if found else None

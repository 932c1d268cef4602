"""The one door to git: small named functions over a single subprocess wrapper."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence


def _git(
    args: Sequence[str], *, cwd: str, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    import subprocess  # only writes need git; reads stay on the fast path

    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:  # no git installed: behave as outside a repository
        return subprocess.CompletedProcess(["git", *args], 127, "", "git not found")


def toplevel(cwd: str, env: Mapping[str, str]) -> str | None:
    """The work tree's top directory, or None outside a git repository."""
    done = _git(["rev-parse", "--show-toplevel"], cwd=cwd, env=env)
    return done.stdout.strip() or None if done.returncode == 0 else None


def user_name(cwd: str, env: Mapping[str, str]) -> str | None:
    """`git config user.name`, or None when unset."""
    done = _git(["config", "user.name"], cwd=cwd, env=env)
    return done.stdout.strip() or None if done.returncode == 0 else None


def add(paths: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> None:
    """Stage `paths` (in the index named by GIT_INDEX_FILE when git set one for a hook)."""
    done = _git(["add", "--", *paths], cwd=cwd, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"git add failed ({done.returncode}): {done.stderr.strip()}")


def in_commit_hook(env: Mapping[str, str]) -> bool:
    """Whether we run as a pre-commit hook: the pre-commit framework sets PRE_COMMIT=1 and
    git sets GIT_INDEX_FILE for the hooks of `git commit`."""
    return env.get("PRE_COMMIT") == "1" or bool(env.get("GIT_INDEX_FILE"))

"""Before any git sgf runs on the host: no pointer an agent planted in the git directory.

git reads `commondir` (and, for a linked worktree's own folder, `gitdir`) from a git
directory and takes the repository's configuration, hooks and all, from wherever it points.
git never writes either into a repository's own `.git`, but the agent in the sandbox can
write there (objects, refs and the index live beside them). ralph's sandbox mounts a
`commondir` naming its own folder (`.`: git behaves as without one) read-only over the spot,
so none can appear while an agent runs; one that leads anywhere else, or a `gitdir`, was
planted where that mount did not stand (`--sandbox none`, an older ralph). It is moved out
of git's reach, renamed `<name>.quarantined-<time>` in the same folder, where git never
looks and the human can read it, and sgf refuses to go on (exit 1) naming it. ralph checks
the same after every iteration (its gitdirs.py); this covers the launch, `sgf status` and
everything else sgf runs git for, also after a ralph that was killed before it could look.

The files are found without running git: git itself is what must not read them first.
"""

from __future__ import annotations

import time
from pathlib import Path

from sgf.errors import UnsafeRepository

PLANTED = ("commondir", "gitdir")


def common_dir(cwd: Path) -> Path | None:
    """The repository's own git directory for `cwd` (a linked worktree's common one), or
    None outside a repository or where the pointers cannot be read (git will say why)."""
    for folder in (cwd, *cwd.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8").strip()
                if not text.startswith("gitdir:"):
                    return None
                git_dir = folder / text.removeprefix("gitdir:").strip()
                pointer = git_dir / "commondir"
                if not pointer.is_file():
                    return git_dir
                return git_dir / pointer.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
        if dot_git.exists() or dot_git.is_symlink():
            return None
    return None


def _leads_to_itself(pointer: Path) -> bool:
    """Whether a `commondir` file names the folder holding it (ralph's read-only one)."""
    try:
        text = pointer.read_text(encoding="utf-8").strip() if pointer.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return False
    return bool(text) and (pointer.parent / text).resolve() == pointer.parent.resolve()


def check(cwd: Path) -> None:
    """Raise UnsafeRepository, after moving it aside, when a pointer git never writes sits in
    the repository's own git directory."""
    common = common_dir(cwd)
    if common is None:
        return
    for name in PLANTED:
        planted = common / name
        if not (planted.exists() or planted.is_symlink()):
            continue
        if name == "commondir" and _leads_to_itself(planted):
            continue
        kept = common / f"{name}.quarantined-{time.strftime('%Y%m%dT%H%M%S')}"
        try:
            planted.rename(kept)
        except OSError as e:
            raise UnsafeRepository(f"{planted} exists and cannot be moved ({e}); remove it") from e
        raise UnsafeRepository(f"{planted} existed; moved to {kept.name}; look at it, run again")

"""Where a checkout's git directories are, and which of them the sandbox mounts how.

A linked worktree (`git worktree add`, or a loop's `.sgf/worktrees/<loop-id>`) holds a `.git`
*file* naming its private git directory (`<common>/worktrees/<name>`), which names the
repository's common directory (objects, refs, config) in its `commondir` file. Mounting only
the work tree left git in the container with "not a git repository", so the common directory
is mounted too, read-write, as the shared tree's `.git` is.

These files are read here without running git: the agent writes the work tree, and git
follows whatever they say. So the pointers themselves are mounted read-only (the `.git` file,
`commondir`, `gitdir`, a per-worktree `config.worktree`) along with the common directory's
`config`, `hooks` and `info`, and a `commondir` file inside a repository's own
`.git` directory, where git never writes one, is refused: git would take its configuration
from wherever it points.

What else git resolves from these directories, and why none of it is the agent's:
- `modules/<name>/config` (a submodule's repository): `modules/` is read-only, created empty
  when missing so the agent cannot make it;
- `config.worktree` of the main git directory (read with extensions.worktreeConfig on):
  read-only, created empty;
- the git directory itself is a mount of its own, so the agent cannot rename it away and put
  a `.git` of its making (with its own config) in its place;
- `commondir` of the repository's own git directory: git never writes one there, and would
  take its configuration from wherever it points. Before any agent runs ralph writes one
  that points at the directory itself (`.`: git behaves exactly as without it) and mounts it
  read-only, so no agent can plant another, not even for the moment the developer runs
  `git status` during an iteration;
- a `commondir` that leads elsewhere, or a `gitdir`, found there (planted by an agent ralph
  did not sandbox, or before this mount existed) is moved out of git's reach (renamed
  `<name>.quarantined-<time>`, kept for the human to read) and ralph refuses to go on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ralph import safefile
from ralph.errors import UnsafeRepository

# What git reads from the git directory and may execute or include: config (hooksPath,
# fsmonitor, filters, drivers, include.path, sshCommand, credential.helper, pager...),
# the hooks, and info/ (attributes naming those drivers).
PROTECTED = ("config", "hooks", "info", "modules")
# A linked worktree's private pointers: where its common directory and work tree are, and its
# own configuration (read when extensions.worktreeConfig is on).
POINTERS = ("commondir", "gitdir", "config.worktree")
# What git never writes into a repository's own git directory, but follows when it is there.
PLANTED = ("commondir", "gitdir")


@dataclass(frozen=True, slots=True)
class Layout:
    """A checkout's git directories, as found on disk."""

    work_tree: Path  # the folder holding `.git`
    git_dir: Path  # `.git` itself, or `<common>/worktrees/<name>` of a linked worktree
    common_dir: Path  # objects, refs, config, hooks: shared by every worktree

    @property
    def linked(self) -> bool:
        """Whether this is a linked worktree (its `.git` is a file)."""
        return self.git_dir != self.common_dir

    @property
    def dot_git(self) -> Path:
        """The `.git` entry of the work tree."""
        return self.work_tree / ".git"


def _pointer(path: Path, *, prefix: str = "") -> Path:
    """The path a one-line pointer file names, relative to its own folder."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise UnsafeRepository(f"cannot read {path}: {e}") from e
    if not text.startswith(prefix) or "\n" in text:
        raise UnsafeRepository(f"{path} is not a git pointer file ({text[:60]!r})")
    return (path.parent / text[len(prefix) :].strip()).resolve()


def _leads_to_itself(pointer: Path) -> bool:
    """Whether a `commondir` file names the folder holding it (what mounts() writes)."""
    try:
        text = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(text) and (pointer.parent / text).resolve() == pointer.parent.resolve()


def _no_planted_commondir(common: Path) -> None:
    for name in PLANTED:
        planted = common / name
        if name == "commondir" and planted.is_file() and _leads_to_itself(planted):
            continue
        if planted.exists() or planted.is_symlink():
            kept = common / f"{name}.quarantined-{time.strftime('%Y%m%dT%H%M%S')}"
            try:
                planted.rename(kept)
            except OSError as e:
                raise UnsafeRepository(
                    f"{planted} exists where git never writes one, and git would read its "
                    f"configuration from wherever it points; it cannot be moved ({e}): "
                    "remove it, run again"
                ) from e
            raise UnsafeRepository(
                f"{planted} existed: git never writes one into a repository's own git "
                f"directory and would read its configuration from wherever it points (an "
                f"agent may have planted it); moved to {kept.name}; look at it, run again"
            )


def find(project: Path) -> Layout | None:
    """The layout of the checkout holding `project`, or None outside one."""
    for folder in (project, *project.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            _no_planted_commondir(dot_git)
            resolved = dot_git.resolve()
            return Layout(folder, resolved, resolved)
        if dot_git.is_file():
            git_dir = _pointer(dot_git, prefix="gitdir:")
            commondir = git_dir / "commondir"
            common = _pointer(commondir) if commondir.exists() else git_dir
            if not (common / "objects").is_dir():
                raise UnsafeRepository(f"{dot_git} leads to {common}, which is not a git directory")
            _no_planted_commondir(common)
            return Layout(folder, git_dir, common)
        if dot_git.exists() or dot_git.is_symlink():
            return None
    return None


def mounts(layout: Layout, *, project: Path) -> list[tuple[Path, bool]]:
    """(path, read_only) bind mounts that let the agent commit but not change what runs.

    `project` itself is mounted read-write by the caller. Missing `hooks/`, `info/`,
    `modules/`, `config.worktree` and the self-pointing `commondir` are created first (and
    stay): one missing would otherwise be created by the agent, writable."""
    # Each git directory is a mount of its own, so the agent cannot rename it away.
    out: list[tuple[Path, bool]] = [(layout.common_dir, False)]
    if layout.linked:
        out += [(layout.git_dir, False), (layout.dot_git, True)]
        # An empty config.worktree changes nothing, and git reads one only with
        # extensions.worktreeConfig on; made here, the agent cannot make it, writable.
        os.close(safefile.open_plain(layout.git_dir / "config.worktree", os.O_WRONLY))
        out += [
            (layout.git_dir / name, True) for name in POINTERS if (layout.git_dir / name).exists()
        ]
    else:
        # read with extensions.worktreeConfig on; empty, it changes nothing
        os.close(safefile.open_plain(layout.git_dir / "config.worktree", os.O_WRONLY))
        out.append((layout.git_dir / "config.worktree", True))
    own = layout.common_dir / "commondir"
    if not own.exists():
        safefile.create(own, b".\n")
    out.append((own, True))
    for name in PROTECTED:
        path = layout.common_dir / name
        if name != "config":
            path.mkdir(exist_ok=True)
        if path.exists():
            out.append((path, True))
    return out


def unchanged(layout: Layout) -> None:
    """Raise UnsafeRepository when the checkout's git pointers no longer say what they said.

    Run after every iteration, before ralph's own git (the push) reads them on the host."""
    now = find(layout.work_tree)
    if now != layout:
        found = "no repository" if now is None else f"{now.git_dir} (common {now.common_dir})"
        raise UnsafeRepository(
            f"the git directories of {layout.work_tree} changed during the iteration: they were "
            f"{layout.git_dir} (common {layout.common_dir}), now {found}; an agent may have "
            "redirected them, so ralph runs no git on the host; look, restore, run again"
        )

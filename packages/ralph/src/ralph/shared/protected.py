"""The control plane: paths in the project that decide what runs on the human's machine.

`.sgf/` (config, prompts, backpressure), `.pre-commit-config.yaml` (the hooks a human's
`git commit` runs), `.gitattributes` (filters and drivers by path), `.gitmodules` and
gitlinks (submodules a later clone or `git submodule update` fetches and checks out), and
`.claude/` (Claude Code's project settings and hooks) belong to the human. An agent can
commit any of them with plumbing (`git hash-object -w`, `git update-index --cacheinfo`,
`git commit --no-verify`) even where the file is read-only on disk, so every iteration's
commits are checked (quarantine.py). A project adds paths with `--protect`; the defaults
always hold.

One rule for both tools: ralph checks every iteration's commits against it and mounts these
paths read-only; sgf never advises stashing or taking a change to them without a review.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

DEFAULTS = (".sgf/", ".pre-commit-config.yaml", ".gitattributes", ".gitmodules", ".claude/")
# git reads `.gitattributes` in every folder, not only at the top.
ANY_DEPTH = (".gitattributes",)
GITLINK = "160000"  # a submodule's commit recorded in a tree


def normalise(spec: str) -> str:
    """`spec` as a path relative to the repository's top (`dir/` for a folder).

    Raises ValueError for an absolute path, `..`, or nothing at all."""
    folder = spec.endswith("/")
    path = PurePosixPath(spec.strip())
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"{spec!r} must be a path inside the repository, like ci/ or Makefile")
    parts = [p for p in path.parts if p != "."]
    if not parts:
        raise ValueError(f"{spec!r} names no path")
    return "/".join(parts) + ("/" if folder else "")


@dataclass(frozen=True, slots=True)
class Protected:
    """The protected paths of one loop: the defaults and the project's own."""

    paths: tuple[str, ...] = DEFAULTS

    @classmethod
    def with_extra(cls, extra: Iterable[str]) -> Protected:
        """The defaults plus `extra` (normalised; ValueError on a bad one)."""
        added = [normalise(spec) for spec in extra]
        return cls(tuple(dict.fromkeys([*DEFAULTS, *added])))

    def covers(self, path: str, *, mode: str = "") -> bool:
        """Whether a change to `path` (with tree mode `mode`) touches the control plane.

        Compared case-insensitively: on a case-insensitive file system `.SGF/config.toml`
        is `.sgf/config.toml`."""
        if mode == GITLINK:
            return True
        folded = path.casefold()
        if folded.rsplit("/", 1)[-1] in ANY_DEPTH:
            return True
        for entry in self.paths:
            wanted = entry.casefold()
            if wanted.endswith("/"):
                if folded.startswith(wanted) or folded == wanted[:-1]:
                    return True
            elif folded == wanted or folded.startswith(wanted + "/"):
                return True
        return False

    def on_disk(self, top: Path) -> list[Path]:
        """The protected files and folders that exist under `top`, for read-only mounts.

        Only what exists: Docker creates a missing mount source on the host. Symbolic links
        are skipped: a mount follows them, and would show the container their target."""
        found: list[Path] = []
        for entry in self.paths:
            path = top / entry.rstrip("/")
            if path.is_symlink() or not path.exists():
                continue
            if path.is_dir() or (path.is_file() and not entry.endswith("/")):
                found.append(path)
        return found

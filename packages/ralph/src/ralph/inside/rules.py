"""The guard's list and what its checks share: the refusal, the repository's facts, the place.

The list is the rules table of docs/guardrails.md: one `Rule` per row, named in every refusal and
in the run record. A `Place` is where a command runs (the project, the working directory
after its `cd`s, the home directory) and turns a word into the path it names, or into None
when an expansion hides it: the rules then fail closed. Standard library only (sandbox).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

from ralph.inside.words import Kind, Word

# Directories no tool call may write: sgf's control files, git's, Claude Code's settings.
PROTECTED = (".sgf", ".git", ".claude")


@dataclass(frozen=True, slots=True)
class Rule:
    """One entry of the list: its name, and what it refuses (the table in docs/guardrails.md)."""

    name: str
    refuses: str


RULES = (
    Rule("unreadable", "a command line the guard cannot read (an unclosed quote, `case`...)"),
    Rule("force-push", "`git push` that can drop remote commits: --force, --delete, +ref..."),
    Rule("reset-hard", "`git reset --hard` over others' uncommitted work or commits"),
    Rule("discard", "`git checkout`/`restore`/`switch -f`/`rm -f` over others' changes"),
    Rule("clean", "`git clean -f` over untracked files that predate the iteration"),
    Rule("move-ref", "`git branch -f/-D/-M`, `checkout -B`, `update-ref`... dropping commits"),
    Rule("rm-outside", "`rm -r`/`find -delete` outside the project, of it, or of a hidden path"),
    Rule("protected-write", "writes into .sgf/, .git/ or .claude/"),
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a tool call is refused: a rule name and one line for the model."""

    rule: str
    reason: str


class Facts(Protocol):
    """What the guard needs to know about the repository, asked only when a rule needs it."""

    def foreign_changes(self) -> list[str]:
        """Uncommitted paths (from the project) that were already changed when the iteration
        began and still are."""
        ...

    def keeps_commits(self, ref: str, target: str | None) -> bool:
        """Whether pointing `ref` (a full ref name, or HEAD) at `target` (None: deleting it)
        keeps every commit it held when the iteration began."""
        ...

    def names_commit(self, word: str) -> bool:
        """Whether `word` names a commit (git's own test: a branch switch, or paths?)."""
        ...


@dataclass(frozen=True, slots=True)
class Place:
    """Where a command runs: the project, its working directory (None: a `cd` the guard could
    not follow) and the home directory `~` names."""

    project: str
    cwd: str | None
    home: str

    def path(self, word: Word) -> str | None:
        """The absolute path `word` names (globs kept), or None when an expansion hides it."""
        pieces: list[str] = []
        for part in word.parts:
            if part.kind in (Kind.LIT, Kind.GLOB):
                pieces.append(part.text)
            elif part.kind is Kind.TILDE and part.text == "~":
                pieces.append(self.home)
            elif part.kind is Kind.VAR and (known := self._known(part.text)) is not None:
                pieces.append(known)
            else:
                return None
        text = "".join(pieces)
        if not text.startswith("/"):
            if self.cwd is None:
                return None
            text = f"{self.cwd}/{text}"
        return str(fold(text))

    def _known(self, expansion: str) -> str | None:
        """The few expansions whose value the guard knows: the working directory, home, and
        the repository's top (the project)."""
        squeezed = " ".join(expansion.replace("`", " ").replace("$(", " ").strip(" )").split())
        if expansion in ("$PWD", "${PWD}") or squeezed == "pwd":
            return self.cwd
        if expansion in ("$HOME", "${HOME}"):
            return self.home
        if squeezed == "git rev-parse --show-toplevel":
            return self.project
        return None

    def inside(self, path: str) -> bool:
        """Whether `path` lies inside the project (the project itself is not inside it)."""
        full, root = PurePosixPath(path), PurePosixPath(self.project)
        return full != root and full.is_relative_to(root)

    def protected(self, path: str) -> str | None:
        """The protected directory `path` lies in or may match as a glob (".git"...), or None."""
        if not self.inside(path):
            return None
        first = PurePosixPath(path).relative_to(self.project).parts[0]
        for name in PROTECTED:
            # a glob matches a dot-name only when it starts with the dot itself, as in bash
            if first == name or (first.startswith(".") and fnmatch.fnmatchcase(name, first)):
                return name
        return None

    def moved(self, word: Word) -> Place:
        """The place after `cd WORD` (`cd` alone: an empty word; `cd -`: unknown)."""
        if word.is_("", "~"):
            return Place(self.project, self.home, self.home)
        return Place(self.project, None if word.is_("-") else self.path(word), self.home)


def fold(path: str) -> PurePosixPath:
    """An absolute `path` with `.` and `..` folded (no filesystem access)."""
    parts: list[str] = []
    for part in PurePosixPath(path).parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return PurePosixPath("/", *parts)


def shown(paths: list[str], limit: int = 3) -> str:
    """`a, b, c and 4 more`: a list short enough for one line."""
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more

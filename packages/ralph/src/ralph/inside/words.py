"""The words of a shell command as the reader (shell.py) hands them to the rules.

A word keeps its pieces apart: literal text, and the expansions only the running shell can
resolve (`$x`, `$(...)`, globs, braces, `~`). A rule asks whether a word is plain before it
trusts its text as a path, a branch or a flag. Standard library only (sandbox).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What a piece of a word is, before the shell expands it."""

    LIT = "lit"  # literal text, quotes removed
    VAR = "var"  # $name, ${...}, $(...), `...`, $((...)), <(...): known only when it runs
    GLOB = "glob"  # an unquoted *, ? or [...]
    BRACE = "brace"  # an unquoted {a,b} or {1..3}
    TILDE = "tilde"  # a leading unquoted ~ or ~user


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a word."""

    kind: Kind
    text: str
    quoted: bool = False  # an expansion inside double quotes: one word, never split


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a command, its pieces in order."""

    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        """The word as written, quotes removed and expansions left as they are."""
        return "".join(p.text for p in self.parts)

    @property
    def plain(self) -> bool:
        """Whether the word is the same text whatever the shell expands."""
        return all(p.kind is Kind.LIT for p in self.parts)

    @property
    def splits(self) -> bool:
        """Whether the shell may make several words of it (an unquoted expansion)."""
        return any(p.kind is Kind.VAR and not p.quoted for p in self.parts)

    def is_(self, *texts: str) -> bool:
        """Whether the word is literally one of `texts`."""
        return self.plain and self.text in texts


def literal(text: str) -> Word:
    """A word that is exactly `text`."""
    return Word((Part(Kind.LIT, text),))


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: its words, the files its redirects write, where its input is."""

    words: tuple[Word, ...]
    writes: tuple[Word, ...] = ()
    scope: tuple[int, ...] = ()  # the subshells it runs in: a `cd` inside one ends with it
    stdin: Word | None = None  # a heredoc's body or a here-string it reads
    fed_by: tuple[Word, ...] | None = None  # the words of the command piped into it

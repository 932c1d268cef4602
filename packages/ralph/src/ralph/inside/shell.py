"""A reader for the command lines an agent hands its Bash tool: every simple command in them.

The guard (guard.py) and the stop checklist (backpressure.py) need the commands a line would
run, not its text: `git reset --hard # don't` is a reset followed by a comment, the body of a
heredoc is data, and `echo "$(git push -f)"` runs a push. This is a reader, not a shell: it
follows quotes, comments, line continuations, heredocs and here-strings, `$(...)`, backticks,
`<(...)`, subshells and pipelines, and it keeps each word's expansions marked, so a rule can
tell `rm -rf build` from `rm -rf "$dir"` (whose target nobody can know before it runs).

What it cannot follow it refuses with `Unreadable`, whose message says how to write the
command plainly: a reader that gives up and lets the whole line through is no guard.
Standard library only: it runs inside the sandbox, next to hookrun.py.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ralph.inside.words import Command, Kind, Part, Word

_META = " \t\n;&|()<>"
# Words that start or continue a compound command: the command proper follows them.
KEYWORDS = frozenset({"!", "if", "then", "elif", "else", "do", "while", "until", "{", "time"})
# Redirect operators, longest first so `>>` is not read as `>`.
_REDIRECTS = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">&", ">>", ">|", "<", ">")
_USER = re.compile(r"[\w.-]*")


class Unreadable(ValueError):
    """A command line the reader cannot follow; the message says how to write it plainly."""


def parse(text: str) -> list[Command]:
    """Every simple command `text` runs, nested ones (`$(...)`) before the one holding them."""
    reader = _Reader(text, ())
    reader.commands(closer=False)
    return reader.out


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    quoted: bool
    command: int = -1  # index in `out` of the command that reads it, once that is known


@dataclass
class _Building:
    words: list[Word] = field(default_factory=list)
    writes: list[Word] = field(default_factory=list)
    stdin: Word | None = None
    piped: bool = False
    heredocs: list[_Heredoc] = field(default_factory=list)


class _Reader:
    def __init__(
        self, text: str, scope: tuple[int, ...], ids: itertools.count[int] | None = None
    ) -> None:
        self.s = text
        self.i = 0
        self.scope = scope
        self.ids = ids or itertools.count(1)
        self.out: list[Command] = []
        self.pending: list[_Heredoc] = []

    def peek(self, ahead: int = 0) -> str:
        at = self.i + ahead
        return self.s[at] if at < len(self.s) else ""

    def commands(self, *, closer: bool) -> None:
        """Read commands to the end, or (closer) to the `)` that closes a `$(`."""
        now = _Building()
        previous: Command | None = None  # the command a `|` feeds into the next one
        depth = 0
        scopes = [self.scope]

        def flush(*, piped: bool = False) -> None:
            nonlocal now, previous
            fed_by = previous.words if now.piped and previous is not None else None
            if now.words or now.writes:
                at = len(self.out)
                for heredoc in now.heredocs:
                    heredoc.command = at
                words, writes = tuple(now.words), tuple(now.writes)
                previous = Command(words, writes, scopes[-1], now.stdin, fed_by)
                self.out.append(previous)
            now = _Building(piped=piped)

        while True:
            c = self.peek()
            if c == "":
                if closer or depth:
                    raise Unreadable("a `(` or `$(` is never closed; close it")
                flush()
                return
            if c in " \t":
                self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
            elif c == "#":
                while self.peek() not in ("", "\n"):
                    self.i += 1
            elif c == "\n":
                flush()
                self.i += 1
                self._heredoc_bodies()
            elif c == "(":
                flush()
                depth += 1
                scopes.append((*scopes[-1], next(self.ids)))
                self.i += 1
            elif c == ")":
                flush()
                self.i += 1
                if depth == 0:
                    if closer:
                        return
                    raise Unreadable("a `)` closes nothing; balance the parentheses")
                depth -= 1
                scopes.pop()
            elif (redirect := self._redirect_op()) is not None:
                self._redirect(redirect, now)
            elif c in ";&|":
                op = next(o for o in ("&&", "||", "|&", ";;", ";&", "|", "&", ";") if self._at(o))
                if op in (";;", ";&"):
                    raise Unreadable("`;;` outside a case; end commands with `;` or a newline")
                self.i += len(op)
                flush(piped=op in ("|", "|&"))
            else:
                save = self.scope
                self.scope = scopes[-1]
                word = self._word()
                self.scope = save
                if word.is_("case") and all(w.plain and w.text in KEYWORDS for w in now.words):
                    raise Unreadable(
                        "the guard does not read `case` statements; use `if ... elif ... fi`"
                    )
                now.words.append(word)

    def _at(self, text: str) -> bool:
        return self.s.startswith(text, self.i)

    def _redirect_op(self) -> str | None:
        """The redirect operator at the cursor (after an optional fd number), else None."""
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        for op in _REDIRECTS:
            if self.s.startswith(op, j):
                if op in ("<", ">") and self.s[j + 1 : j + 2] == "(":
                    return None  # <(...) is a word: process substitution
                if j > self.i and op.startswith("&"):
                    return None  # `2&>` is not an fd number
                self.i = j
                return op
        return None

    def _redirect(self, op: str, now: _Building) -> None:
        self.i += len(op)
        while self.peek() in (" ", "\t"):
            self.i += 1
        if self.peek() == "" or self.peek() in _META:
            raise Unreadable(f"`{op}` with nothing after it; name the file")
        start = self.i
        target = self._word()
        if op in ("<<", "<<-"):
            raw = self.s[start : self.i]
            quoted = any(q in raw for q in "'\"\\")
            heredoc = _Heredoc(target.text, op == "<<-", quoted)
            now.heredocs.append(heredoc)
            self.pending.append(heredoc)
        elif op == "<<<":
            now.stdin = target
        elif op in (">&", "<&"):
            if op == ">&" and not (target.plain and (target.text.isdigit() or target.text == "-")):
                now.writes.append(target)  # `>&file` writes the file, `>&2` a descriptor
        elif op != "<":
            now.writes.append(target)

    def _heredoc_bodies(self) -> None:
        """Read the bodies of the heredocs the line just ended opened (data, not commands)."""
        for heredoc in self.pending:
            lines: list[str] = []
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i : end]
                self.i = end + 1
                if (line.lstrip("\t") if heredoc.strip_tabs else line) == heredoc.delimiter:
                    break
                lines.append(line)
            body = "\n".join(lines)
            if not heredoc.quoted:  # an unquoted body expands: its $(...) run
                self._nested_in(body)
            kind = Kind.LIT if heredoc.quoted or not ("$" in body or "`" in body) else Kind.VAR
            if heredoc.command >= 0:
                self.out[heredoc.command] = replace(
                    self.out[heredoc.command], stdin=Word((Part(kind, body, quoted=True),))
                )
        self.pending = []

    def _nested_in(self, body: str) -> None:
        inner = _Reader(body, (*self.scope, next(self.ids)), self.ids)
        while inner.i < len(body):
            c = inner.peek()
            if c == "\\":
                inner.i += 2
            elif c == "$" and inner.peek(1) == "(" and inner.peek(2) != "(":
                inner.i += 2
                inner.commands(closer=True)
            elif c == "`":
                inner._backtick()
            else:
                inner.i += 1
        self.out.extend(inner.out)

    def _word(self) -> Word:
        parts: list[Part] = []
        buf: list[str] = []
        quoted = False

        def add(kind: Kind, text: str, in_quotes: bool = False) -> None:
            if buf:
                parts.append(Part(Kind.LIT, "".join(buf)))
                buf.clear()
            parts.append(Part(kind, text, in_quotes))

        if self.peek() in ("<", ">") and self.peek(1) == "(":
            start = self.i
            self.i += 2
            self._substitution()
            add(Kind.VAR, self.s[start : self.i])
        while (c := self.peek()) != "" and c not in _META:
            if c == "\\":
                if self.peek(1) != "\n":
                    buf.append(self.peek(1))
                self.i += 2
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise Unreadable("a ' quote is never closed; close it")
                buf.append(self.s[self.i + 1 : end])
                quoted = True
                self.i = end + 1
            elif c == '"':
                self._double(add, buf)
                quoted = True
            elif c == "$":
                if self.peek(1) == "'":
                    buf.append(self._ansi_c())
                    quoted = True
                elif (piece := self._dollar()) is not None:
                    add(Kind.VAR, piece)
                else:
                    buf.append(c)
                    self.i += 1
            elif c == "`":
                add(Kind.VAR, self._backtick())
            elif c in "*?" or (c == "[" and "]" in self._rest_of_word()):
                add(Kind.GLOB, c)
                self.i += 1
            elif c == "~" and not parts and not buf and not quoted:
                match = _USER.match(self.s, self.i + 1)
                name = "~" + (match.group() if match else "")
                add(Kind.TILDE, name)
                self.i += len(name)
            elif c == "{" and (brace := self._brace()) is not None:
                add(Kind.BRACE, brace)
            else:
                buf.append(c)
                self.i += 1
        if buf or not parts:
            parts.append(Part(Kind.LIT, "".join(buf)))
        return Word(tuple(parts))

    def _rest_of_word(self) -> str:
        j = self.i
        while j < len(self.s) and self.s[j] not in _META:
            j += 1
        return self.s[self.i : j]

    def _brace(self) -> str | None:
        """`{a,b}` or `{1..3}` at the cursor (consumed), else None: a lone `{` is literal."""
        rest = self._rest_of_word()
        end = rest.find("}")
        inside = rest[1:end] if end > 0 else ""
        if not ("," in inside or ".." in inside) or any(q in inside for q in "'\"$`\\{"):
            return None
        self.i += end + 1
        return rest[: end + 1]

    def _double(self, add: Callable[[Kind, str, bool], None], buf: list[str]) -> None:
        self.i += 1
        while True:
            c = self.peek()
            if c == "":
                raise Unreadable('a " quote is never closed; close it')
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.peek(1) in '$`"\\\n':
                if self.peek(1) != "\n":
                    buf.append(self.peek(1))
                self.i += 2
            elif c == "$" and (piece := self._dollar()) is not None:
                add(Kind.VAR, piece, True)
            elif c == "`":
                add(Kind.VAR, self._backtick(), True)
            else:
                buf.append(c)
                self.i += 1

    def _dollar(self) -> str | None:
        """The expansion at the cursor (consumed) as written, or None for a literal `$`."""
        start = self.i
        if self._at("$(("):
            depth = 0
            self.i += 1
            while (c := self.peek()) != "":
                self.i += 1
                depth += (c == "(") - (c == ")")
                if depth == 0:
                    return self.s[start : self.i]
            raise Unreadable("a `$((` is never closed; close it")
        if self._at("$("):
            self.i += 2
            self._substitution()
            return self.s[start : self.i]
        if self._at("${"):
            end = self.s.find("}", self.i)
            if end < 0:
                raise Unreadable("a `${` is never closed; close it")
            inside = self.s[self.i + 2 : end]
            if any(t in inside for t in ("$(", "`", "{")):
                raise Unreadable("a command inside `${...}`; run it on its own line first")
            self.i = end + 1
            return self.s[start : self.i]
        nxt = self.peek(1)
        if nxt.isalpha() or nxt == "_":
            self.i += 1
            while self.peek().isalnum() or self.peek() == "_":
                self.i += 1
            return self.s[start : self.i]
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i += 2
            return self.s[start : self.i]
        return None

    def _substitution(self) -> None:
        """The commands of a `$(...)` or `<(...)` whose opening the cursor has passed."""
        save = self.scope
        self.scope = (*save, next(self.ids))
        self.commands(closer=True)
        self.scope = save

    def _backtick(self) -> str:
        start = self.i
        j = self.i + 1
        while j < len(self.s) and self.s[j] != "`":
            j += 2 if self.s[j] == "\\" else 1
        if j >= len(self.s):
            raise Unreadable("a ` quote is never closed; close it, or use $(...)")
        inner = self.s[self.i + 1 : j].replace("\\`", "`").replace("\\$", "$")
        self.i = j + 1
        reader = _Reader(inner.replace("\\\\", "\\"), (*self.scope, next(self.ids)), self.ids)
        reader.commands(closer=False)
        self.out.extend(reader.out)
        return self.s[start : self.i]

    def _ansi_c(self) -> str:
        """The text of a `$'...'` string at the cursor (consumed), common escapes decoded."""
        j = self.i + 2
        out: list[str] = []
        escapes = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "a": "\a", "0": "\0"}
        while j < len(self.s) and self.s[j] != "'":
            if self.s[j] == "\\" and j + 1 < len(self.s):
                out.append(escapes.get(self.s[j + 1], "\\" + self.s[j + 1]))
                j += 2
            else:
                out.append(self.s[j])
                j += 1
        if j >= len(self.s):
            raise Unreadable("a $' quote is never closed; close it")
        self.i = j + 1
        return "".join(out)

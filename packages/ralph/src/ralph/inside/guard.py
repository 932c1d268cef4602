"""The destructive-command guard: the one list of what an agent may not run (README "Guardrails").

Claude Code asks the `PreToolUse` hook (hookrun.py) before every Bash command and file edit;
a command this module refuses never runs, and the model reads the one-line reason instead of
a result. The list is about shared state the iteration does not own: other people's commits
on the remote, uncommitted work that was there before the agent started, files outside the
project, and the control directories. Work the iteration made itself stays the agent's to
throw away.

This module runs inside the sandbox, copied next to hookrun.py, so it imports only the
standard library. It parses, it does not execute: what it cannot see (a script that runs
`git push -f` for it) the sandbox's mounts still stop or the review catches.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

# Directories no tool call may write: sgf's control files, git's, Claude Code's settings.
PROTECTED = (".sgf", ".git", ".claude")
FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
_SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")", "|&"}
_REDIRECTS = {">", ">>", ">|", "&>", "&>>", "1>", "2>"}
_PREFIXES = {"sudo", "env", "command", "exec", "nohup", "time", "nice", "xargs"}
_WRITERS = {"rm", "mv", "cp", "tee", "truncate", "touch", "chmod", "chown", "ln", "install"}
_SHELLS = {"sh", "bash", "dash", "zsh"}


class Facts(Protocol):
    """What the guard needs to know about the repository, asked only when a rule needs it."""

    def foreign_changes(self) -> list[str]:
        """Uncommitted paths that were already changed when the iteration began."""
        ...

    def keeps_commits(self, target: str) -> bool:
        """Whether moving HEAD to `target` keeps every commit HEAD had when it began."""
        ...


@dataclass(frozen=True, slots=True)
class Rule:
    """One entry of the list: its name, and what it refuses (the README's table)."""

    name: str
    refuses: str


RULES = (
    Rule("force-push", "`git push` with --force, --force-with-lease, --mirror, --delete or +ref"),
    Rule("reset-hard", "`git reset --hard` over uncommitted work or commits it did not make"),
    Rule("discard", "`git checkout -- PATH`, `git checkout .`, `git restore` over others' work"),
    Rule("clean", "`git clean -f` with -d, -x or -X while untracked files predate it"),
    Rule("rm-outside", "`rm -r` of a path outside the project, the project itself or .git"),
    Rule("protected-write", "writes into .sgf/, .git/ or .claude/ (redirects, rm, mv, cp, sed -i)"),
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a tool call is refused: a rule name and one line for the model."""

    rule: str
    reason: str


def check_tool(
    tool: str, tool_input: dict[str, object], *, project: str, cwd: str, facts: Facts
) -> Refusal | None:
    """The refusal for one tool call, or None to let it run."""
    if tool == "Bash":
        command = tool_input.get("command")
        return check_command(str(command), project=project, cwd=cwd, facts=facts)
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if isinstance(path, str) and (where := protected(path, project=project, cwd=cwd)):
            return Refusal("protected-write", f"refused: {tool} of {path} writes into {where}/")
    return None


def check_command(command: str, *, project: str, cwd: str, facts: Facts) -> Refusal | None:
    """The refusal for a shell command line, or None."""
    try:
        segments = list(_segments(command))
    except ValueError:  # unbalanced quotes: the shell would refuse it too
        return None
    for words, targets in segments:
        if words[:1] == ["cd"] and len(words) > 1:  # later commands run from there
            cwd = str(_resolve(words[1], cwd))
        for target in targets:
            if where := protected(target, project=project, cwd=cwd):
                return Refusal("protected-write", f"refused: a redirect writes into {where}/")
        if refusal := _check_words(words, project=project, cwd=cwd, facts=facts):
            return refusal
    return None


def protected(path: str, *, project: str, cwd: str) -> str | None:
    """The protected directory `path` lies in (".git"...), or None."""
    full = _resolve(path, cwd)
    root = PurePosixPath(project)
    if full == root or not full.is_relative_to(root):
        return None
    first = full.relative_to(root).parts[0]
    return first if first in PROTECTED else None


def _resolve(path: str, cwd: str) -> PurePosixPath:
    """`path` made absolute against `cwd`, with `.` and `..` folded (no filesystem access)."""
    joined = PurePosixPath(cwd) / path
    parts: list[str] = []
    for part in joined.parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return PurePosixPath("/", *parts)


def _segments(command: str) -> Iterator[tuple[list[str], list[str]]]:
    """Each simple command's words, and the files its redirects write."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    targets: list[str] = []
    tokens = list(lexer)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in _SEPARATORS:
            if words or targets:
                yield words, targets
            words, targets = [], []
        elif token in _REDIRECTS or (token.endswith(">") and token.rstrip(">").isdigit()):
            if i + 1 < len(tokens) and tokens[i + 1] not in _SEPARATORS:
                if not tokens[i + 1].startswith("&"):  # 2>&1 names a descriptor, not a file
                    targets.append(tokens[i + 1])
                i += 1
        elif token in ("<", "<<", "<<<"):
            i += 1  # input: skip what it reads
        else:
            words.append(token)
        i += 1
    if words or targets:
        yield words, targets


def _strip_prefixes(words: Sequence[str]) -> list[str]:
    out = list(words)
    while out and (("=" in out[0] and not out[0].startswith("-")) or out[0] in _PREFIXES):
        out.pop(0)
        while out and out[0].startswith("-") and out[0] != "--":  # sudo -u x, env -i
            out.pop(0)
    return out


def _check_words(words: list[str], *, project: str, cwd: str, facts: Facts) -> Refusal | None:
    words = _strip_prefixes(words)
    if not words:
        return None
    program = PurePosixPath(words[0]).name
    if program in _SHELLS and "-c" in words[1:]:
        at = words.index("-c", 1)
        if at + 1 < len(words):
            return check_command(words[at + 1], project=project, cwd=cwd, facts=facts)
    if program == "git":
        return _check_git(words[1:], facts=facts)
    if program == "rm" and (refusal := _check_rm(words[1:], project=project, cwd=cwd)):
        return refusal
    if program in _WRITERS or (program == "sed" and any(w.startswith("-i") for w in words)):
        for word in words[1:]:
            if not word.startswith("-") and (where := protected(word, project=project, cwd=cwd)):
                return Refusal("protected-write", f"refused: {program} writes into {where}/")
    return None


_GIT_VALUE_OPTIONS = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}


def _check_git(args: list[str], *, facts: Facts) -> Refusal | None:
    while args and args[0].startswith("-"):  # git -C dir -c k=v SUBCOMMAND
        option = args.pop(0)
        if option in _GIT_VALUE_OPTIONS and args:
            args.pop(0)
    if not args:
        return None
    sub, rest = args[0], args[1:]
    check: Callable[[list[str], Facts], Refusal | None] | None = _GIT_RULES.get(sub)
    return check(rest, facts) if check else None


def _push(rest: list[str], facts: Facts) -> Refusal | None:
    short = "".join(w[1:] for w in rest if w.startswith("-") and not w.startswith("--"))
    forced = (
        "f" in short
        or "d" in short
        or any(w.split("=")[0] in _FORCING for w in rest)
        or any(w.startswith(("+", ":")) for w in rest if not w.startswith("-"))
    )
    if forced:
        return Refusal(
            "force-push",
            "refused: a force push (or a delete) rewrites the remote's history for everyone; "
            "push normally, and rebase onto the remote if it is rejected",
        )
    return None


_FORCING = {"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete"}


def _foreign(facts: Facts, what: str, rule: str) -> Refusal | None:
    changed = facts.foreign_changes()
    if not changed:
        return None
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return Refusal(
        rule,
        f"refused: {what} would destroy uncommitted changes this iteration did not make "
        f"({shown}); leave them alone or commit only your own files",
    )


def _reset(rest: list[str], facts: Facts) -> Refusal | None:
    if "--hard" not in rest:
        return None
    targets = [w for w in rest if not w.startswith("-")]
    if targets and not facts.keeps_commits(targets[0]):
        return Refusal(
            "reset-hard",
            f"refused: git reset --hard {targets[0]} drops commits this iteration did not "
            "make; revert your own commits instead",
        )
    return _foreign(facts, "git reset --hard", "reset-hard")


def _checkout(rest: list[str], facts: Facts) -> Refusal | None:
    discards = "--" in rest or "." in rest or "-f" in rest or "--force" in rest
    return _foreign(facts, "git checkout " + " ".join(rest), "discard") if discards else None


def _restore(rest: list[str], facts: Facts) -> Refusal | None:
    if "--staged" in rest and "--worktree" not in rest and "-W" not in rest:
        return None  # only the index changes: nothing is lost
    return _foreign(facts, "git restore", "discard")


def _clean(rest: list[str], facts: Facts) -> Refusal | None:
    short = "".join(w[1:] for w in rest if w.startswith("-") and not w.startswith("--"))
    force = "f" in short or "--force" in rest
    wide = any(c in short for c in "dxX")
    return _foreign(facts, "git clean -" + short, "clean") if force and wide else None


def _stash(rest: list[str], facts: Facts) -> Refusal | None:
    if rest and rest[0] in ("drop", "clear"):
        return Refusal("discard", "refused: git stash drop/clear deletes work someone stashed")
    return None


_GIT_RULES: dict[str, Callable[[list[str], Facts], Refusal | None]] = {
    "push": _push,
    "reset": _reset,
    "checkout": _checkout,
    "restore": _restore,
    "clean": _clean,
    "stash": _stash,
}


def _check_rm(args: list[str], *, project: str, cwd: str) -> Refusal | None:
    short = "".join(w[1:] for w in args if w.startswith("-") and not w.startswith("--"))
    if not ("r" in short or "R" in short or "--recursive" in args):
        return None
    root = PurePosixPath(project)
    for word in args:
        if word.startswith("-"):
            continue
        full = _resolve(word.replace("~", "/home", 1) if word.startswith("~") else word, cwd)
        inside = full.is_relative_to(root) and full != root
        if not inside:
            return Refusal(
                "rm-outside", f"refused: rm -r {word} reaches outside the project {project}"
            )
    return None

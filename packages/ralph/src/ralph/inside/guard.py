"""The destructive-command guard: what an agent may not run (docs/guardrails.md).

Claude Code asks the `PreToolUse` hook (hookrun.py) before every Bash command and file edit;
a command this module refuses never runs, and the model reads the one-line reason instead of
a result. The list (rules.py) is about shared state the iteration does not own: other
people's commits on the remote and on branches, uncommitted work that was there before the
agent started, files outside the project, and the control directories. Work the iteration
made itself stays the agent's to throw away.

It fails closed: a line shell.py cannot read, a shell fed text it cannot see, a path hidden
in a variable where the path decides, are refused with the way to say them plainly. It is
still a seatbelt for a confused agent, not a wall: it parses, it does not execute, so a
script that runs `git push -f` for it is not seen. The sandbox is the boundary.

This module runs inside the sandbox, copied next to hookrun.py: standard library only.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ralph.inside import gitrules
from ralph.inside.rules import RULES, Facts, Place, Refusal
from ralph.inside.shell import KEYWORDS, Unreadable, parse
from ralph.inside.words import Command, Kind, Part, Word, literal

__all__ = ["FILE_TOOLS", "RULES", "Facts", "Refusal", "check_command", "check_tool"]

FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
_WRITERS = {"rm", "mv", "cp", "tee", "truncate", "touch", "chmod", "chown", "ln", "install"}
# Programs that run the command after their own options: (options taking a value, how many
# words come before the command). `timeout 60 git push -f` is a push.
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "-C", "--unset", "--chdir"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-o", "-f", "--output", "--format"}), 0),
    "command": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "xargs": (frozenset({"-I", "-n", "-P", "-d", "-a", "-E", "-L", "-s", "--replace"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u"}), 0),
    "setsid": (frozenset(), 0),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
    "flock": (frozenset({"-w", "-E", "--timeout"}), 1),
    "unbuffer": (frozenset(), 0),
    "chronic": (frozenset(), 0),
}
# Options whose value is itself a command line: `flock LOCK -c 'git push -f'`.
_COMMAND_OPTIONS = {"flock": "-c", "su": "-c", "runuser": "-c", "env": "-S"}
_CHECKED = {"git", "rm", "find", "eval", "sed", *_SHELLS, *_WRITERS, *_WRAPPERS}
_NOT_COMMANDS = {"for", "select", "function", "in", "fi", "done", "esac", "}", "[[", "]]"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def check_tool(
    tool: str,
    tool_input: dict[str, object],
    *,
    project: str,
    cwd: str,
    facts: Facts,
    home: str = "/root",
) -> Refusal | None:
    """The refusal for one tool call, or None to let it run."""
    place = Place(project, cwd, home)
    if tool == "Bash":
        return _check_text(str(tool_input.get("command", "")), place, facts)
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        full = place.path(literal(path)) if isinstance(path, str) else None
        if full is not None and (where := place.protected(full)):
            return Refusal("protected-write", f"refused: {tool} of {path} writes into {where}/")
    return None


def check_command(
    command: str, *, project: str, cwd: str, facts: Facts, home: str = "/root"
) -> Refusal | None:
    """The refusal for a shell command line, or None."""
    return _check_text(command, Place(project, cwd, home), facts)


def _check_text(text: str, start: Place, facts: Facts) -> Refusal | None:
    try:
        commands = parse(text)
    except Unreadable as e:
        return Refusal("unreadable", f"refused: the guard cannot read this command: {e}")
    places: dict[tuple[int, ...], Place] = {(): start}
    for command in commands:
        place = next(places[s] for s in _outward(command.scope) if s in places)
        words = _command_words(list(command.words))
        if words and words[0].is_("cd", "pushd", "popd"):
            target = next((w for w in words[1:] if not w.text.startswith("-")), literal(""))
            places[command.scope] = place.moved(literal("-") if words[0].is_("popd") else target)
        for target in command.writes:
            path = place.path(target)
            if path is not None and (where := place.protected(path)):
                return Refusal("protected-write", f"refused: a redirect writes into {where}/")
        if refusal := _check(command, words, place, facts):
            return refusal
    return None


def _outward(scope: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [scope[:n] for n in range(len(scope), -1, -1)]


def _command_words(words: list[Word]) -> list[Word]:
    """The command proper: keywords (`if`, `do`, `!`) and `VAR=value` prefixes left out."""
    while words and (
        (words[0].plain and words[0].text in KEYWORDS)
        or (words[0].parts[0].kind is Kind.LIT and _ASSIGNMENT.match(words[0].parts[0].text))
    ):
        words = words[1:]
    return words


def _check(command: Command, words: list[Word], place: Place, facts: Facts) -> Refusal | None:
    if not words or words[0].is_(*_NOT_COMMANDS):
        return None
    if not words[0].plain:  # `$GIT push -f`: checked as each program it could be
        for name in ("git", "rm", "find"):
            if refusal := _check(command, [literal(name), *words[1:]], place, facts):
                return Refusal(refusal.rule, f"{refusal.reason} (if {words[0].text} is {name})")
        return None
    program = PurePosixPath(words[0].text).name
    args = words[1:]
    if program in _WRAPPERS or program in _COMMAND_OPTIONS:
        return _wrapped(command, program, args, place, facts)
    if program in _SHELLS:
        return _shell(command, args, place, facts)
    if program == "eval":
        if not all(w.plain for w in args):
            return Refusal("unreadable", "refused: the guard cannot see what eval runs; run it")
        return _check_text(" ".join(w.text for w in args), place, facts)
    if program == "git":
        return gitrules.check(args, place, facts)
    if program == "rm" and (refusal := _rm(args, place)):
        return refusal
    if program == "find":
        return _find(command, args, place, facts)
    if program in _WRITERS or (program == "sed" and any(w.text.startswith("-i") for w in args)):
        for word in args:
            path = None if word.text.startswith("-") else place.path(word)
            if path is not None and (where := place.protected(path)):
                return Refusal("protected-write", f"refused: {program} writes into {where}/")
    return None


def _wrapped(
    command: Command, program: str, args: list[Word], place: Place, facts: Facts
) -> Refusal | None:
    """The command a wrapper (`timeout 60 ...`, `sudo -u x ...`) runs, checked as itself."""
    if flag := _COMMAND_OPTIONS.get(program):
        for at, word in enumerate(args[:-1]):
            if word.is_(flag):
                return _code(args[at + 1], place, facts)
    if program == "command" and any(w.is_("-v", "-V") for w in args[:1]):
        return None  # a lookup: nothing runs
    values, before = _WRAPPERS.get(program, (frozenset(), 0))
    i = 0
    while i < len(args) and args[i].plain and args[i].text.startswith("-"):
        option, i = args[i].text, i + 1
        if option == "--":
            break
        if option.startswith("--"):
            i += option in values  # `--signal KILL`; `--signal=KILL` is one word
            continue
        for k, char in enumerate(option[1:], start=2):
            if f"-{char}" in values:
                i += k == len(option)  # `-n 10`; `-n10` is one word
                break
    while program in ("env", "sudo") and i < len(args) and _ASSIGNMENT.match(args[i].text):
        i += 1
    rest = args[i + before :]
    if program == "xargs":  # its command gets words from stdin the guard cannot see
        rest = [*rest, Word((Part(Kind.VAR, "<stdin>"),))]
    if not rest:
        return None
    if refusal := _check(command, rest, place, facts):
        return refusal
    # An option the table does not know may have eaten the command's first word: look on.
    for at, word in enumerate(rest[1:], start=1):
        name = PurePosixPath(word.text).name if word.plain else ""
        if name in _CHECKED and (refusal := _check(command, rest[at:], place, facts)):
            return refusal
    return None


def _code(code: Word, place: Place, facts: Facts) -> Refusal | None:
    """A command line given as one word (`bash -c '...'`), read and checked."""
    if any(p.kind is not Kind.LIT and place.path(Word((p,))) is None for p in code.parts):
        return Refusal(
            "unreadable",
            f"refused: the guard cannot see the code {code.text!r} makes before it runs; "
            "put the command in single quotes, or run it directly",
        )
    return _check_text(code.text, place, facts)


def _shell(command: Command, args: list[Word], place: Place, facts: Facts) -> Refusal | None:
    """`bash -c '...'`, `bash <<EOF`, `... | sh`: the commands a shell is given."""
    i = 0
    while i < len(args) and args[i].plain and args[i].text[:1] in ("-", "+"):
        option, i = args[i].text, i + 1
        if not option.startswith("--") and "c" in option[1:]:
            return _code(args[i], place, facts) if i < len(args) else None
        if option in ("-o", "+o", "-O", "+O"):
            i += 1
    if i < len(args):
        return None  # a script file: not read (docs/guardrails.md)
    if command.stdin is not None:
        if not command.stdin.plain:
            return Refusal(
                "unreadable",
                "refused: the shell's heredoc expands before it runs; quote its delimiter "
                "(<<'END') or run the commands directly",
            )
        return _check_text(command.stdin.text, place, facts)
    feeder = command.fed_by or ()
    if feeder and feeder[0].is_("echo", "printf"):  # `echo 'git push -f' | sh`
        if not all(w.plain for w in feeder[1:]):
            return Refusal(
                "unreadable",
                "refused: the guard cannot see the code piped into the shell before it runs; "
                "run the commands directly",
            )
        return _check_text(" ".join(w.text for w in feeder[1:]), place, facts)
    return None  # `curl ... | sh`: a script from elsewhere, not read, as `sh script.sh`


def _rm(args: list[Word], place: Place, name: str = "") -> Refusal | None:
    """`rm` of `args`; `name` says it in the refusal (a find's -delete) instead of rm."""
    recursive, options = False, True
    targets: list[Word] = []
    for word in args:
        if options and word.is_("--"):
            options = False
        elif options and word.plain and word.text.startswith("-") and word.text != "-":
            short = not word.text.startswith("--")
            recursive |= word.text == "--recursive" or (short and bool(set(word.text) & {"r", "R"}))
        else:
            targets.append(word)
    for word in targets:
        said = name or f"rm -r {word.text}"
        path = place.path(word)
        if path is None:
            if recursive:
                return Refusal(
                    "rm-outside",
                    f"refused: {said}: the guard cannot tell where it points "
                    "before it runs; name the path",
                )
            continue
        if recursive and not place.inside(path):
            return Refusal(
                "rm-outside",
                f"refused: {said} reaches outside the project or removes it "
                f"whole ({place.project})",
            )
        if where := place.protected(path):
            return Refusal("protected-write", f"refused: {said} removes {where}/")
    return None


def _find(command: Command, args: list[Word], place: Place, facts: Facts) -> Refusal | None:
    """`find ROOTS ... -delete` and `-exec CMD {} ;`: CMD run on things under each root."""
    i = 0
    while i < len(args) and (args[i].is_("-H", "-L", "-P", "-D") or args[i].text[:2] == "-O"):
        i += 2 if args[i].is_("-D") else 1
    roots: list[Word] = []
    while i < len(args) and not (args[i].text.startswith("-") or args[i].is_("(", ")", "!", ",")):
        roots.append(args[i])
        i += 1
    expression = args[i:]
    runs: list[list[Word]] = []
    j = 0
    while j < len(expression):
        if expression[j].is_("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (k for k in range(j + 1, len(expression)) if expression[k].is_(";", "+")),
                len(expression),
            )
            runs.append(expression[j + 1 : end])
            j = end
        j += 1
    for root in roots or [literal(".")]:
        under = Word((*root.parts, Part(Kind.LIT, "/"), Part(Kind.GLOB, "*")))
        if any(w.is_("-delete") for w in expression) and (
            refusal := _rm([literal("-r"), under], place, f"find {root.text} -delete")
        ):
            return refusal
        for run in runs:
            words = [under if w.is_("{}") else w for w in run]
            if refusal := _check(command, _command_words(words), place, facts):
                return refusal
    return None

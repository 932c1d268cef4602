"""Which Bash commands run the stack's checks, and whether a run of them passed.

The stop checklist's `backpressure` line asks that the checks passed after the last file edit.
`run-silent LABEL -- COMMAND` is the quiet way to run them; running them directly counts the
same: `pytest`, `python3 -m unittest`, `cargo test`, `go vet` (the checkers of the stacks sgf
seeds, `templates/stacks/*/backpressure.md`) and whatever else the project's own
`.sgf/backpressure.md` lists. A model that checks its work the way it knows should not be
sent back to do it again through a wrapper.

Claude Code runs `PostToolUse` only for a command that exited 0 (a failure is
`PostToolUseFailure`); a check piped into `tail` exits 0 whatever it found, so a run whose
output carries a runner's failure summary does not count as passing. Standard library only
(sandbox).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ralph.inside.shell import KEYWORDS, Unreadable, parse
from ralph.inside.words import Word

LISTED = Path(".sgf") / "backpressure.md"  # the project's list of commands (sgf writes it)
RUN_SILENT = "run-silent"
# The checkers of the stacks sgf ships, by signature (see `signature`), and their usual
# direct forms; a test proves every step of every shipped stack file is among them.
KNOWN = frozenset(
    {
        *[(n,) for n in ("pytest", "py.test", "unittest", "py_compile", "compileall", "doctest")],
        *[(n,) for n in ("mypy", "pyright", "tox", "nox", "gofmt", "golangci-lint", "tsc")],
        *[(n,) for n in ("vitest", "jest", "eslint", "prettier", "clippy-driver")],
        ("ruff", "check"),
        ("ruff", "format"),
        *[("cargo", n) for n in ("test", "clippy", "build", "check", "fmt", "nextest")],
        *[("go", n) for n in ("test", "vet", "build")],
        *[("npx", n) for n in ("vitest", "jest", "tsc", "eslint", "prettier", "tauri")],
        *[(pm, "test") for pm in ("npm", "pnpm", "yarn", "bun")],
        *[("npm", "run", n) for n in ("test", "build", "lint", "check", "typecheck", "format")],
        *[("make", n) for n in ("test", "check", "lint", "build", "fmt", "format", "typecheck")],
    }
)
# Tools whose first word names what they do (`cargo test`); `npm run X` names X too.
_SUBCOMMANDS = {"cargo", "go", "npm", "pnpm", "yarn", "bun", "npx", "make", "ruff"}
# Prefixes that run the command after them: `uv run pytest`, `timeout 600 cargo test`.
_RUNNERS = {"uv": "run", "poetry": "run", "pipenv": "run", "hatch": "run", "pdm": "run"}
_PREFIXES = {"time", "command", "nohup", "exec", "env", "nice", "stdbuf", "timeout"}
# Words a listing may hold in backquotes that are no check (`test -z "$(gofmt -l .)"`).
_NOT_CHECKS = {"test", "[", "echo", "printf", "cd", "true", "false", "cat", "ls", "sh", "bash"}
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# Summaries the common runners print when something failed (run-silent's is its ✗).
_FAILED = re.compile(
    r"^(FAILED \(|FAILED |ERROR |FAIL\b|--- FAIL|test result: FAILED|Traceback \(most recent|"
    r"make(\[\d+\])?: \*\*\*|error(\[E\d+\])?: |Found \d+ errors? |\u2717 )"
    r"|^=+ .*\b\d+ (failed|errors?)\b|\berror TS\d+:|\b\d+ failed\b|\u2716 \d+ problems?",
    re.MULTILINE,
)


def checks_in(command: str, project: Path) -> list[str]:
    """The checks a Bash command line runs (`run-silent ...` or a listed or known checker),
    each as its words; empty when it runs none."""
    try:
        commands = parse(command)
    except Unreadable:
        return []
    listed: frozenset[tuple[str, ...]] | None = None
    found: list[str] = []
    for each in commands:
        words = _unwrapped(each.words)
        if not words:
            continue
        if PurePosixPath(words[0]).name == RUN_SILENT:
            found.append(" ".join(words))
            continue
        sign = signature(words)
        if sign is None:
            continue
        if sign not in KNOWN:
            listed = listed if listed is not None else listed_checks(project / LISTED)
            if sign not in listed:
                continue
        found.append(" ".join(words))
    return found


def passed(output: str) -> bool:
    """Whether a check's output (of a command that exited 0) shows no runner's failure."""
    return _FAILED.search(output) is None


def signature(words: list[str]) -> tuple[str, ...] | None:
    """What a command does, for comparing two ways of writing it: `.venv/bin/pytest -x` and
    `python3 -m pytest` are both `("pytest",)`, `cargo test -p x` is `("cargo", "test")`."""
    program, args = PurePosixPath(words[0]).name, words[1:]
    if _PYTHON.fullmatch(program):
        return signature(args[1:]) if len(args) > 1 and args[0] == "-m" else None
    if program in _NOT_CHECKS:
        return None
    if program not in _SUBCOMMANDS:
        return (program,)
    positional = [a for a in args if not a.startswith(("-", "+"))]
    if program in ("npm", "pnpm", "yarn", "bun") and positional[:1] == ["run"]:
        return (program, *positional[:2])
    return (program, *positional[:1])


def listed_checks(path: Path) -> frozenset[tuple[str, ...]]:
    """The signatures of the commands a backpressure file names in backquotes."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        return frozenset()
    out: set[tuple[str, ...]] = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        try:
            commands = parse(span)
        except Unreadable:
            continue
        for each in commands:
            words = _unwrapped(each.words)
            if words and PurePosixPath(words[0]).name == RUN_SILENT:
                words = words[words.index("--") + 1 :] if "--" in words else []
            if words and (sign := signature(words)) is not None:
                out.add(sign)
    return frozenset(out)


def _unwrapped(words: tuple[Word, ...]) -> list[str]:
    """A command's words after `VAR=x`, keywords, `timeout 60` and `uv run`; [] when its
    program is not plain text."""
    rest = list(words)
    while rest:
        head = rest[0].text
        if (rest[0].plain and head in KEYWORDS) or _ASSIGNMENT.match(head):
            rest = rest[1:]
        elif rest[0].plain and head in _PREFIXES:
            rest = rest[1:]
            while rest and rest[0].text.startswith("-"):
                rest = rest[2:] if rest[0].text in ("-n", "-u", "-s", "-k") else rest[1:]
            if head == "timeout" and rest:
                rest = rest[1:]  # the duration
        elif rest[0].plain and _RUNNERS.get(head) and len(rest) > 1 and rest[1].is_(_RUNNERS[head]):
            rest = rest[2:]
            while rest and rest[0].text.startswith("-"):
                rest = rest[1:]
        else:
            break
    if not rest or not rest[0].plain:
        return []
    return [w.text for w in rest]

"""The sgf exception family: every error a user can cause, each with a stable code.

cli.main maps them to `error: <message>` on stderr and exit code 1 (never 2: ralph's 2 means
"iterations exhausted", and sgf passes ralph's codes through).
"""

from __future__ import annotations

from collections.abc import Sequence


class SgfError(Exception):
    """Base of everything sgf reports to the user as a one-line error."""

    code = "error"


class NotAGitRepo(SgfError):
    code = "not_a_git_repo"

    def __init__(self, path: object) -> None:
        super().__init__(
            f"{path} is not inside a git repository; run `git init` first "
            "(or `sgf init --git-init` to let sgf do it)"
        )


class NotInitialised(SgfError):
    code = "not_initialised"

    def __init__(self, path: object) -> None:
        super().__init__(f"no .sgf/config.toml under {path}; run `sgf init` first")


class UnknownStack(SgfError):
    code = "unknown_stack"

    def __init__(self, name: str | None, known: Sequence[str]) -> None:
        listing = ", ".join(known)
        if name is None:
            super().__init__(f"choose a stack with --stack; one of: {listing}")
        else:
            super().__init__(f"unknown stack {name!r}; one of: {listing}")


class ConfigError(SgfError):
    code = "invalid_config"


class SpecNotFound(SgfError):
    code = "spec_not_found"

    def __init__(self, stem: str, known: Sequence[str]) -> None:
        hint = ", ".join(known) if known else "none yet (run `sgf spec`)"
        super().__init__(f"no spec specs/{stem}.md; existing specs: {hint}")


class PromptError(SgfError):
    """A prompt template could not be rendered; the message names the file and line."""

    code = "prompt_error"


class PreflightError(SgfError):
    code = "preflight"


class DirtyTree(SgfError):
    code = "dirty_tree"


class LoopNotFound(SgfError):
    code = "loop_not_found"


class MergeError(SgfError):
    """An existing file sgf must merge into cannot be parsed; it is left untouched."""

    code = "merge_error"


class CommandFailed(SgfError):
    """A program sgf ran (git, pn, docker, npm, pip) failed."""

    code = "command_failed"

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        detail = stderr.strip().splitlines()[-5:] if stderr.strip() else []
        tail = ("\n  " + "\n  ".join(detail)) if detail else ""
        super().__init__(f"`{' '.join(argv)}` exited with {returncode}{tail}")


class ProgramMissing(SgfError):
    code = "program_missing"

    def __init__(self, program: str, hint: str) -> None:
        super().__init__(f"{program} not found: {hint}")

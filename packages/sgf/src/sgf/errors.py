"""The sgf exception family: every error a user can cause, each with a stable code.

cli.main maps them to `error: <message>` on stderr and exit code 1 (never 2: ralph's 2 means
"iterations exhausted", and sgf passes ralph's codes through).
"""

from __future__ import annotations

from collections.abc import Sequence

from ralph.shared.failure import ProgramFailed


class SgfError(Exception):
    """Base of everything sgf reports to the user as a one-line error."""

    code = "error"


class NotAGitRepo(SgfError):
    """sgf works inside a git work tree only."""

    code = "not_a_git_repo"

    def __init__(self, path: object) -> None:
        super().__init__(
            f"{path} is not inside a git repository; run `git init` first "
            "(or `sgf init --git-init` to let sgf do it)"
        )


class InsideGitDir(SgfError):
    """The working directory is a repository's `.git` (or a bare repository), not a work tree."""

    code = "inside_git_dir"

    def __init__(self, path: object) -> None:
        super().__init__(
            f"{path} is inside a git directory (.git or a bare repository), not a work tree; "
            "run sgf from the work tree"
        )


class NotInitialised(SgfError):
    """The project has no `.sgf/config.toml`."""

    code = "not_initialised"

    def __init__(self, path: object) -> None:
        super().__init__(f"no .sgf/config.toml under {path}; run `sgf init` first")


class UnknownStack(SgfError):
    """No stack was chosen, or an unknown one."""

    code = "unknown_stack"

    def __init__(self, name: str | None, known: Sequence[str]) -> None:
        listing = ", ".join(known)
        if name is None:
            super().__init__(f"choose a stack with --stack; one of: {listing}")
        else:
            super().__init__(f"unknown stack {name!r}; one of: {listing}")


class ConfigError(SgfError):
    """`.sgf/config.toml` cannot be used as written."""

    code = "invalid_config"


class SpecNotFound(SgfError):
    """`--spec` names no `specs/<stem>.md`."""

    code = "spec_not_found"

    def __init__(self, stem: str, known: Sequence[str]) -> None:
        hint = ", ".join(known) if known else "none yet (run `sgf spec`)"
        super().__init__(f"no spec specs/{stem}.md; existing specs: {hint}")


class PromptError(SgfError):
    """A prompt template could not be rendered; the message names the file and line."""

    code = "prompt_error"


class PreflightError(SgfError):
    """A prerequisite of launching a loop is missing."""

    code = "preflight"


class OptionsRefused(SgfError):
    """ralph does not take the options a loop would run with (`ralph --check-options`)."""

    code = "options_refused"

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"ralph refuses this loop's options: {reason} (from the command line or "
            ".sgf/config.toml); no loop was started"
        )


class DirtyTree(SgfError):
    """Uncommitted changes that a loop would sweep into its commits."""

    code = "dirty_tree"


class LoopNotFound(SgfError):
    """No loop (or more than one) matches the id given."""

    code = "loop_not_found"


class MergeError(SgfError):
    """An existing file sgf must merge into cannot be parsed; it is left untouched."""

    code = "merge_error"


class CommandFailed(ProgramFailed, SgfError):
    """A program sgf ran (git, pn, docker, npm, pip) failed: the command, its exit code and
    the last lines of both its output streams (the wording is ralph.shared.failure's)."""


class PnRefused(SgfError):
    """`pn` could not do what sgf asked; the message is pn's own one-line error."""

    code = "pn_refused"


class ProgramMissing(SgfError):
    """A program sgf needs is not installed or not on PATH."""

    code = "program_missing"

    def __init__(self, program: str, hint: str) -> None:
        super().__init__(f"{program} not found: {hint}")


class UnsafeRepository(SgfError):
    """A pointer git never writes sat in the repository's git directory (gitguard.py): git
    would have taken its configuration from wherever it points."""

    code = "unsafe_repository"

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"{detail} (git never writes it into a repository's own git directory and would "
            "read its configuration from wherever it points: an agent may have planted it)"
        )


class PathRefused(SgfError):
    """A file sgf writes inside the project is a link, a folder, or under a linked folder."""

    code = "path_refused"

    def __init__(self, path: object, *, what: str = "a symbolic link") -> None:
        # `what`: pensa.shared.safefile's words for what stands there ("a symbolic link",
        # "not a folder"); that module raises this for sgf.
        super().__init__(
            f"refusing to write {path}: it is {what} (sgf never writes through a link, which "
            "an agent may have planted); look at it, remove it, run again"
        )


class EngineUnreachable(SgfError):
    """No Docker engine answers where the environment points (DOCKER_HOST, the local socket)."""

    code = "docker_unreachable"

    def __init__(self, why: str) -> None:
        super().__init__(
            f"the Docker engine is not reachable ({why}); start Docker (or check DOCKER_HOST)"
        )


class ImageUnavailable(SgfError):
    """An image the engine lacks could not be pulled or made."""

    code = "image_unavailable"

    def __init__(self, image: str, why: str) -> None:
        self.image = image
        self.why = why
        super().__init__(f"cannot get the image {image}: {why}")


class BuildFailed(SgfError):
    """The Docker engine's build of an image failed; its own words say why."""

    code = "build_failed"

    def __init__(self, image: str, why: str) -> None:
        self.why = why
        super().__init__(f"docker build of {image} failed: {why}")


class NoOfflineScenario(SgfError):
    """`--offline` for a stage no shipped scenario plays, or with an agent it cannot drive."""

    code = "no_offline_scenario"

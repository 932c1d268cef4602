"""ralph's exception family: each error carries a stable `code`; the CLI maps them to exit 1."""

from __future__ import annotations

from ralph.shared.failure import ProgramFailed


class RalphError(Exception):
    """Anything that stops ralph with exit code 1 and a one-line message."""

    code = "error"


class UsageProblem(RalphError):
    """Bad arguments (click's own usage errors are mapped to the same exit code, 1)."""

    code = "invalid_argument"


class PromptNotFound(RalphError):
    """The default prompt file is missing (any other PROMPT would be inline text)."""

    code = "prompt_not_found"

    def __init__(self, path: str) -> None:
        super().__init__(
            f"prompt file {path!r} not found: pass a prompt file or inline text as PROMPT"
        )


class DockerUnavailable(RalphError):
    """No Docker engine answers (or the docker CLI is missing)."""

    code = "docker_unavailable"

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"cannot reach the Docker engine ({detail}): start Docker, or use --sandbox none"
        )


class TemplateMissing(RalphError):
    """The --template image does not exist locally."""

    code = "template_missing"

    def __init__(self, image: str) -> None:
        super().__init__(
            f"sandbox image {image!r} not found: build it with `sgf init` "
            f"(or `docker build -t {image} .`), or pass --template IMAGE"
        )


class AgentNotFound(RalphError):
    """The agent executable cannot be started (on the host or in the sandbox)."""

    code = "agent_not_found"

    def __init__(
        self, exe: str, *, where: str = "", why: str = "", fix: str = "install it"
    ) -> None:
        place = f" {where}" if where else ""
        because = f"{why}; " if why else ""
        super().__init__(
            f"agent executable {exe!r} not found{place}: {because}{fix} or pass --command EXE"
        )


class SandboxFailed(RalphError):
    """The Docker engine refused to create or start a container."""

    code = "sandbox_failed"


class UsageLimitFatal(RalphError):
    """A usage limit that waiting cannot lift (no credits, spend or admin limit)."""

    code = "usage_limit"


class CommandFailed(ProgramFailed, RalphError):
    """A helper program (git, a sound player) failed: the command, its exit code and the last
    lines of both its output streams (the wording is ralph.shared.failure's, sgf's too)."""


class UnsafeRepository(RalphError):
    """The checkout's git pointers lead somewhere git would take attacker configuration from."""

    code = "unsafe_repository"


class LinkRefused(RalphError):
    """A file ralph writes, appends to or removes is a symbolic link (or not a regular file)."""

    code = "link_refused"

    def __init__(self, path: object, *, what: str = "a symbolic link") -> None:
        # `what`: pensa.shared.safefile's words for what stands there ("a symbolic link",
        # "a FIFO (named pipe), not a regular file"); that module raises this for ralph.
        super().__init__(
            f"refusing to write {path}: it is {what} (ralph never writes through a link, nor into "
            "anything but a regular file, and an agent may have planted it); look at it, remove "
            "it, run again"
        )


class LoginUnusable(RalphError):
    """The host's Claude login cannot give the key proxy a valid token (expired, refused)."""

    code = "login_unusable"

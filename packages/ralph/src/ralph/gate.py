"""Merge only on PASS: a loop's commits must pass its checks before they land.

`ralph --check-command CMD`: once the iteration's commits are on top of the target (replayed
if it moved, integrate.py) and before the target moves, that commit is checked out afresh in
a container of its own (a repository in its /tmp that borrows the project's objects
read-only, so nothing the agent left uncommitted or ignored takes part) and CMD runs there,
in the sandbox like the agent (never on the host: the commit is the agent's code). On failure
the target stays where it was, the commits are set aside on a branch, and the tasks the
iteration closed are reopened with the trimmed failure as a comment; the loop goes on with the
next task.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ralph import pncli, proc
from ralph import sandbox as sandboxes
from ralph.integrate import IntegrationFailed
from ralph.models import Config

# "$1" the commit, "$2" the command. The checkout lives and dies with the container.
SCRIPT = """set -e
dir=$(mktemp -d)/checkout
git init -q "$dir"
cd "$dir"
echo "$RALPH_OBJECTS" > .git/objects/info/alternates
git -c core.hooksPath=/dev/null -c advice.detachedHead=false checkout -q --detach "$1"
set +e
sh -c "$2" 2>&1
"""
HEAD_LINES, TAIL_LINES = 20, 60


class ChecksFailed(IntegrationFailed):
    """The rebased branch did not pass the check command; the target did not move."""

    code = "checks_failed"

    def __init__(self, branch: str, status: int | None, output: str) -> None:
        super().__init__(
            f"the merge check failed on the rebased branch (exit {status}): {branch} did not move"
        )
        self.status = status
        self.output = output


def trimmed(text: str, *, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> str:
    """The first `head` and last `tail` lines, with a count of the lines left out."""
    lines = text.splitlines()
    if len(lines) <= head + tail:
        return "\n".join(lines)
    left_out = len(lines) - head - tail
    return "\n".join([*lines[:head], f"... {left_out} lines left out ...", *lines[-tail:]])


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the check command did on one commit."""

    status: int | None
    output: str  # trimmed

    @property
    def passed(self) -> bool:
        return self.status == 0


def check(
    sandbox: sandboxes.Sandbox,
    commit: str,
    command: str,
    *,
    interrupts: proc.Interrupts,
    timeout: float = 3600.0,
    grace: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
) -> Verdict:
    """Run `command` on a fresh checkout of `commit` in the sandbox."""
    running = sandbox.start_check(["/bin/sh", "-c", SCRIPT, "ralph-check", commit, command])
    chunks: list[bytes] = []
    deadline = clock() + timeout
    status: int | None = None
    try:
        for chunk in running.output(interrupts, lambda: deadline - clock(), chunks.append):
            if chunk is None:
                running.stop(grace=grace)
                chunks.append(b"\n(ralph stopped the check: timed out or interrupted)\n")
                break
            chunks.append(chunk)
    finally:
        status = running.close(grace=grace)
    return Verdict(status, trimmed(b"".join(chunks).decode("utf-8", "replace")))


def reopen(
    project: Path, issues: list[str], failed: ChecksFailed, *, env: Mapping[str, str]
) -> list[str]:
    """Reopen `issues` with the failure as a comment; the ids pn reopened."""
    done = []
    for issue in issues:
        reason = "the merge check failed on the rebased branch; see the comment"
        if pncli.run(["reopen", issue, "--reason", reason], cwd=project, env=env):
            comment = f"Merge check failed (exit {failed.status}):\n{failed.output}"
            pncli.run(["comment", "add", issue, comment], cwd=project, env=env)
            done.append(issue)
    return done


def make(
    config: Config, sandbox: sandboxes.Sandbox, interrupts: proc.Interrupts, *, branch: str
) -> Callable[[str], IntegrationFailed | None] | None:
    """The landing's gate for `config.guardrails.check_command`; None without one."""
    command = config.guardrails.check_command
    if command is None:
        return None

    def gate(commit: str) -> IntegrationFailed | None:
        grace = config.timeouts.stop_grace
        verdict = check(sandbox, commit, command, interrupts=interrupts, grace=grace)
        return None if verdict.passed else ChecksFailed(branch, verdict.status, verdict.output)

    return gate

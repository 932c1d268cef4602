"""One command on a clean checkout of one commit, in the sandbox: the check step's evidence.

Once an iteration's commits are on top of the target (replayed if it moved, integrate.py) and
before the target moves, that commit is checked out afresh in a container of its own (a
repository in its /tmp that borrows the project's objects read-only, so nothing the agent
left uncommitted or ignored takes part) and the command runs there, in the sandbox like the
agent (never on the host: the commit is the agent's code). Its exit status comes from the
container itself, so nothing the command prints can forge it. What the check step does with
it is check/step.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ralph import proc
from ralph import sandbox as sandboxes

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


def trimmed(text: str, *, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> str:
    """The first `head` and last `tail` lines, with a count of the lines left out."""
    lines = text.splitlines()
    if len(lines) <= head + tail:
        return "\n".join(lines)
    left_out = len(lines) - head - tail
    return "\n".join([*lines[:head], f"... {left_out} lines left out ...", *lines[-tail:]])


@dataclass(frozen=True, slots=True)
class Ran:
    """What one command did on one commit."""

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
) -> Ran:
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
    return Ran(status, trimmed(b"".join(chunks).decode("utf-8", "replace")))

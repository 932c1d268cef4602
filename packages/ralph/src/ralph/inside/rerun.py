"""The stop checklist for opencode, which has no event for the end of the agent's turn.

opencode's plugins see tool calls (its guard is a plugin, opencode_plugin.js) but nothing can
hold its turn open: `opencode run` ends when the session goes idle. So the hook program runs
it: `hook.py ... rerun -- opencode run --format json ... PROMPT`. Its JSON lines pass through
unchanged as they come; when it exits 0 the checklist looks (hookrun.stop), and while it
sends the model back, the same command runs again on the same session (`--session ID`) with
the checklist's reason in place of the prompt, as Claude Code's Stop hook would say it. A
signal goes to opencode, and nothing runs after it. Standard library only (sandbox).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from types import FrameType

# The checklist: (session id, the agent's last words) -> the reason to go on, or None.
Stop = Callable[[str, str], "str | None"]
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run(argv: Sequence[str], stop: Stop) -> int:
    """Run `argv` (its last word the prompt) until the checklist lets it stop; its status."""
    command = list(argv)
    signalled: list[int] = []
    while True:
        status, session, said = _once(command, signalled)
        if status != 0 or signalled or not session:
            return status
        reason = stop(session, said)
        if reason is None:
            return 0
        command = [*argv[:-1], "--session", session, reason]


def _once(argv: list[str], signalled: list[int]) -> tuple[int, str, str]:
    """One run: its status, its session id and its last text."""
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)

    def forward(sig: int, frame: FrameType | None) -> None:
        signalled.append(sig)
        child.send_signal(sig)

    previous = {sig: signal.signal(sig, forward) for sig in _SIGNALS}
    session, said = "", ""
    try:
        assert child.stdout is not None
        for line in child.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
            session, said = _seen(line, session, said)
        status = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return (128 - status if status < 0 else status), session, said


def _seen(line: bytes, session: str, said: str) -> tuple[str, str]:
    """The session id and last text, updated by one of opencode's JSON lines."""
    try:
        event = json.loads(line)
    except ValueError:
        return session, said
    if not isinstance(event, dict):
        return session, said
    if isinstance(event.get("sessionID"), str) and not session:
        session = event["sessionID"]
    part = event.get("part")
    if event.get("type") == "text" and isinstance(part, dict) and isinstance(part.get("text"), str):
        said = part["text"]
    return session, said

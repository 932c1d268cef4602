"""`sgf spec` on a real terminal: no first-run screens, and the agent's sentinel
ends the session without anybody quitting Claude Code.

The real claude binary runs interactively in the sandbox, on the slave side of a fresh pty, with
a HOME that has never seen Claude Code. The scripted model answers the session's first message
and writes the sentinel; the screen must show that answer and none of the theme picker, trust
dialog or bypass-permissions warning that a fresh `~/.claude.json` brings up, and sgf must end
on its own with exit 0.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.terminal import read_until, screen_text, terminal

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

ANSWER = "SPEC-INTERVIEW-BEGINS"
# Text of the screens a fresh HOME shows (Claude Code 2.1.330), matched without ANSI codes.
ONBOARDING = (
    "Choose the text style",
    "Let's get started",
    "Do you trust the files in this folder",
    "Yes, I accept",
    "Bypass Permissions mode",
    "Security notes",
    "Press Enter to continue",
)


def test_sgf_spec_starts_claude_without_first_run_screens(
    project: Project, model: Callable[[Scenario | dict[str, object]], ModelServer]
) -> None:
    sentinel = {"command": 'echo "$RALPH_LOOP_ID" > .ralph-complete'}
    model({"steps": [{"text": ANSWER, "tool": "Bash", "input": sentinel}, {"text": "Done."}]})
    with terminal(["sgf", "spec"], cwd=project.root, env=project.env) as (proc, master):
        seen = read_until(master, lambda raw: ANSWER in screen_text(raw), timeout=180)
        shown = screen_text(seen)
        assert ANSWER in shown, f"the model's answer never appeared; the screen:\n{shown[-3000:]}"
        for screen in ONBOARDING:
            assert screen not in shown, f"first-run screen {screen!r} appeared:\n{shown[-3000:]}"
        after = read_until(master, lambda _raw: proc.poll() is not None, timeout=90)
        tail = screen_text(after)[-3000:]
        assert proc.poll() is not None, f"nobody quit Claude Code, and it went on:\n{tail}"
        assert proc.wait() == 0, tail
        assert "session complete" in tail

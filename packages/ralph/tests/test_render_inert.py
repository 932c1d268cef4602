"""Hostile text from the model or a tool never reaches the terminal raw."""

from __future__ import annotations

import io

import pytest
from pensa.shared.inert import inert

from ralph.render import Output

from .conftest import Run, Script

HOSTILE = "x\x1b]0;pwned\x07\x1b[2J\r\x9b31m\u202eevil"


def test_inert_escapes_controls_but_keeps_tab_and_newline() -> None:
    assert inert("a\tb\nc\x1b[2J\r\x7f\u202e", multiline=True) == "a\tb\nc\\x1b[2J\\x0d\\x7f\\u202e"


def test_styled_and_plain_output_and_the_log_are_inert() -> None:
    for styled in (False, True):
        stdout, stderr, log = io.StringIO(), io.StringIO(), io.StringIO()
        out = Output(stdout, stderr, styled=styled, log=log)
        out.text(HOSTILE)
        out.tool(f"-> Bash({HOSTILE})")
        out.error(HOSTILE)
        out.agent_stderr(HOSTILE.encode())
        assert "\\x1b]0;pwned" in log.getvalue()
        for text in (log.getvalue(), stderr.getvalue()):
            assert not any(ch in text for ch in "\x07\x9b\u202e\r"), repr(text)
            assert "\x1b]0" not in text, repr(text)
            assert "\x1b[2J" not in text, repr(text)


@pytest.mark.process
def test_a_loop_prints_model_text_and_tool_calls_inert(ralph: Run, script: Script) -> None:
    steps = [
        ["say", HOSTILE],
        ["tool", "Bash", {"command": f"echo {HOSTILE}"}],
        ["write", ".ralph-complete", "$RALPH_LOOP_ID"],
        ["result"],
    ]
    done = ralph("-a", "1", script(default=steps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\\x1b]0;pwned" in done.stdout
    assert not any(ch in done.stdout for ch in "\x07\x9b\u202e\x1b"), repr(done.stdout)

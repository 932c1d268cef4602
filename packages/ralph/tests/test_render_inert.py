"""Hostile text from the model or a tool never reaches the terminal raw."""

from __future__ import annotations

import io
from pathlib import Path

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


@pytest.mark.process
def test_arguments_and_ralph_variables_that_are_not_utf8_are_one_line(project: Path) -> None:
    import os
    import subprocess
    import sys

    for argv, extra in (
        ([b"-a", b"1", b"bad \xff"], {}),
        ([b"-a", b"1", b"x y"], {b"RALPH_X": b"\xff"}),
    ):
        env = {k.encode(): v.encode() for k, v in os.environ.items()}
        env.update(extra)
        done = subprocess.run(
            [sys.executable.encode(), b"-m", b"ralph", *argv],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith("error: ")
        assert "is not valid UTF-8" in done.stderr
        assert done.stderr.count("\n") == 1

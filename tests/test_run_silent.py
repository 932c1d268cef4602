"""`run-silent LABEL -- COMMAND...` (templates/sandbox/run-silent), run as a real program."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

SCRIPT = Path(__file__).resolve().parents[1] / "templates" / "sandbox" / "run-silent"


def run_silent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_passing_command_prints_one_line() -> None:
    done = run_silent("tests", "--", sys.executable, "-c", "print('x\\n' * 500)")
    assert (done.returncode, done.stdout, done.stderr) == (0, "\u2713 tests\n", "")


def test_a_failing_command_prints_head_and_tail_and_keeps_its_exit_code() -> None:
    code = "import sys\nfor i in range(200): print(f'line {i}', file=sys.stderr)\nsys.exit(3)"
    done = run_silent("tests", "--", sys.executable, "-c", code)
    lines = done.stdout.splitlines()
    assert done.returncode == 3
    assert lines[0] == "\u2717 tests (exit 3)"
    assert lines[1:21] == [f"line {i}" for i in range(20)]
    assert lines[21] == "... 120 lines left out ..."
    assert lines[22:] == [f"line {i}" for i in range(140, 200)]


def test_short_failures_are_shown_whole() -> None:
    done = run_silent("lint", "--", sys.executable, "-c", "print('E1 bad'); raise SystemExit(1)")
    assert (done.returncode, done.stdout) == (1, "\u2717 lint (exit 1)\nE1 bad\n")


@pytest.mark.parametrize("args", [(), ("label",), ("label", "true")])
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    done = run_silent(*args)
    assert done.returncode == 2
    assert "usage: run-silent LABEL -- COMMAND..." in done.stderr


def test_a_missing_program_is_one_line_and_exit_127() -> None:
    done = run_silent("x", "--", "/nonexistent/program")
    assert done.returncode == 127
    assert done.stdout.startswith("\u2717 x (cannot run /nonexistent/program")

"""Every tool's console script refuses argv, or a variable it reads, that is not valid UTF-8 in
one line before anything runs: the one rule `pensa.shared.console` owns, as each tool's user
meets it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

# (the tool's module, an argv with a bad argument, which argument that is, what it holds)
ARGUMENTS = [
    ("pensa", [b"create", b"bad \xff", b"-t", b"task"], 2, "bad \\xff"),
    ("ralph", [b"-a", b"1", b"bad \xff"], 3, "bad \\xff"),
    ("sgf", [b"logs", b"\xff"], 2, "\\xff"),
]
# (the tool's module, a variable it reads, a command that would read it)
VARIABLES = [
    ("pensa", "PN_ACTOR", [b"list"]),
    ("ralph", "RALPH_ANYTHING", [b"-a", b"1", b"x y"]),
    ("sgf", "SGF_ANYTHING", [b"status"]),
    ("sgf", "RALPH_ANYTHING", [b"status"]),
]


def run(tmp_path: Path, module: str, argv: list[bytes], extra: dict[bytes, bytes]) -> str:
    env = {k.encode(): v.encode() for k, v in os.environ.items()}
    env.update(extra)
    done = subprocess.run(
        [sys.executable.encode(), b"-m", module.encode(), *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stderr


@pytest.mark.parametrize(("module", "argv", "index", "shown"), ARGUMENTS)
def test_an_argument_that_is_not_utf8_is_one_line(
    tmp_path: Path, module: str, argv: list[bytes], index: int, shown: str
) -> None:
    err = run(tmp_path, module, argv, {})
    assert err == f"error: argument {index} ({shown}) is not valid UTF-8\n"


@pytest.mark.parametrize(("module", "name", "argv"), VARIABLES)
def test_a_variable_that_is_not_utf8_is_one_line(
    tmp_path: Path, module: str, name: str, argv: list[bytes]
) -> None:
    err = run(tmp_path, module, argv, {name.encode(): b"a\xff"})
    assert err == f"error: environment variable {name} is not valid UTF-8\n"

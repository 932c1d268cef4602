"""The report of a program that failed: the command, its exit code and the last lines of both
its output streams (git says why on stdout as often as on stderr), as pre-commit's
`CalledProcessError` shows it.

A published contract module (see `ralph.shared`): `ProgramFailed` is a mixin that ralph's and
sgf's `CommandFailed` each join to their own error family (`class CommandFailed(ProgramFailed,
RalphError)`), so each tool reports it as its own one-line error with one shared wording.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence


class ProgramFailed(Exception):
    """A helper program (git, pn, docker, a sound player) exited non-zero."""

    code = "command_failed"
    TAIL = 5  # one line alone is often only "fatal: ..." without its cause

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, stdout: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        tails = [
            (name, text.strip().splitlines()[-self.TAIL :])
            for name, text in (("stdout", stdout), ("stderr", stderr))
            if text.strip()
        ]
        lines = [
            f"`{shlex.join(self.argv)}` exited with {returncode}:" + ("" if tails else " no output")
        ]
        for name, tail in tails:
            lines += [f"  {name}:", *(f"    {line}" for line in tail)]
        super().__init__("\n".join(lines))

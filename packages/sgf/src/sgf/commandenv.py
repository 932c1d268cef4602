"""What sgf's commands need from the process: the one place os.environ and cwd are read."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sgf import git


@dataclass
class Env:
    """What commands need from the process: the only place os.environ and cwd are read."""

    cwd: Path = field(default_factory=Path.cwd)
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    now: Callable[[], datetime] = datetime.now

    def root(self) -> Path:
        """The git work tree the command runs in."""
        return git.toplevel(self.cwd)

    def interactive(self) -> bool:
        """Tell whether a person is at a terminal (stdin and stdout are ttys)."""
        return sys.stdin.isatty() and sys.stdout.isatty()

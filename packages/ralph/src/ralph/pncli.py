"""ralph's questions to the `pn` program, asked through its command line (ralph never
imports pensa).

pn is optional to a loop: without it on PATH, in a project with no `.pensa/` folder (where
pn would make one), or when it fails, times out or prints no JSON answer of the kind asked
for, the caller carries on without what pn would have told it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ralph import proc
from ralph.errors import CommandFailed


def _absent(cwd: Path) -> bool:
    return proc.which("pn") is None or not (cwd / ".pensa").is_dir()


def answer(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60
) -> object:
    """Run `pn ARGS --json` and return what it prints, decoded; None when there is no answer."""
    if _absent(cwd):
        return None
    try:
        done = proc.run(["pn", *args, "--json"], cwd=cwd, env=env, check=False, timeout=timeout)
    except CommandFailed:  # could not start, or timed out
        return None
    if not done.ok:
        return None
    try:
        decoded: object = json.loads(done.stdout)
    except ValueError:
        return None
    return decoded


def listing(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60
) -> list[object] | None:
    """Run `pn ARGS --json` and return the list it prints, or None when there is no answer."""
    found = answer(args, cwd=cwd, env=env, timeout=timeout)
    return found if isinstance(found, list) else None


def record(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60
) -> dict[str, object] | None:
    """Run `pn ARGS --json` and return the object it prints, or None when there is no answer."""
    found = answer(args, cwd=cwd, env=env, timeout=timeout)
    return found if isinstance(found, dict) else None


def run(args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60) -> bool:
    """Run `pn ARGS`; whether it ran and succeeded (False without pn or its folder)."""
    if _absent(cwd):
        return False
    try:
        return proc.run(["pn", *args], cwd=cwd, env=env, check=False, timeout=timeout).ok
    except CommandFailed:
        return False

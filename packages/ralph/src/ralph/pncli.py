"""ralph's questions to the `pn` program, asked through its command line (ralph never
imports pensa's tracker, only its published `pensa.shared`).

pn is optional to a loop: without it on PATH, in a project with no `.pensa/` folder (where
pn would make one), or when it fails, times out or prints no JSON answer of the kind asked
for, the caller carries on without what pn would have told it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

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


class Answer(NamedTuple):
    """What `ask` got: pn's JSON when it succeeded, else why not, in one line."""

    ok: bool
    value: object = None
    error: str = ""


def ask(args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60) -> Answer:
    """Run `pn ARGS --json` for an answer the caller cannot do without: pn's JSON, or the
    line saying why there is none (pn's own error line when it gave one)."""
    if _absent(cwd):
        return Answer(False, error="pn is not on PATH, or the project has no .pensa/ folder")
    try:
        done = proc.run(["pn", *args, "--json"], cwd=cwd, env=env, check=False, timeout=timeout)
    except CommandFailed as e:
        return Answer(False, error=str(e))
    if not done.ok:
        try:
            said = json.loads(done.stderr.strip().splitlines()[-1])["error"]
        except (ValueError, IndexError, KeyError, TypeError):
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            said = lines[-1].strip() if lines else f"exit {done.returncode}"
        return Answer(False, error=str(said))
    try:
        return Answer(True, json.loads(done.stdout))
    except ValueError:
        return Answer(False, error=f"pn printed no JSON: {done.stdout[:80]!r}")

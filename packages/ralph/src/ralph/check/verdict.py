"""What a check decides: PASS, PARTIAL or FAIL, the evidence behind it, and the check
agent's verdict file read as untrusted data.

The verdict file is written by an agent (README "The check step"): the host opens it without
following a link and without blocking (a FIFO planted there cannot hang ralph), takes it only
when it is a plain file under MAX_BYTES, and parses it strictly: one JSON object with known
keys of known types and bounded sizes, or nothing. A file that is not so is no verdict, and
no verdict is a FAIL.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ralph.errors import RalphError

MAX_BYTES = 64 * 1024
MAX_SUMMARY, MAX_FINDINGS, MAX_FINDING = 4000, 30, 1000
MAX_FIXES, MAX_TITLE, MAX_DESCRIPTION = 5, 200, 4000
KEYS = frozenset({"verdict", "summary", "findings", "fixes"})


class Verdict(StrEnum):
    """A check's outcome; only PASS lets the work reach the branch."""

    PASS = "PASS"  # noqa: S105  # a verdict, not a password
    PARTIAL = "PARTIAL"
    FAIL = "FAIL"

    @property
    def rank(self) -> int:
        return (Verdict.PASS, Verdict.PARTIAL, Verdict.FAIL).index(self)


def worst(verdicts: Iterable[Verdict | None]) -> Verdict | None:
    """The strictest of `verdicts` (None ones left out); None when there is none."""
    found = [v for v in verdicts if v is not None]
    return max(found, key=lambda v: v.rank) if found else None


@dataclass(frozen=True, slots=True)
class Evidence:
    """One Verify command as it ran on a clean checkout: its exit code and trimmed output."""

    command: str
    status: int | None
    output: str
    task: str | None = None  # the task whose Verify it is; None: the project's check_command

    @property
    def passed(self) -> bool:
        return self.status == 0

    def as_json(self) -> dict[str, object]:
        return {"command": self.command, "task": self.task, "exit": self.status,
                "output": self.output}  # fmt: skip


def of_commands(evidence: Sequence[Evidence]) -> Verdict | None:
    """All passed: PASS; none passed: FAIL; some: PARTIAL; no commands: None."""
    if not evidence:
        return None
    passed = sum(e.passed for e in evidence)
    if passed == len(evidence):
        return Verdict.PASS
    return Verdict.FAIL if passed == 0 else Verdict.PARTIAL


@dataclass(frozen=True, slots=True)
class Fix:
    """A fix task the check agent asks for."""

    title: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class Judgement:
    """The check agent's verdict, as parsed from its file."""

    verdict: Verdict
    summary: str = ""
    findings: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "verdict": str(self.verdict),
            "summary": self.summary,
            "findings": list(self.findings),
            "fixes": [{"title": f.title, "description": f.description} for f in self.fixes],
        }


class VerdictRefused(RalphError):
    """The check agent's verdict file is not one ralph takes: no verdict, so a FAIL."""

    code = "verdict_refused"


def read(path: Path, *, max_bytes: int = MAX_BYTES) -> Judgement:
    """The verdict in `path`; VerdictRefused (one line saying why) when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise VerdictRefused("the check agent wrote no verdict file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise VerdictRefused("the verdict file is a symbolic link: not read") from None
        raise VerdictRefused(f"the verdict file cannot be opened ({e.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise VerdictRefused("the verdict file is not a plain file: not read")
        if info.st_size > max_bytes:
            raise VerdictRefused(f"the verdict file holds {info.st_size} bytes, over {max_bytes}")
        data = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew after the fstat
        raise VerdictRefused(f"the verdict file holds over {max_bytes} bytes")
    return parse(data)


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key appears twice")
    return dict(pairs)


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def parse(data: bytes) -> Judgement:
    """A verdict from the file's bytes: strict JSON, known keys, bounded sizes."""
    try:
        raw = json.loads(data.decode("utf-8"), object_pairs_hook=_unique, parse_constant=_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise VerdictRefused(f"the verdict file is not a JSON object ({_why(e)})") from None
    if not isinstance(raw, dict):
        raise VerdictRefused("the verdict file is not a JSON object")
    if unknown := sorted(set(raw) - KEYS):
        raise VerdictRefused(f"the verdict file has unknown keys: {', '.join(unknown[:5])}")
    said = raw.get("verdict")
    if not isinstance(said, str) or said not in {v.value for v in Verdict}:
        raise VerdictRefused("the verdict file's verdict is not PASS, PARTIAL or FAIL")
    return Judgement(
        Verdict(said),
        _text(raw.get("summary", ""), "summary", MAX_SUMMARY),
        tuple(
            _text(f, "finding", MAX_FINDING)
            for f in _list(raw.get("findings", []), "findings", MAX_FINDINGS)
        ),
        tuple(_fix(f) for f in _list(raw.get("fixes", []), "fixes", MAX_FIXES)),
    )


def _why(error: Exception) -> str:
    return "nested too deep" if isinstance(error, RecursionError) else str(error)[:120]


def _text(value: object, what: str, limit: int, *, line: bool = False) -> str:
    if not isinstance(value, str):
        raise VerdictRefused(f"the verdict file's {what} is not a string")
    if len(value) > limit:
        raise VerdictRefused(f"the verdict file's {what} is over {limit} characters")
    allowed = {"\t"} if line else {"\t", "\n"}
    controls = {c for c in value if ord(c) < 32 or ord(c) == 127} - allowed
    if controls:
        raise VerdictRefused(f"the verdict file's {what} holds control characters")
    return value.strip()


def _list(value: object, what: str, limit: int) -> list[object]:
    if not isinstance(value, list):
        raise VerdictRefused(f"the verdict file's {what} is not a list")
    if len(value) > limit:
        raise VerdictRefused(f"the verdict file lists over {limit} {what}")
    return value


def _fix(value: object) -> Fix:
    if not isinstance(value, Mapping) or not set(value) <= {"title", "description"}:
        raise VerdictRefused("a fix in the verdict file is not {title, description}")
    title = _text(value.get("title"), "fix title", MAX_TITLE, line=True)
    if not title:
        raise VerdictRefused("a fix in the verdict file has no title")
    return Fix(title, _text(value.get("description", ""), "fix description", MAX_DESCRIPTION))

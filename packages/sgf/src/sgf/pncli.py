"""Talking to `pn` through its command line (sgf never imports pensa's tracker)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sgf import proc
from sgf.errors import CommandFailed, PnRefused


@dataclass(frozen=True, slots=True)
class Issue:
    """The fields of a pn issue sgf looks at."""

    id: str
    title: str
    issue_type: str
    status: str
    spec: str | None
    assignee: str | None
    updated_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Issue:
        """Read an issue from `pn --json` output."""
        return cls(
            id=data["id"],
            title=data["title"],
            issue_type=data["issue_type"],
            status=data["status"],
            spec=data.get("spec"),
            assignee=data.get("assignee"),
            updated_at=datetime.fromisoformat(data["updated_at"]),
        )


def _issues(root: Path, env: Mapping[str, str], *args: str) -> list[Issue]:
    out = proc.run(["pn", *args, "--json"], cwd=root, env=env).stdout
    try:
        data = json.loads(out)
        return [Issue.from_json(item) for item in data]
    except (ValueError, KeyError, TypeError) as e:
        raise CommandFailed(["pn", *args, "--json"], 0, f"unexpected output: {out[:200]}") from e


def in_progress(root: Path, env: Mapping[str, str]) -> list[Issue]:
    """Return the issues currently claimed."""
    return _issues(root, env, "list", "--status", "in_progress")


def release(root: Path, env: Mapping[str, str], issue_id: str) -> None:
    """Give a claimed issue back (`pn release`)."""
    proc.run(["pn", "release", issue_id], cwd=root, env=env)


@dataclass(frozen=True, slots=True)
class Finding:
    """One `pn doctor` finding: its check and pn's own one-line message, which ends with
    what to do about it."""

    check: str
    message: str

    def fix(self) -> str:
        """The first pn command the message names (`pn doctor --fix`, `pn sync`)."""
        return fix_named(self.message) or "`pn doctor`"


def fix_named(message: str) -> str | None:
    """The first pn command, in backticks, that a pn message names, or None."""
    found = re.search(r"`pn [^`]+`", message)
    return found.group(0) if found else None


def doctor(root: Path, env: Mapping[str, str]) -> list[Finding]:
    """`pn doctor --json`'s findings, claims (information) left out. PnRefused, in pn's own
    words, when it could not run (a damaged database it cannot open, a broken `.pensa/`)."""
    argv = ["pn", "doctor", "--json"]
    done = proc.run(argv, cwd=root, env=env, check=False, timeout=120)
    if done.returncode != 0:
        raise PnRefused(error_of(done.stderr) or f"`pn doctor` exited with {done.returncode}")
    try:
        report = json.loads(done.stdout)
        found = [Finding(str(f["check"]), str(f["message"])) for f in report["findings"]]
    except (ValueError, KeyError, TypeError) as e:
        shown = done.stdout.strip()[:200] or "nothing"
        raise PnRefused(f"`pn doctor --json` printed no report but {shown!r}") from e
    return [f for f in found if f.check != "claim"]


def error_of(stderr: str) -> str | None:
    """pn's one-line error in `stderr` (`{"error": ...}` under --json, else `error: ...`)."""
    for line in reversed(stderr.strip().splitlines()):
        try:
            said = json.loads(line)
        except ValueError:
            if line.startswith("error: "):
                return line.removeprefix("error: ")
            continue
        if isinstance(said, dict) and isinstance(said.get("error"), str):
            return str(said["error"])
    return None


def doctor_fix(root: Path, env: Mapping[str, str]) -> str:
    """Run `pn doctor --fix` (releases claims older than 30 minutes, repairs integrity)."""
    return proc.run(["pn", "doctor", "--fix"], cwd=root, env=env).stdout


@dataclass(frozen=True, slots=True)
class SpecCounts:
    """Work counts for one spec."""

    spec: str  # "-" for issues without a spec
    ready: int = 0
    in_progress: int = 0
    blocked: int = 0
    open_bugs: int = 0


@dataclass(frozen=True, slots=True)
class Stuck:
    """A task pn claim-next took out of the agents' queue (assignee `human`)."""

    id: str
    title: str


@dataclass(frozen=True, slots=True)
class Picture:
    """What `sgf status` shows of pensa: totals and per-spec counts."""

    ready: int
    in_progress: int
    blocked: int
    open_bugs: int
    by_spec: list[SpecCounts] = field(default_factory=list)
    needs_human: int = 0  # stuck tasks pn claim-next handed to a human
    stuck: list[Stuck] = field(default_factory=list)  # those tasks


def picture(root: Path, env: Mapping[str, str]) -> Picture:
    """Count ready, in-progress, blocked work and open bugs, per spec."""
    ready = _issues(root, env, "ready")
    listed = _issues(root, env, "list")  # open and in progress
    blocked = _issues(root, env, "blocked")
    working = [i for i in listed if i.status == "in_progress"]
    bugs = [i for i in listed if i.issue_type == "bug" and i.status == "open"]
    counts: dict[str, Counter[str]] = {}
    for name, issues in (
        ("ready", ready),
        ("in_progress", working),
        ("blocked", blocked),
        ("open_bugs", bugs),
    ):
        for issue in issues:
            counts.setdefault(issue.spec or "-", Counter())[name] += 1
    by_spec = [
        SpecCounts(spec, c["ready"], c["in_progress"], c["blocked"], c["open_bugs"])
        for spec, c in sorted(counts.items())
    ]
    stuck = [i for i in listed if i.status == "open" and i.assignee == "human"]
    return Picture(
        len(ready),
        len(working),
        len(blocked),
        len(bugs),
        by_spec,
        len(stuck),
        [Stuck(i.id, i.title) for i in stuck],
    )


def sync(root: Path, env: Mapping[str, str]) -> None:
    """`pn sync` in `root`: its database exists and holds the checkout's files."""
    proc.run(["pn", "sync"], cwd=root, env={k: v for k, v in env.items() if k != "PN_SHARED_DB"})

"""What a landing completed, and which change its review looks at.

A feature completes when pensa closes it as its last child closes (pn show: `parent`,
`issue_type`, `status`). Its change runs from the commit before the first commit that names one
of its children (the build prompt's `[ID] ...` messages) to the landing; with no such commit,
from where the landing started. The final review's change is everything the run landed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph import git, pncli
from ralph.check import contract
from ralph.check.contract import Contract
from ralph.models import ReviewMode as Mode


@dataclass(frozen=True, slots=True)
class Subject:
    """One change to review: the issue it completes (None: the final review), the commits."""

    issue: str | None
    title: str
    base: str | None
    commit: str
    contracts: tuple[Contract, ...] = ()

    @property
    def final(self) -> bool:
        return self.issue is None

    def describe(self) -> str:
        if self.issue is None:
            return "everything this build landed on the branch: the whole plan, done"
        return f"the combined change of {self.issue} ({self.title}), now complete"


def _show(project: Path, issue: str, env: Mapping[str, str]) -> dict[str, object] | None:
    return pncli.record(["show", issue], cwd=project, env=env)


def completed(
    project: Path, closed: Sequence[str], *, mode: Mode, env: Mapping[str, str]
) -> list[str]:
    """The issues `closed` completed that `mode` reviews: the tasks themselves, or the
    features pensa closed as their last child closed."""
    if mode is Mode.OFF:
        return []
    if mode is Mode.TASK:
        return list(closed)
    found: list[str] = []
    for task in closed:
        shown = _show(project, task, env) or {}
        parent = shown.get("parent")
        if not isinstance(parent, str) or parent in found:
            continue
        up = _show(project, parent, env) or {}
        if up.get("issue_type") == "feature" and up.get("status") == "closed":
            found.append(parent)
    return found


def children(project: Path, issue: str, env: Mapping[str, str]) -> list[str]:
    """The issue's children's ids (pn show), or none."""
    kids = (_show(project, issue, env) or {}).get("children")
    return [str(k["id"]) for k in kids if isinstance(k, dict)] if isinstance(kids, list) else []


def first_base(
    repo: Path, names: Sequence[str], tip: str, *, fallback: str | None, env: Mapping[str, str]
) -> str | None:
    """The parent of the oldest commit up to `tip` whose message names one of `names`."""
    if not names:
        return fallback
    greps = [f"--grep={n}" for n in names]
    done = git.command(repo, "log", "--format=%H", "--fixed-strings", *greps, tip, env=env)
    found = done.stdout.split() if done.ok else []
    if not found:
        return fallback
    return git.rev(repo, f"{found[-1]}^", env=env)  # None: it was the root commit


def of_issue(
    project: Path, repo: Path, issue: str, tip: str, *, fallback: str | None,
    env: Mapping[str, str],
) -> Subject:  # fmt: skip
    """The review subject for a completed issue: its change and its (and its children's)
    contracts."""
    ids = [issue, *children(project, issue, env)]
    contracts = contract.fetch(project, ids, env=env)
    title = contracts[0].title if contracts else issue
    base = first_base(repo, ids, tip, fallback=fallback, env=env)
    return Subject(issue, title, base, tip, tuple(contracts))

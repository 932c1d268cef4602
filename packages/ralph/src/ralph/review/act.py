"""Act on a panel's verdicts, in the tracker.

Every review leaves one comment on what it reviewed (first line `review PASS` / `review FAIL`,
then each reviewer's focus, verdict, findings and fixes). A FAIL reopens the feature and files
each fix a failing reviewer asked for as a task under it (`pn create --parent FEATURE -t
task`), so the feature closes again when they do and is reviewed again; a reviewed task (`--review
task`) is reopened with the findings instead. After `threshold` failed reviews since the last
PASS, the issue goes to HUMAN and nothing more is filed. A failed final review files its fixes
as tasks of their own; the loop counts those rounds itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pensa.shared.assignee import HUMAN

from ralph import pncli
from ralph.check.act import MAX_COMMENT
from ralph.check.verdict import Fix
from ralph.review.panel import Review
from ralph.review.subject import Subject

MARK = "review "
HANDED = "review: handed to a human"


@dataclass(frozen=True, slots=True)
class Acted:
    """What the tracker was told."""

    passed: bool
    filed: list[str] = field(default_factory=list)
    reopened: bool = False
    human: bool = False
    failures: int = 0  # failed reviews of this issue since its last PASS, this one included


def comment(subject: Subject, reviews: Sequence[Review]) -> str:
    """The panel's verdicts as one comment."""
    passed = all(r.passed for r in reviews)
    since = (subject.base or "the root")[:12]
    said = "PASS" if passed else "FAIL"
    lines = [f"{MARK}{said} on {subject.commit[:12]} ({len(reviews)} reviewers, from {since})", ""]
    for r in reviews:
        said = r.judgement.summary if r.judgement else f"no verdict taken: {r.refused}"
        lines.append(f"Reviewer {r.number} ({r.focus.name}): {r.verdict}: {said}".rstrip(": "))
        if r.judgement is not None:
            lines += [f"- {f}" for f in r.judgement.findings]
            asked = r.judgement.fixes
            lines += [f"- to fix: {f.title}: {f.description}".rstrip(": ") for f in asked]
    text = "\n".join(lines).strip()
    return text if len(text) <= MAX_COMMENT else text[: MAX_COMMENT - 20] + "\n... (cut)"


def fixes(reviews: Sequence[Review]) -> list[Fix]:
    """The fixes the failing reviewers asked for; one naming its findings for a reviewer that
    asked for none (or gave no verdict)."""
    found: list[Fix] = []
    for r in reviews:
        if r.passed:
            continue
        asked = r.judgement.fixes if r.judgement else ()
        if asked:
            found += [f for f in asked if f.title not in {g.title for g in found}]
            continue
        why = (r.judgement.summary or "\n".join(r.judgement.findings)) if r.judgement else ""
        found.append(Fix(f"Address the {r.focus.name} review", why or str(r.refused)))
    return found


def failures(comments: Sequence[object]) -> int:
    """How many reviews of the issue failed since its last PASS or handing over."""
    count = 0
    for c in comments:
        text = c.get("text") if isinstance(c, Mapping) else None
        if not isinstance(text, str):
            continue
        if text.startswith((f"{MARK}PASS", HANDED)):
            count = 0
        elif text.startswith(f"{MARK}FAIL"):
            count += 1
    return count


def file(
    project: Path, found: Sequence[Fix], *, parent: str | None, actor: str,
    env: Mapping[str, str],
) -> list[str]:  # fmt: skip
    """Create a task for each fix (under `parent`); their ids."""
    made: list[str] = []
    for fix in found:
        args = ["create", fix.title, "-t", "task", "--actor", actor]
        args += ["--description", fix.description] if fix.description else []
        args += ["--parent", parent] if parent else []
        created = pncli.record(args, cwd=project, env=env)
        if created is not None and isinstance(created.get("id"), str):
            made.append(str(created["id"]))
    return made


def act(
    project: Path,
    subject: Subject,
    reviews: Sequence[Review],
    *,
    feature: bool,
    actor: str,
    threshold: int,
    env: Mapping[str, str],
) -> Acted:
    """Tell the tracker what the reviewers said about `subject` (an issue's review)."""
    issue = subject.issue
    assert issue is not None
    passed = all(r.passed for r in reviews)
    pncli.run(["comment", "add", issue, comment(subject, reviews), "--actor", actor],
              cwd=project, env=env)  # fmt: skip
    if passed:
        return Acted(passed=True)
    reason = "a review said FAIL; see the comment"
    reopened = pncli.run(["reopen", issue, "--reason", reason, "--actor", actor],
                         cwd=project, env=env)  # fmt: skip
    shown = pncli.listing(["comment", "list", issue], cwd=project, env=env) or []
    n = failures(shown)
    handed = n >= threshold and pncli.run(
        ["update", issue, "-a", HUMAN, "--actor", actor], cwd=project, env=env
    )
    if handed:
        note = f"{HANDED} after {n} failed reviews; `pn release {issue}` hands it back"
        pncli.run(["comment", "add", issue, note, "--actor", actor], cwd=project, env=env)
        return Acted(passed=False, reopened=reopened, human=True, failures=n)
    filed = file(project, fixes(reviews), parent=issue, actor=actor, env=env) if feature else []
    return Acted(passed=False, filed=filed, reopened=reopened, failures=n)

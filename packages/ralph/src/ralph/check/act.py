"""Act on a check's verdict, in the tracker: the evidence on every task, reopen on FAIL or
PARTIAL, a human after the stuck threshold.

Every checked task gets the verdict and its evidence as a comment (`pn comment add`), each
comment's first line starting with MARK. A task whose work did not land is reopened with the
evidence; the comment names the commit that was set aside, so the next attempt can start
from it (`git cherry-pick BASE..COMMIT` in its workspace, which borrows the project's
objects). pensa's own stuck count starts again at a reopen, so the check counts its own: a
task whose work failed its check `threshold` times since its last PASS (or since a human last
had it) is assigned to HUMAN, where `pn list -a human` finds it and no loop claims it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pensa.shared.assignee import HUMAN

from ralph import pncli
from ralph.check.step import Outcome
from ralph.check.verdict import Verdict

MARK = "check "
HANDED = "check: handed to a human"
MAX_COMMENT = 16000


@dataclass(frozen=True, slots=True)
class Acted:
    """What the tracker was told: tasks reopened, and tasks handed to a human."""

    reopened: list[str] = field(default_factory=list)
    human: list[str] = field(default_factory=list)


def comment(outcome: Outcome, *, kept: str | None, base: str | None) -> str:
    """The verdict and its evidence, as the task's comment."""
    v = outcome.verdict
    where = "landed" if outcome.lands else f"not landed; kept on {kept or 'no branch'}"
    lines = [f"{MARK}{v} on {outcome.commit[:12]} ({where})", ""]
    for e in outcome.evidence:
        what = "Merge check" if e.task is None else f"Verify of {e.task}"
        state = "passed" if e.passed else "failed"
        lines += [f"{what} {state} (exit {e.status}): `{e.command}`"]
        lines += [e.output, ""] if e.output and not e.passed else []
    if outcome.agent is not None:
        if outcome.refused is not None:
            lines += [f"Check agent ({outcome.agent}): no verdict taken: {outcome.refused}"]
        elif (j := outcome.judgement) is not None:
            lines += [f"Check agent ({outcome.agent}): {j.verdict}: {j.summary}".rstrip(": ")]
            lines += [f"- {f}" for f in j.findings]
            if j.fixes:
                lines += ["To fix:", *(f"- {f.title}: {f.description}" for f in j.fixes)]
        lines.append("")
    if not outcome.lands:
        start = f"{base}..{outcome.commit}" if base else outcome.commit
        lines.append(f"The attempt is commit {outcome.commit}: `git cherry-pick {start}` in")
        lines.append("your workspace starts from it.")
    text = "\n".join(lines).strip()
    return text if len(text) <= MAX_COMMENT else text[: MAX_COMMENT - 20] + "\n... (cut)"


def failures(comments: Sequence[object]) -> int:
    """How often the task's work failed its check since its last PASS or handing over."""
    count = 0
    for c in comments:
        text = c.get("text") if isinstance(c, Mapping) else None
        if not isinstance(text, str) or not text.startswith(MARK.rstrip()):
            continue
        if text.startswith((f"{MARK}{Verdict.PASS}", HANDED)):
            count = 0
        elif text.startswith((f"{MARK}{Verdict.FAIL}", f"{MARK}{Verdict.PARTIAL}")):
            count += 1
    return count


def act(
    project: Path,
    outcome: Outcome,
    *,
    kept: str | None,
    base: str | None,
    actor: str,
    threshold: int,
    env: Mapping[str, str],
) -> Acted:
    """Tell the tracker: a comment on every checked task; reopen the ones that did not land,
    and hand those past `threshold` failed checks to a human."""
    text = comment(outcome, kept=kept, base=base)
    acted = Acted()
    for task in outcome.tasks:
        if outcome.lands:
            pncli.run(["comment", "add", task, text, "--actor", actor], cwd=project, env=env)
            continue
        reason = f"the check said {outcome.verdict}; see the comment"
        if pncli.run(["reopen", task, "--reason", reason, "--actor", actor], cwd=project, env=env):
            acted.reopened.append(task)
        pncli.run(["comment", "add", task, text, "--actor", actor], cwd=project, env=env)
        shown = pncli.listing(["comment", "list", task], cwd=project, env=env) or []
        if (n := failures(shown)) < threshold:
            continue
        if pncli.run(["update", task, "-a", HUMAN, "--actor", actor], cwd=project, env=env):
            acted.human.append(task)
            note = f"{HANDED} after {n} failed checks; `pn release {task}` hands it back"
            pncli.run(["comment", "add", task, note, "--actor", actor], cwd=project, env=env)
    return acted

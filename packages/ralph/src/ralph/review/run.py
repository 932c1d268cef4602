"""The reviews of one loop: after a landing that completed a feature (or a task), and once
the plan is done. The loop calls `landed` and `final`; this module asks the tracker what
completed, runs the panel, tells the tracker, and writes a `review` line to the run record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pensa.shared.assignee import HUMAN

from ralph import pncli, proc
from ralph import sandbox as sandboxes
from ralph.check.verdict import Fix
from ralph.governor import Governor
from ralph.models import Config, ReviewMode
from ralph.record import Record
from ralph.render import Output
from ralph.review import act, focus, subject
from ralph.review.panel import Panel, Review
from ralph.review.subject import Subject


@dataclass
class Reviewing:
    """Runs a loop's reviews and acts on them."""

    config: Config
    sandbox: sandboxes.Sandbox
    out: Output
    interrupts: proc.Interrupts
    governor: Governor
    env: Mapping[str, str]
    state: Path
    record: Record
    final_failures: int = field(default=0, init=False)  # final reviews failed in this run
    panel: Panel = field(init=False)

    def __post_init__(self) -> None:
        r = self.config.reviews
        self.panel = Panel(
            self.config, self.config.reviewer, focus.parse(r.focus), max(1, r.count),
            self.sandbox, self.out, self.interrupts, self.governor, self.env, self.state,
        )  # fmt: skip

    @property
    def on(self) -> bool:
        return self.config.reviews.mode is not ReviewMode.OFF

    @property
    def _actor(self) -> str:
        return self.config.loop_env(self.env)["PN_ACTOR"]

    def landed(self, repo: Path, closed: Sequence[str], tip: str, *, before: str | None) -> None:
        """Review what the landing of `closed` at `tip` completed (`before`: the target's
        tip before the landing)."""
        project, mode = self.config.project, self.config.reviews.mode
        done = subject.completed(project, closed, mode=mode, env=self.env)
        for issue in done:
            if self.interrupts.fired:
                return
            s = subject.of_issue(project, repo, issue, tip, fallback=before, env=self.env)
            reviews = self._run(s)
            acted = act.act(
                project, s, reviews, feature=mode is ReviewMode.FEATURE, actor=self._actor,
                threshold=self.config.stuck_threshold, env=self.env,
            )  # fmt: skip
            self._write(s, reviews, filed=acted.filed, reopened=acted.reopened, human=acted.human)
            if acted.passed:
                self.out.note(f"review PASS: {issue} ({len(reviews)} reviewers)")
            elif acted.human:
                self.out.warning(f"review FAIL: {issue} handed to a human after {acted.failures}")
            else:
                filed = ", ".join(acted.filed) or "none"
                self.out.warning(f"review FAIL: {issue} reopened; fix tasks filed: {filed}")

    def final(self, repo: Path, *, start: str | None, tip: str | None) -> bool:
        """The final review, when the plan is done; True when the loop may complete (PASS,
        nothing to review, or the stuck threshold reached)."""
        if not self.on or not self.config.reviews.final or tip is None or tip == start:
            return True
        ready = pncli.listing(["ready"], cwd=self.config.project, env=self.env)
        if ready is None or ready:  # no tracker, or work left: not the plan's end
            return True
        s = Subject(None, "the whole plan", start, tip)
        reviews = self._run(s)
        if all(r.passed for r in reviews) or self.interrupts.fired:
            self._write(s, reviews)
            self.out.note(f"final review PASS ({len(reviews)} reviewers)")
            return True
        self.final_failures += 1
        project, actor = self.config.project, self._actor
        if self.final_failures >= self.config.stuck_threshold:
            title = f"Final review failed {self.final_failures} times: a human decides"
            filed = act.file(project, [Fix(title, act.comment(s, reviews))], parent=None,
                             actor=actor, env=self.env)  # fmt: skip
            for issue in filed:
                pncli.run(["update", issue, "-a", HUMAN, "--actor", actor], cwd=project,
                          env=self.env)  # fmt: skip
            self._write(s, reviews, filed=filed, human=True)
            self.out.warning(f"final review FAIL, handed to a human: {', '.join(filed)}")
            return True
        filed = act.file(project, act.fixes(reviews), parent=None, actor=actor, env=self.env)
        self._write(s, reviews, filed=filed)
        self.out.warning(f"final review FAIL: fix tasks filed: {', '.join(filed) or 'none'}")
        return not filed  # nothing filed: nothing for the loop to go on with

    def _run(self, s: Subject) -> list[Review]:
        what = "the final review" if s.final else f"review of {s.issue}"
        self.out.note(f"{what}: {self.config.reviews.count} reviewers at once on {s.commit[:12]}")
        return self.panel.review(s)

    def _write(
        self, s: Subject, reviews: Sequence[Review], *, filed: Sequence[str] = (),
        reopened: bool = False, human: bool = False,
    ) -> None:  # fmt: skip
        self.record.write(
            "review",
            kind="final" if s.final else str(self.config.reviews.mode),
            issue=s.issue,
            base=s.base,
            commit=s.commit,
            verdict="PASS" if all(r.passed for r in reviews) else "FAIL",
            reviewers=[r.as_json() for r in reviews],
            filed=list(filed),
            reopened=reopened,
            human=human,
        )

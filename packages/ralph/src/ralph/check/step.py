"""The check step: after the doer's iteration, before its commits reach the human's branch.

The landing (integrate.Lane.land) replays the iteration's commits onto the branch and calls
the check's gate with that commit before the branch moves. The gate runs, each in a clean
checkout of the commit in a container of its own (gate.py):

1. the Verify commands of the tasks the iteration closed (contract.py), else the project's
   `check_command`;
2. then, when the commands passed (or there were none) and the iteration closed a task, the
   check agent (agent.py), which may be another backend or model than the doer's.

The verdict is the strictest of the two: the commands' (all passed: PASS, some: PARTIAL,
none: FAIL) and the agent's (no verdict ralph takes is a FAIL). Only PASS lands: anything
else raises CheckFailed, the landing sets the commit aside on `sgf/<loop>-rejected-<sha>`,
and act.py comments, reopens and, past the stuck threshold, hands the task to a human.
Nothing to run and no check agent: no verdict, and the work lands as it always did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pensa.shared.inert import inert

from ralph import format, gate, proc
from ralph import sandbox as sandboxes
from ralph.check import contract
from ralph.check.agent import Judge
from ralph.check.contract import Contract
from ralph.check.verdict import Evidence, Judgement, Verdict, VerdictRefused, of_commands, worst
from ralph.governor import Governor
from ralph.integrate import Gate, IntegrationFailed
from ralph.models import Config
from ralph.render import Output


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one check decided on one commit, and why."""

    commit: str
    verdict: Verdict | None  # None: there was nothing to check
    tasks: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    judgement: Judgement | None = None
    refused: str | None = None  # why the check agent's verdict was not taken
    agent: str | None = None  # the check agent's backend, when it ran
    base: str | None = None  # the branch's tip the commit was replayed onto

    @property
    def lands(self) -> bool:
        return lands(self.verdict)

    def as_json(self) -> dict[str, object]:
        """The run record's `check` fields."""
        return {
            "commit": self.commit,
            "verdict": None if self.verdict is None else str(self.verdict),
            "tasks": list(self.tasks),
            "evidence": [e.as_json() for e in self.evidence],
            "agent": None
            if self.agent is None
            else {
                "agent": self.agent,
                "refused": self.refused,
                **(self.judgement.as_json() if self.judgement else {}),
            },
        }


def lands(verdict: Verdict | None) -> bool:
    """The landing decision: only a PASS lands, or no check at all (nothing to run)."""
    return verdict is None or verdict is Verdict.PASS


def decide(
    evidence: Sequence[Evidence], judged: Judgement | None, *, agent_ran: bool
) -> Verdict | None:
    """The check's verdict: the strictest of the commands' and the agent's; an agent that
    ran and gave no verdict ralph takes is a FAIL."""
    said = of_commands(evidence)
    if not agent_ran:
        return said
    return worst([said, judged.verdict if judged is not None else Verdict.FAIL])


def agent_needed(evidence: Sequence[Evidence], contracts: Sequence[Contract]) -> bool:
    """The check agent runs on a closed task's work whose commands did not already fail:
    nothing it says could land work that failed its own Verify."""
    return bool(contracts) and lands(of_commands(evidence))


class CheckFailed(IntegrationFailed):
    """The check's verdict was not PASS: the target did not move."""

    code = "check_failed"

    def __init__(self, outcome: Outcome, branch: str) -> None:
        super().__init__(headline(outcome, branch))
        self.outcome = outcome


class CheckInterrupted(IntegrationFailed):
    """A stop came during the check: no verdict, the commits wait on the loop's branch."""

    code = "check_interrupted"
    set_aside = False


def headline(outcome: Outcome, branch: str) -> str:
    """One line for the transcript: the verdict, the first reason, the branch that stayed."""
    failed = [e for e in outcome.evidence if not e.passed]
    if failed:
        first = failed[0]
        if first.task is None:
            what = "the merge check failed"
        else:
            what = f"{first.task}'s Verify `{format.cut(first.command, 60)}` failed"
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        why = f"{what}{more} on the rebased branch (exit {first.status})"
    elif outcome.refused is not None:
        why = f"the check agent gave no verdict on the rebased branch ({outcome.refused})"
    else:
        said = outcome.judgement.summary if outcome.judgement else ""
        why = f"the check agent ({outcome.agent}) judged the rebased branch {outcome.verdict}"
        why += f": {format.cut(inert(said, multiline=True), 160)}" if said else ""
    return f"check {outcome.verdict}: {why}: {branch} did not move"


@dataclass
class Checker:
    """The check step of one loop: what to run for a landing, and the gate that runs it."""

    config: Config
    sandbox: sandboxes.Sandbox
    out: Output
    interrupts: proc.Interrupts
    governor: Governor
    env: Mapping[str, str]
    state: Path
    base: Callable[[], str | None] = lambda: None  # the target's tip, for the agent's diff
    last: Outcome | None = field(default=None, init=False)  # the last gate's outcome
    failed: IntegrationFailed | None = field(default=None, init=False)  # and its failure
    checks: int = field(default=0, init=False)

    def contracts(self, tasks: Sequence[str]) -> list[Contract]:
        """The contracts of the tasks an iteration closed (`pn show`), in their order."""
        return contract.fetch(self.config.project, tasks, env=self.env) if tasks else []

    def commands(self, contracts: Sequence[Contract]) -> list[tuple[str | None, str]]:
        """(task, command) to run: the tasks' Verify commands, else the check_command."""
        found: list[tuple[str | None, str]] = [(c.id, cmd) for c in contracts for cmd in c.verify]
        if not found and (fallback := self.config.guardrails.check_command):
            return [(None, fallback)]
        return found

    def needed(self, contracts: Sequence[Contract]) -> bool:
        """Whether a landing of this work has anything to check (commands or an agent)."""
        agent = self.config.check_agent is not None and bool(contracts)
        return bool(self.commands(contracts)) or agent

    def gate(self, contracts: Sequence[Contract], *, branch: str) -> Gate | None:
        """The landing's gate for work done on `contracts`; None when there is nothing to
        check. Each call's outcome is kept in `last`."""
        self.last, self.failed = None, None
        if not self.needed(contracts):
            return None

        def check(commit: str) -> IntegrationFailed | None:
            outcome = self.check(commit, contracts)
            if self.interrupts.fired:  # some of it may not have run: no verdict
                self.failed = CheckInterrupted("a stop came during the check: nothing landed")
                return self.failed
            self.last = outcome
            # the landing names the branch it keeps the commits on in `failed.kept`
            self.failed = None if outcome.lands else CheckFailed(outcome, branch)
            return self.failed

        return check

    def check(self, commit: str, contracts: Sequence[Contract]) -> Outcome:
        """Run the commands, then the agent when it has something to add; the outcome."""
        grace = self.config.timeouts.stop_grace
        base = self.base()
        evidence: list[Evidence] = []
        for task, command in self.commands(contracts):
            if self.interrupts.fired:
                break
            ran = gate.check(self.sandbox, commit, command, interrupts=self.interrupts, grace=grace)
            evidence.append(Evidence(command, ran.status, ran.output, task))
        judged, refused, agent = None, None, None
        checker = self.config.check_agent
        if checker is not None and agent_needed(evidence, contracts):
            agent = checker.agent
            self.checks += 1
            self.out.note(f"check agent ({agent}) on {commit[:12]}:")
            judge = Judge(
                self.config, checker, self.sandbox, self.out, self.interrupts, self.governor,
                self.env, self.state,
            )  # fmt: skip
            try:
                judged = judge.judge(
                    commit,
                    base=base,
                    contracts=contracts,
                    evidence=evidence,
                    number=self.checks,
                )
            except VerdictRefused as e:
                refused = str(e)
        verdict = decide(evidence, judged, agent_ran=agent is not None)
        tasks = tuple(c.id for c in contracts)
        return Outcome(commit, verdict, tasks, tuple(evidence), judged, refused, agent, base)

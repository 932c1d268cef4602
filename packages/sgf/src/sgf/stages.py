"""The workflow stages and each one's facts, in one table (`STAGES`).

The CLI makes a command of each row (`cli/stages.py`), the scaffold seeds each row's prompt
(`scaffold.py`), a launch reads how the stage runs (`loop/loops.py`, `loop/launch.py`), ralph
gets its stop checklist, and a `claims = "git"` loop claims what its prompt claims
(`loop/gitclaims.py`). A new stage is a row here, its prompt under `templates/prompts/`, and
its checklist's words in the docs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Stage(StrEnum):
    """A workflow stage; its value is the loop id prefix."""

    SPEC = "spec"
    BUILD = "build"
    VERIFY = "verify"
    TEST_PLAN = "test-plan"
    TEST = "test"
    ISSUES_LOG = "issues-log"
    ISSUES_PLAN = "issues-plan"
    REVIEW = "review"

    @property
    def spec(self) -> StageSpec:
        """This stage's row of `STAGES`."""
        return STAGES[self]

    @property
    def prompt(self) -> str:
        """The template name under `.sgf/prompts/`."""
        return self.spec.prompt

    @property
    def command(self) -> str:
        """How the user starts this stage."""
        return "sgf " + " ".join(self.spec.words)


@dataclass(frozen=True, slots=True)
class StageSpec:
    """What a stage is: its command, its prompt, how it runs and what its agent must do."""

    words: tuple[str, ...]  # its command under `sgf` (`("issues", "log")`)
    help: str
    prompt: str  # the template under `.sgf/prompts/`
    takes_spec: bool  # `--spec STEM` narrows it to one spec
    takes_count: bool  # `N`: how many iterations
    offers_afk: bool  # `-a` runs it AFK (else it runs as `always_afk` says)
    always_afk: bool = False
    # A conversation of one session by default: the agent's sentinel ends it, one bug or one
    # interview is one session.
    one_iteration: bool = False
    parallel: bool = False  # `--parallel N` runs N loops at once
    # The stop checklist its agent must pass before it ends its turn (ralph --checks).
    stop_checks: tuple[str, ...] = ()
    # What its prompt claims with `pn claim-next` (tests/test_prompts_agree.py holds the two
    # together); a `claims = "git"` loop claims the same on the host.
    claims: tuple[str, ...] = ()


# Work loops close what they claimed, commit and pass their backpressure; the conversations
# (spec, issues log) only must not keep a bug they found to themselves.
_WORK = ("task", "clean", "backpressure", "bugs")

STAGES: dict[Stage, StageSpec] = {
    Stage.SPEC: StageSpec(
        ("spec",),
        "Interview me, write specs and plan tasks (interactive, one session).",
        prompt="spec",
        takes_spec=False,
        takes_count=False,
        offers_afk=False,
        one_iteration=True,
    ),
    Stage.BUILD: StageSpec(
        ("build",),
        "Run the build loop: one task per iteration.\n\n\b\nExample:\n"
        "    sgf build --spec auth -a 20\n    sgf build -a 20 --parallel 4",
        prompt="build",
        takes_spec=True,
        takes_count=True,
        offers_afk=True,
        parallel=True,
        stop_checks=_WORK,
        claims=("-t", "task", "-t", "chore"),
    ),
    Stage.VERIFY: StageSpec(
        ("verify",),
        "Run the verification loop (AFK): check specs against the code.",
        prompt="verify",
        takes_spec=False,
        takes_count=True,
        offers_afk=False,
        always_afk=True,
        stop_checks=("clean", "bugs"),
    ),
    Stage.TEST_PLAN: StageSpec(
        ("test-plan",),
        "Run the test-planning loop (AFK): create test items from the specs.",
        prompt="test-plan",
        takes_spec=False,
        takes_count=True,
        offers_afk=False,
        always_afk=True,
        stop_checks=("task", "clean"),
    ),
    Stage.TEST: StageSpec(
        ("test",),
        "Run the test loop: execute one test item per iteration.",
        prompt="test",
        takes_spec=True,
        takes_count=True,
        offers_afk=True,
        stop_checks=_WORK,
        claims=("-t", "test"),
    ),
    Stage.ISSUES_LOG: StageSpec(
        ("issues", "log"),
        "Interview me about bugs, one per session, and log them with pn.",
        prompt="issues",
        takes_spec=False,
        takes_count=True,
        offers_afk=False,
        one_iteration=True,
        stop_checks=("bugs",),
    ),
    Stage.ISSUES_PLAN: StageSpec(
        ("issues", "plan"),
        "Run the bug-planning loop: turn each open bug into a fix task.",
        prompt="issues-plan",
        takes_spec=False,
        takes_count=True,
        offers_afk=True,
        stop_checks=("task", "clean"),
    ),
    Stage.REVIEW: StageSpec(
        ("review",),
        "Run the review loop (AFK): approve each closed task or reopen it with findings.",
        prompt="review",
        takes_spec=False,
        takes_count=True,
        offers_afk=False,
        always_afk=True,
        stop_checks=("clean",),
    ),
}

# Every prompt the scaffold seeds, one per stage, in the stages' order.
PROMPTS = tuple(spec.prompt for spec in STAGES.values())

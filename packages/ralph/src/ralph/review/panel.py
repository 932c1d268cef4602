"""The reviewers, run at once: each in a container of its own on a clean checkout of the
change's last commit, with its own focus, its own folders and its own verdict file.

Each reviewer is the check agent's machinery (check/agent.py: Folders, Starter, the backend's
configuration, verdict.read) with a review prompt. The panel starts every reviewer's
container before it reads any of them (a barrier after each start), so the reviews overlap by
construction, not by luck; each review's start and end go to the run record.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from ralph import proc
from ralph import sandbox as sandboxes
from ralph.afk import Afk
from ralph.check.agent import VERDICT, Folders, Starter, checker_config, model_env, write_inputs
from ralph.check.verdict import Judgement, Verdict, VerdictRefused, read
from ralph.governor import Governor
from ralph.models import CheckAgent, Config
from ralph.render import Output
from ralph.review.focus import Focus, assign
from ralph.review.subject import Subject

# How long a started reviewer waits for the others' containers before it goes on alone.
START_TOGETHER = 600.0


def stamp() -> str:
    """Now, RFC 3339 UTC to the microsecond: reviews a second apart must still be ordered."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class Review:
    """One reviewer's verdict (None: it gave none ralph takes, which is a FAIL)."""

    number: int
    focus: Focus
    judgement: Judgement | None
    refused: str | None
    started: str
    ended: str

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict if self.judgement is not None else Verdict.FAIL

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    def as_json(self) -> dict[str, object]:
        return {
            "reviewer": self.number,
            "focus": self.focus.name,
            "verdict": str(self.verdict),
            "judgement": self.judgement.as_json() if self.judgement else None,
            "refused": self.refused,
            "started": self.started,
            "ended": self.ended,
        }


def prompt_text(subject: Subject, focus: Focus, *, folders: Folders, count: int) -> str:
    """The reviewer's prompt (review/prompt.md) with its focus and paths filled in."""
    text = resources.files("ralph.review").joinpath("prompt.md").read_text(encoding="utf-8")
    values = {
        "count": str(count),
        "commit": subject.commit,
        "what": subject.describe(),
        "diff": f"git diff {subject.base} {subject.commit}" if subject.base else "git log -p",
        "in": str(folders.inputs),
        "verdict": str(folders.out / VERDICT),
        "focus_name": focus.name,
        "focus": focus.text,
    }
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


@dataclass
class _Together:
    """Afk's starter for one reviewer: start its container, then wait for the others'."""

    starter: Starter
    barrier: threading.Barrier
    started: list[str]

    def start(self, argv: Sequence[str], *, stdin: bytes) -> sandboxes.Running:
        try:
            running = self.starter.start(argv, stdin=stdin)
        except BaseException:
            self.barrier.abort()  # the others go on without this one
            raise
        if self.started:  # a re-run after a usage-limit wait: the others are long started
            return running
        self.started.append(stamp())
        # broken: one could not start, so there is no one more to wait for
        with contextlib.suppress(threading.BrokenBarrierError):
            self.barrier.wait(timeout=START_TOGETHER)
        return running


@dataclass
class Panel:
    """Runs `count` reviewers on one subject concurrently."""

    config: Config
    reviewer: CheckAgent
    focuses: Sequence[Focus]
    count: int
    sandbox: sandboxes.Sandbox
    out: Output
    interrupts: proc.Interrupts
    governor: Governor
    env: Mapping[str, str]
    state: Path
    reviews: int = 0  # panels run so far: each panel's folders are its own

    def review(self, subject: Subject) -> list[Review]:
        """Every reviewer's verdict on `subject`, in reviewer order."""
        self.reviews += 1
        focuses = assign(self.focuses, self.count)
        barrier = threading.Barrier(len(focuses))
        with ThreadPoolExecutor(max_workers=len(focuses), thread_name_prefix="review") as pool:
            futures = [
                pool.submit(self._one, subject, n, focus, barrier)
                for n, focus in enumerate(focuses, start=1)
            ]
            return [f.result() for f in futures]

    def _one(
        self, subject: Subject, number: int, focus: Focus, barrier: threading.Barrier
    ) -> Review:
        folders = Folders(self.state / "reviews" / str(self.reviews) / str(number))
        shutil.rmtree(folders.top, ignore_errors=True)
        folders.make()
        started: list[str] = []
        judgement, refused = None, None
        try:
            write_inputs(folders, subject.contracts, ())
            text = prompt_text(subject, focus, folders=folders, count=self.count)
            config = checker_config(self.config, self.reviewer, text)
            env = {**self.env, **model_env(self.reviewer)}
            agent_vars = config.backend(env).setup(folders.home, self.sandbox.agent_setup_env())
            starter = Starter(self.sandbox, folders, subject.commit, agent_vars)
            together = _Together(starter, barrier, started)
            attempt = Afk(config, together, self.out, self.interrupts, self.governor, env).run()
            if attempt.result is not None:
                self.governor.spend(attempt.result)
            if attempt.interrupted:
                raise VerdictRefused("the reviewer was interrupted")
            judgement = read(folders.out / VERDICT)
        except VerdictRefused as e:
            refused = str(e)
        finally:
            if not started:  # it never started: the others must not wait for it
                barrier.abort()
            shutil.rmtree(folders.top, ignore_errors=True)
        began = started[0] if started else stamp()
        return Review(number, focus, judgement, refused, began, stamp())

"""Stages, loop ids and the ralph command line each stage turns into (sgf-to-ralph contract)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from pathlib import Path

from sgf import resources, stacks
from sgf.config import Config, Isolation, Review, SandboxKind
from sgf.errors import SpecNotFound, UnknownStack
from sgf.stages import Stage

STAMP = "%Y%m%dT%H%M%S"


class ExitCode(IntEnum):
    """sgf's exit codes, which are ralph's for a loop (docs/sgf.md, "Exit codes")."""

    COMPLETE = 0  # the loop is complete; for other commands, success
    ERROR = 1
    EXHAUSTED = 2  # iterations or a budget ran out: work may remain
    INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class LoopId:
    """`<stage>[-<spec>]-<YYYYMMDDTHHMMSS>`: names a loop's PID file and log."""

    stage: Stage
    spec: str | None
    started: datetime

    def __str__(self) -> str:
        middle = f"-{self.spec}" if self.spec else ""
        return f"{self.stage.value}{middle}-{self.started.strftime(STAMP)}"

    @classmethod
    def parse(cls, text: str) -> LoopId | None:
        """Read a loop id back; None when it is not one of ours."""
        match = re.fullmatch(r"(.+)-(\d{8}T\d{6})", text)
        if not match:
            return None
        head, stamp = match.groups()
        started = datetime.strptime(stamp, STAMP)
        # Longest stage first: "test-plan-…" is the test-plan stage, not test with spec "plan".
        for stage in sorted(Stage, key=lambda s: len(s.value), reverse=True):
            if head == stage.value:
                return cls(stage, None, started)
            if head.startswith(stage.value + "-"):
                return cls(stage, head[len(stage.value) + 1 :], started)
        return None


def check_spec(root: Path, stem: str) -> str:
    """Return `stem` if `specs/<stem>.md` exists; SpecNotFound listing the specs otherwise.

    A stem is a plain file name: `../AGENTS` would name a file outside specs/ and put a `/`
    into the loop id, whose PID file and log then land in a stray folder."""
    plain = stem and "/" not in stem and "\\" not in stem and not stem.startswith(".")
    if plain and (root / "specs" / f"{stem}.md").is_file():
        return stem
    known = sorted(p.stem for p in (root / "specs").glob("*.md") if p.name != "README.md")
    raise SpecNotFound(stem, known)


@dataclass(frozen=True, slots=True)
class Launch:
    """One stage run as the user asked for it, before config defaults are applied."""

    stage: Stage
    spec: str | None = None
    afk: bool = False
    iterations: int | None = None
    auto_push: bool | None = None
    template: str | None = None
    sandbox: SandboxKind | None = None
    network: str | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    max_time: str | None = None
    isolation: Isolation | None = None
    notify: str | None = None  # the notifier for this run (--notify), over the config's
    offline: bool = False  # played by the stage's shipped scenario (--offline, offline.py)

    def isolated(self, config: Config) -> bool:
        """Tell whether the loop runs in a worktree of its own (--worktree, or the config)."""
        if self.isolation is not None:
            return self.isolation is Isolation.WORKTREE
        # a conversation (spec, issues log) happens in the tree the developer has open
        return config.isolation is Isolation.WORKTREE and not self.stage.spec.one_iteration

    def is_afk(self) -> bool:
        """Tell whether ralph runs unattended (-a): asked for, or verify/test-plan."""
        return self.afk or self.stage.spec.always_afk

    def count(self, config: Config) -> int:
        """Iterations to run: the user's N, else 1 for a spec session, else the default."""
        if self.iterations is not None:
            return self.iterations
        return 1 if self.stage.spec.one_iteration else config.default_iterations

    def sandbox_kind(self, config: Config) -> SandboxKind:
        """Where the agents run: `--sandbox`, else the config's `sandbox`, else Docker."""
        return self.sandbox or config.sandbox or SandboxKind.DOCKER

    def _review_flags(self, config: Config) -> list[str]:
        """The build loop's reviews (docs/guardrails.md "Reviews"); other stages have none."""
        if self.stage is not Stage.BUILD:
            return []
        review = config.review or Review.FEATURE
        if review is Review.OFF:
            return ["--review", review.value]
        focus = resources.path("prompts", "review-focus.md")
        count = str(config.reviewers or 3)
        return ["--review", review.value, "--reviewers", count, "--review-focus", str(focus)]

    def ralph_argv(
        self,
        ralph: str,
        config: Config,
        loop_id: LoopId,
        prompt: Path,
        extra: Sequence[str] = (),
    ) -> list[str]:
        """Translate the request and `.sgf/config.toml` into ralph's command line; `extra`
        flags go before the positionals.

        The safety limit never clamps an explicit N: it is max(max_iterations, N).
        """
        count = self.count(config)
        auto_push = config.auto_push if self.auto_push is None else self.auto_push
        argv = [ralph]
        if self.is_afk():
            argv.append("-a")
        argv += [
            "--loop-id",
            str(loop_id),
            "--template",
            self.template or config.docker_template,
            "--auto-push",
            "true" if auto_push else "false",
            "--max-iterations",
            str(max(config.max_iterations, count)),
            # always explicit: a stray RALPH_SANDBOX=none in the shell must not take the loop
            # out of Docker when the project says Docker
            "--sandbox",
            self.sandbox_kind(config).value,
        ]
        checks = self.stage.spec.stop_checks if config.stop_checklist is not False else ()
        argv += ["--checks", ",".join(checks) or "none"]
        network = self.network or config.network
        if network:
            argv += ["--network", network]
        elif self.sandbox_kind(config) is SandboxKind.DOCKER:
            # the allow-list: the stack's registries and the project's own hosts
            for host in allowed_hosts(config):
                argv += ["--allow", host]
        if agent := config.agent_for(self.stage.value):
            argv += ["--agent", agent]
        budgets = {
            "--max-cost": self.max_cost if self.max_cost is not None else config.max_cost,
            "--max-tokens": self.max_tokens if self.max_tokens is not None else config.max_tokens,
            "--max-time": self.max_time or config.max_time,
        }
        for flag, value in budgets.items():
            if value is not None:
                argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        if config.max_failed_iterations is not None:
            argv += ["--max-failed-iterations", str(config.max_failed_iterations)]
        if config.stuck_threshold is not None:
            argv += ["--stuck-threshold", str(config.stuck_threshold)]
        if config.memory is not None:
            argv += ["--memory", config.memory]
        if config.pids is not None:
            argv += ["--pids", str(config.pids)]
        for path in config.protected or []:
            argv += ["--protect", path]
        if config.stop_blocks is not None:
            argv += ["--stop-blocks", str(config.stop_blocks)]
        if config.command_guard is False:
            argv += ["--guard", "false"]
        if config.format_command:
            argv += ["--format-command", config.format_command]
        if config.check_command:
            argv += ["--check-command", config.check_command]
        check_agent, check_model = config.check_agent_for(self.stage.value)
        if check_agent:
            argv += ["--check-agent", check_agent]
            if check_model:
                argv += ["--check-model", check_model]
        argv += self._review_flags(config)
        return [*argv, *extra, str(count), str(prompt.resolve())]


def allowed_hosts(config: Config) -> list[str]:
    """What the allow-list lets the agent reach besides its model: the stack's registries and
    the project's own `allow`, in that order, each once."""
    try:
        registries = stacks.get(config.stack).registries
    except UnknownStack:  # a stack of a newer sgf: its own defaults are not known here
        registries = ()
    return list(dict.fromkeys([*registries, *(config.allow or [])]))

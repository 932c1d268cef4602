"""Value types shared across ralph: the run configuration, timeouts and exit codes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from pathlib import Path

from ralph import agents
from ralph.agents.hookset import HookSet
from ralph.egress import policy
from ralph.egress.policy import Allowed
from ralph.governor import Budgets


class Exit(IntEnum):
    """ralph's exit codes (the sgf-to-ralph contract)."""

    COMPLETE = 0
    ERROR = 1
    EXHAUSTED = 2
    INTERRUPTED = 130


class SandboxKind(StrEnum):
    """Where the agent runs: a container per iteration, or the host."""

    DOCKER = "docker"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Every wait ralph makes, in seconds; tests shrink them to fractions of a second."""

    idle: float = 1800.0  # no agent output for this long: kill it (claude-code#39700)
    post_result: float = 30.0  # agent still alive this long after `result`: kill it
    # Every call to the agent's API failing this long (no answer, or refused: a key, a model):
    # stop it. Short enough that three such iterations open the breaker within two minutes.
    api_wait: float = 20.0
    stop_grace: float = 5.0  # per step of the SIGINT -> SIGTERM -> SIGKILL ladder
    limit_margin: float = 10.0  # added to a usage limit's reset time before retrying
    backoff_base: float = 60.0  # first wait after a 429 without a reset time, then doubled
    backoff_tries: int = 5  # 429s without reset time before the iteration counts as failed
    ding_poll: float = 0.1  # how often interactive mode looks for `.ralph-ding`
    # Interactive: the agent wrote its sentinel; its session ends this much later, so the
    # developer reads its last words and nobody has to quit Claude Code by hand.
    sentinel_grace: float = 3.0


@dataclass(frozen=True, slots=True)
class Limits:
    """What one container may use: processes and memory (`docker run --pids-limit/-m`)."""

    pids: int = 4096
    memory: str = "8g"


@dataclass(frozen=True, slots=True)
class Guardrails:
    """The hooks ralph sets in every run, for every agent CLI (hooks.py; docs/guardrails.md)."""

    # the stop checklist's lines (inside/checklist.py); () turns the Stop hook off
    checks: tuple[str, ...] = ("task", "clean", "backpressure", "bugs")
    stop_blocks: int = 3  # blocks before a stop is let through anyway (0: no Stop hook)
    guard: bool = True  # the destructive-command guard (inside/guard.py)
    format_command: str | None = None  # run on each edited file (PostToolUse)
    # Verify commands for work whose tasks name none (check/step.py): only a PASS lands
    check_command: str | None = None


@dataclass(frozen=True, slots=True)
class Prompt:
    """What the agent is asked to do: a file's contents or inline text."""

    text: str
    path: Path | None = None  # the file it came from, when it is a file

    @property
    def data(self) -> bytes:
        return self.text.encode(errors="surrogateescape")  # the file's bytes, exactly


@dataclass(frozen=True, slots=True)
class CheckAgent:
    """The check step's agent (check/agent.py): which backend, which model. Its prompt is
    ralph's own (check/prompt.md): it names the files of ralph's check protocol."""

    agent: str
    model: str | None = None
    command: str | None = None  # its executable instead of the agent's own (for testing)


class ReviewMode(StrEnum):
    """What a landing's completed work is reviewed as (review/): nothing, each task, or each
    feature pensa closed."""

    OFF = "off"
    TASK = "task"
    FEATURE = "feature"


@dataclass(frozen=True, slots=True)
class Reviews:
    """The reviews a build runs (review/): on what, how many reviewers, their focuses."""

    mode: ReviewMode = ReviewMode.OFF
    count: int = 3
    focus: str = ""  # the focus file's text: `## NAME` sections (review/focus.py)
    final: bool = True  # a final review when the plan is done (with mode not off)


@dataclass(frozen=True, slots=True)
class Config:
    """Everything one ralph run needs; built by the CLI from flags and environment."""

    project: Path
    prompt: Prompt
    iterations: int = 1
    afk: bool = False
    loop_id: str = "ralph"
    template: str = "springfield-sandbox:latest"
    auto_push: bool = True
    command: str = "claude"
    agent: str = "claude"  # the backend (agents/): how `command` is run and read
    sandbox: SandboxKind = SandboxKind.DOCKER
    # None: the allow-list (egress/); "open": Docker's default network; else that network
    network: str | None = None
    allow: tuple[str, ...] = ()  # hosts the allow-list lets through (egress/policy.py)
    agent_args: tuple[str, ...] = ()
    timeouts: Timeouts = field(default_factory=Timeouts)
    budgets: Budgets = field(default_factory=Budgets)
    stuck_threshold: int = 3  # claims of one task without a close before a human gets it
    # `pn claim-next` arguments: the host claims each iteration's task first (preclaim.py)
    claim: tuple[str, ...] | None = None
    record: Path | None = None  # the run record (record.py); sgf keeps it under .sgf/runs/
    stop_file: Path | None = None  # once it exists, no iteration starts (stoprequest.py)
    ding_command: tuple[str, ...] | None = None  # overrides the platform's sound player
    # The branch the loop's commits land on; None: the project's checked-out one.
    integrate: str | None = None
    limits: Limits = field(default_factory=lambda: Limits())
    # Paths the agent's commits must not touch, beyond shared/protected.py's DEFAULTS.
    protect: tuple[str, ...] = ()
    guardrails: Guardrails = field(default_factory=Guardrails)
    hooks: HookSet | None = None  # the run's hook program, once installed (hooks.py)
    check_agent: CheckAgent | None = None  # judges the work against its task's contract
    reviews: Reviews = field(default_factory=Reviews)

    @property
    def reviewer(self) -> CheckAgent:
        """The reviewers' backend: the check agent's, else the doer's own."""
        return self.check_agent or CheckAgent(self.agent, command=self.command)

    def loop_env(self, host: Mapping[str, str]) -> dict[str, str]:
        """The agent's `RALPH_LOOP_ID`, and `PN_ACTOR` so its pn claims name this loop.

        The agent writes the id into `.ralph-complete` (sentinel.py). Without PN_ACTOR, pn in a
        container says "unknown" and concurrent loops' claims look like one actor's; a
        PN_ACTOR set on the host wins.
        """
        env = {
            "RALPH_LOOP_ID": self.loop_id,
            "PN_ACTOR": host.get("PN_ACTOR") or self.loop_id,
            # pn claim-next hands a task claimed this often without a close to a human
            "PN_STUCK_AFTER": str(self.stuck_threshold),
        }
        # The host claims for the agent (preclaim.py): its claim-next answers with that task
        # and never claims, so it needs no remote (the sandbox names the shared database
        # itself: PN_SHARED_DB). The host's PN_CLAIMS=git never reaches the agent.
        if self.claim is not None:
            env["PN_CLAIMS"] = "held"
        return env

    def allowed(self) -> tuple[Allowed, ...]:
        """The `allow` entries, parsed (each checked already by the CLI)."""
        return tuple(policy.parse(entry) for entry in self.allow)

    def backend(self, env: Mapping[str, str] | None = None) -> agents.Backend:
        return agents.get(self.agent, env)

    def _agent_args(self, env: Mapping[str, str] | None) -> list[str]:
        # In the container the hooks are the CLI's managed settings (hooks.py), which no
        # project file turns off; on the host some CLIs need a flag to run them.
        host = self.sandbox is SandboxKind.NONE
        own = self.backend(env).wire(self.hooks).host_args if self.hooks and host else ()
        return [*own, *self.agent_args]

    def agent_argv(
        self, *, prompt_hint: str | None = None, env: Mapping[str, str] | None = None
    ) -> list[str]:
        """The agent's argv: AFK gets its event-stream flags; interactive a hint."""
        if self.afk:
            return self.agent_run(env)[0]
        return self.backend(env).interactive(self.command, prompt_hint, self._agent_args(env))

    def agent_run(self, env: Mapping[str, str] | None = None) -> tuple[list[str], bytes]:
        """The AFK argv and the agent's stdin (the prompt, for agents that read it there)."""
        backend = self.backend(env)
        return backend.afk(self.command, self.prompt.data, self._agent_args(env), self.hooks)

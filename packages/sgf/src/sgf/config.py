"""`.sgf/config.toml`: sgf's own settings for a project (agents never read it)."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from ralph.shared import backends

from sgf import stacks
from sgf.errors import ConfigError, NotInitialised

CONFIG = Path(".sgf") / "config.toml"


class SandboxKind(StrEnum):
    """Where ralph runs agents: in Docker containers or directly on this machine."""

    DOCKER = "docker"
    NONE = "none"


class Isolation(StrEnum):
    """Where a loop works: the one shared tree, or a git worktree of its own."""

    SHARED = "shared"
    WORKTREE = "worktree"


class Review(StrEnum):
    """What the build loop reviews when it completes: each feature, each task, or nothing."""

    FEATURE = "feature"
    TASK = "task"
    OFF = "off"


class Claims(StrEnum):
    """How loops claim: in this clone's database, or published through git."""

    LOCAL = "local"
    GIT = "git"


@dataclass(frozen=True, slots=True)
class Config:
    """The keys of `.sgf/config.toml`, with the design's defaults."""

    stack: str
    docker_template: str
    # The image the sandbox image is built FROM; None: debian:bookworm-slim. `sgf sandbox
    # build` records the one it used (README "Your first project").
    base: str | None = None
    auto_push: bool = True
    default_iterations: int = 25
    max_iterations: int = 100
    sandbox: SandboxKind | None = None
    network: str | None = None
    # Budgets and the circuit breaker, passed to ralph (docs/leaving-a-loop-alone.md).
    max_cost: float | None = None
    max_tokens: int | None = None
    max_time: str | None = None
    max_failed_iterations: int | None = None  # None: ralph's default (3)
    stuck_threshold: int | None = None  # None: ralph's default (3)
    isolation: Isolation | None = None  # kept for old configs: every loop is isolated now
    # What one sandbox container may use, passed to ralph as --memory/--pids (None: ralph's
    # defaults, 8g and 4096): a fork bomb or a memory hog ends its iteration, no more.
    memory: str | None = None
    pids: int | None = None
    claims: Claims | None = None  # None: local (docs/running-many-loops.md)
    # More paths an agent's commits must not change, passed to ralph as --protect (ralph's
    # own defaults always hold; docs/security.md).
    protected: list[str] | None = None
    # More hosts agents may reach through the egress proxy, beyond the stack's registries,
    # passed to ralph as --allow (docs/security.md); this file is protected too.
    allow: list[str] | None = None
    # Guardrails (docs/guardrails.md): None keeps ralph's default
    stop_checklist: bool | None = None  # false: no Stop hook
    stop_blocks: int | None = None  # None: ralph's default (3)
    command_guard: bool | None = None  # false: no destructive-command guard
    format_command: str | None = None  # run on each file the agent edits
    # The check step (README "Check step"): run on a loop's work before it lands when its
    # tasks name no Verify commands; only a PASS lands.
    check_command: str | None = None
    # The check agent, and its model, for every stage; `[stages.build] check_agent = ...`
    # sets one stage's (it may be another backend than the stage's agent).
    check_agent: str | None = None
    check_model: str | None = None
    # Reviews in the build loop (docs/guardrails.md "Reviews"): None: "feature" and 3
    # reviewers, each with its own focus, at once; a final review when the plan is done.
    review: Review | None = None
    reviewers: int | None = None
    # A shell command run on the host with a JSON event on stdin when a loop ends, stops for
    # a budget or hands a task to a human (notify.py). This file is a protected path: an
    # agent cannot change it (docs/security.md).
    notify: str | None = None
    # The agent CLI ralph runs (`--agent`), and per-stage overrides: `[stages.build] agent = ...`.
    agent: str | None = None  # None: ralph's default (claude)
    stages: dict[str, dict[str, str]] | None = None

    def agent_for(self, stage: str) -> str | None:
        """The agent `stage` runs: its own `[stages.<stage>] agent`, else `agent`."""
        return (self.stages or {}).get(stage, {}).get("agent") or self.agent

    def check_agent_for(self, stage: str) -> tuple[str | None, str | None]:
        """The check agent `stage` runs and its model: the stage's own, else the top's."""
        table = (self.stages or {}).get(stage, {})
        return (
            table.get("check_agent") or self.check_agent,
            table.get("check_model") or self.check_model,
        )

    def to_toml(self) -> str:
        """Serialise with tomli-w, leaving out unset optional keys."""
        import tomli_w

        data = {k: (str(v) if isinstance(v, StrEnum) else v) for k, v in asdict(self).items()}
        return tomli_w.dumps({k: v for k, v in data.items() if v is not None})


AGENTS = backends.names()  # ralph's backends (its `--agent`)


def _agent(key: str, value: Any) -> str:
    if value not in AGENTS:
        allowed = " or ".join(f'"{a}"' for a in AGENTS)
        raise ConfigError(f"{CONFIG}: {key} must be {allowed}, not {value!r}")
    return str(value)


STAGE_KEYS = ("agent", "check_agent", "check_model")


def _model(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{CONFIG}: {key} must be a model name, not {value!r}")
    return value


def _stages(value: Any) -> dict[str, dict[str, str]]:
    """`[stages.<name>]` tables; each may set its `agent`, `check_agent` and `check_model`."""
    if not isinstance(value, dict):
        raise ConfigError(f"{CONFIG}: stages must be tables like [stages.build]")
    checked: dict[str, dict[str, str]] = {}
    for stage, table in value.items():
        if not isinstance(table, dict) or set(table) - set(STAGE_KEYS):
            raise ConfigError(f"{CONFIG}: [stages.{stage}] may only set {', '.join(STAGE_KEYS)}")
        checked[stage] = {
            k: (_model if k == "check_model" else _agent)(f"stages.{stage}.{k}", v)
            for k, v in table.items()
        }
    return checked


def _check(key: str, value: Any, hint: Any) -> Any:
    """`value` from the file, checked against the Config field's type `hint`."""
    if key in ("agent", "check_agent"):
        return _agent(key, value)
    if key == "check_model":
        return _model(key, value)
    if key == "stages":
        return _stages(value)
    kinds = [k for k in get_args(hint) if k is not type(None)] or [hint]
    kind = kinds[0]
    if get_origin(kind) is list:  # a list of paths
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            what = "host names" if key == "allow" else "paths"
            raise ConfigError(f"{CONFIG}: {key} must be a list of {what}, not {value!r}")
        return value
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        if value not in {k.value for k in kind}:
            allowed = " or ".join(f'"{k.value}"' for k in kind)
            raise ConfigError(f"{CONFIG}: {key} must be {allowed}, not {value!r}")
        return kind(value)
    if kind is float:  # USD: an int is fine, a bool is a mistake
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"{CONFIG}: {key} must be a positive number of USD, not {value!r}")
        return float(value)
    # bool is an int in Python; a number where a flag belongs (or vice versa) is a mistake.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{CONFIG}: {key} must be a {kind.__name__}, not {value!r}")
    if kind is int and value < 1:
        raise ConfigError(f"{CONFIG}: {key} must be at least 1")
    return value


def parse(text: str) -> Config:
    """Parse config text into a Config, rejecting unknown keys and wrong types.

    The keys, their types and defaults are Config's fields: written once, there."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{CONFIG}: {e}") from e
    hints = get_type_hints(Config)
    unknown = sorted(set(data) - {f.name for f in fields(Config)})
    if unknown:
        raise ConfigError(f"{CONFIG}: unknown keys {', '.join(unknown)}")
    values = {key: _check(key, value, hints[key]) for key, value in data.items()}
    stack = values.setdefault("stack", stacks.DEFAULT_STACK)
    # without the key: the stack's own image (an unknown stack gets the minimal one)
    preset = stacks.STACKS.get(stack) or stacks.get(stacks.DEFAULT_STACK)
    values.setdefault("docker_template", preset.docker_template)
    return Config(**values)


def remember_base(root: Path, base: str | None) -> bool:
    """Record `base` (None: the default) as the project's base image in `.sgf/config.toml`,
    keeping every other key as it is; tell whether the file changed."""
    import tomli_w

    from sgf import safefile

    config = load(root)  # refuses a broken file before a byte is written
    if config.base == base:
        return False
    data = tomllib.loads((root / CONFIG).read_text(encoding="utf-8"))
    if base is None:
        data.pop("base", None)
    else:
        data["base"] = base
    safefile.replace(root / CONFIG, tomli_w.dumps(data).encode(), root=root)
    return True


def load(root: Path) -> Config:
    """Read `<root>/.sgf/config.toml`; NotInitialised when it is missing."""
    path = root / CONFIG
    if not path.is_file():
        raise NotInitialised(root)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{CONFIG}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    return parse(text)

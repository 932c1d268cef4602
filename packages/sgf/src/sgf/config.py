"""`.sgf/config.toml`: sgf's own settings for a project (agents never read it)."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from sgf import stacks
from sgf.errors import ConfigError, NotInitialised

CONFIG = Path(".sgf") / "config.toml"


class SandboxKind(StrEnum):
    """Where ralph runs agents: in Docker containers or directly on this machine."""

    DOCKER = "docker"
    NONE = "none"


class Isolation(StrEnum):
    """Where a loop works: the one shared tree, or a git worktree of its own (issue 14)."""

    SHARED = "shared"
    WORKTREE = "worktree"


class Claims(StrEnum):
    """How loops claim: in this clone's database, or published through git (issue 14)."""

    LOCAL = "local"
    GIT = "git"


@dataclass(frozen=True, slots=True)
class Config:
    """The keys of `.sgf/config.toml`, with the design's defaults."""

    stack: str
    docker_template: str
    auto_push: bool = True
    default_iterations: int = 25
    max_iterations: int = 100
    sandbox: SandboxKind | None = None
    network: str | None = None
    # Budgets and the circuit breaker, passed to ralph (README "Leaving a loop alone").
    max_cost: float | None = None
    max_tokens: int | None = None
    max_time: str | None = None
    max_failed_iterations: int | None = None  # None: ralph's default (3)
    stuck_threshold: int | None = None  # None: ralph's default (3)
    isolation: Isolation | None = None  # None: the shared tree (README "Running many loops")
    claims: Claims | None = None  # None: local (README "Running many loops")

    def to_toml(self) -> str:
        """Serialise with tomli-w, leaving out unset optional keys."""
        import tomli_w

        data = {k: (str(v) if isinstance(v, StrEnum) else v) for k, v in asdict(self).items()}
        return tomli_w.dumps({k: v for k, v in data.items() if v is not None})


def _typed(data: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = data.get(key, default)
    # bool is an int in Python; a number where a flag belongs (or vice versa) is a mistake.
    if value is not None and (not isinstance(value, kind) or (kind is int and value is True)):
        raise ConfigError(f"{CONFIG}: {key} must be a {kind.__name__}, not {value!r}")
    return value


def _cost(data: dict[str, Any]) -> float | None:
    value = data.get("max_cost")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{CONFIG}: max_cost must be a positive number of USD, not {value!r}")
    return float(value)


def parse(text: str) -> Config:
    """Parse config text into a Config, rejecting unknown keys and wrong types."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{CONFIG}: {e}") from e
    known = {"stack", "docker_template", "auto_push", "default_iterations", "max_iterations"}
    known |= {"sandbox", "network", "max_cost", "max_tokens", "max_time", "max_failed_iterations"}
    known |= {"stuck_threshold", "isolation", "claims"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{CONFIG}: unknown keys {', '.join(unknown)}")
    sandbox = _typed(data, "sandbox", str, None)
    if sandbox is not None and sandbox not in {k.value for k in SandboxKind}:
        raise ConfigError(f'{CONFIG}: sandbox must be "docker" or "none", not {sandbox!r}')
    isolation = _typed(data, "isolation", str, None)
    if isolation is not None and isolation not in {i.value for i in Isolation}:
        raise ConfigError(f'{CONFIG}: isolation must be "shared" or "worktree", not {isolation!r}')
    claims = _typed(data, "claims", str, None)
    if claims is not None and claims not in {c.value for c in Claims}:
        raise ConfigError(f'{CONFIG}: claims must be "local" or "git", not {claims!r}')
    stack = _typed(data, "stack", str, stacks.DEFAULT_STACK)
    preset = stacks.STACKS.get(stack)
    config = Config(
        stack=stack,
        # without the key: the stack's own image (an unknown stack gets the minimal one)
        docker_template=_typed(
            data,
            "docker_template",
            str,
            (preset or stacks.get(stacks.DEFAULT_STACK)).docker_template,
        ),
        auto_push=_typed(data, "auto_push", bool, True),
        default_iterations=_typed(data, "default_iterations", int, 25),
        max_iterations=_typed(data, "max_iterations", int, 100),
        sandbox=SandboxKind(sandbox) if sandbox else None,
        network=_typed(data, "network", str, None),
        max_cost=_cost(data),
        max_tokens=_typed(data, "max_tokens", int, None),
        max_time=_typed(data, "max_time", str, None),
        max_failed_iterations=_typed(data, "max_failed_iterations", int, None),
        stuck_threshold=_typed(data, "stuck_threshold", int, None),
        isolation=Isolation(isolation) if isolation else None,
        claims=Claims(claims) if claims else None,
    )
    for key in ("default_iterations", "max_iterations", "max_failed_iterations", "stuck_threshold"):
        if getattr(config, key) is not None and getattr(config, key) < 1:
            raise ConfigError(f"{CONFIG}: {key} must be at least 1")
    return config


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

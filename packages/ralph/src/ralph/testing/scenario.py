"""Scenario files: the scripted model's turns, parsed from JSON into frozen values.

A scenario is one or more scripts. Each Claude Code conversation (one `claude -p` run) is bound
to the first script whose `prompt` regex matches its first user message, and walks that
script's steps from the top. A step is one assistant reply (text and/or tool calls) or an
injected failure (an HTTP error, a usage-limit rejection). See tests/scenarios/README.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

# The name a neutral shell call carries until a dialect maps it to its agent's shell tool.
SHELL = "shell"


class ScenarioError(ValueError):
    """The scenario file is not valid; the message names the offending step."""


class StepKind(StrEnum):
    REPLY = "reply"
    HTTP_ERROR = "http_error"
    RATE_LIMIT = "rate_limit"


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    input: dict[str, Any]
    agent_shell: bool = False  # `{"shell": CMD}`: the agent's own shell tool, whatever its name


@dataclass(frozen=True, slots=True)
class Condition:
    """Regexes that must all match for a step to play; named groups become variables."""

    result: re.Pattern[str] | None = None
    conversation: re.Pattern[str] | None = None
    prompt: re.Pattern[str] | None = None


@dataclass(frozen=True, slots=True)
class Step:
    kind: StepKind
    text: str = ""
    tools: tuple[ToolCall, ...] = ()
    when: Condition | None = None
    label: str | None = None
    goto: str | None = None
    times: int | None = None
    delay: float = 0.0
    status: int = 0
    retry_after: float | None = None
    reset_in: float = 0.0
    rate_limit_type: str = "five_hour"
    message: str = ""


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    steps: tuple[Step, ...]
    prompt: re.Pattern[str] | None = None

    def index_of(self, label: str) -> int:
        for index, step in enumerate(self.steps):
            if step.label == label:
                return index
        raise ScenarioError(f"script {self.name!r}: no step is labelled {label!r}")


@dataclass(frozen=True, slots=True)
class Scenario:
    scripts: tuple[Script, ...]
    side_reply: str = "OK"
    final_text: str = "Nothing more to do."
    model: str = "claude-scripted-1"
    # Successful replies carry `anthropic-ratelimit-unified-*: allowed` headers, as the real
    # API does for subscription logins; the CLI then emits `rate_limit_event` "allowed".
    utilization: float | None = None
    # Input tokens each reply's `usage` reports; the CLI prices them into total_cost_usd, so a
    # scenario can make iterations cost enough to meet a --max-cost budget.
    input_tokens: int = 10

    def script_for(self, prompt: str) -> Script | None:
        """Return the first script whose prompt regex matches (or that has none)."""
        for script in self.scripts:
            if script.prompt is None or script.prompt.search(prompt):
                return script
        return None


def load_scenario(path: Path) -> Scenario:
    """Read and validate a JSON scenario file."""
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ScenarioError(f"{path}: not JSON: {e}") from e
    return parse_scenario(raw, source=str(path))


def parse_scenario(raw: object, *, source: str = "<scenario>") -> Scenario:
    """Turn decoded JSON into a Scenario; a bare list is one script of steps."""
    if isinstance(raw, list):
        raw = {"steps": raw}
    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: expected an object or a list of steps")
    if "scripts" in raw:
        scripts = tuple(
            _script(item, f"{source} script {i}") for i, item in enumerate(raw["scripts"])
        )
    else:
        scripts = (_script({"name": "main", "steps": raw.get("steps", [])}, source),)
    for script in scripts:
        for step in script.steps:
            if step.goto is not None:
                script.index_of(step.goto)
    return Scenario(
        scripts=scripts,
        side_reply=str(raw.get("side_reply", "OK")),
        final_text=str(raw.get("final_text", "Nothing more to do.")),
        model=str(raw.get("model", "claude-scripted-1")),
        utilization=None if raw.get("utilization") is None else float(raw["utilization"]),
        input_tokens=_count(raw.get("input_tokens", 10), f"{source}: input_tokens"),
    )


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ScenarioError(f"{where} must be a whole number of tokens, not {value!r}")
    return value


def _script(raw: object, where: str) -> Script:
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list):
        raise ScenarioError(f"{where}: a script needs a list of steps")
    name = str(raw.get("name", where))
    steps = tuple(_step(item, f"{where} step {i}") for i, item in enumerate(raw["steps"]))
    return Script(name=name, steps=steps, prompt=_regex(raw.get("prompt"), where))


def _regex(value: object, where: str) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(str(value), re.MULTILINE)
    except re.error as e:
        raise ScenarioError(f"{where}: bad regex {value!r}: {e}") from e


def _condition(raw: object, where: str) -> Condition | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not set(raw) <= {"result", "conversation", "prompt"}:
        raise ScenarioError(f"{where}: `when` takes result / conversation / prompt regexes")
    return Condition(
        result=_regex(raw.get("result"), where),
        conversation=_regex(raw.get("conversation"), where),
        prompt=_regex(raw.get("prompt"), where),
    )


def _tool(raw: object, where: str) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ScenarioError(f"{where}: a tool call needs a name and an input object")
    tool_input = raw.get("input", {})
    if not isinstance(tool_input, dict):
        raise ScenarioError(f"{where}: tool input must be an object")
    return ToolCall(name=raw["name"], input=tool_input)


def _step(raw: object, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: a step is an object")
    common: dict[str, Any] = {
        "when": _condition(raw.get("when"), where),
        "label": raw.get("label"),
        "goto": raw.get("goto"),
        "times": raw.get("times"),
        "delay": float(raw.get("delay", 0.0)),
    }
    if "http_error" in raw:
        retry = raw.get("retry_after")
        return Step(
            kind=StepKind.HTTP_ERROR,
            status=int(raw["http_error"]),
            retry_after=None if retry is None else float(retry),
            message=str(raw.get("message", "")),
            **common,
        )
    if "rate_limit" in raw:
        spec = raw["rate_limit"] if isinstance(raw["rate_limit"], dict) else {}
        return Step(
            kind=StepKind.RATE_LIMIT,
            reset_in=float(spec.get("reset_in", 5.0)),
            rate_limit_type=str(spec.get("type", "five_hour")),
            message=str(spec.get("message", "")),
            **common,
        )
    tools: list[ToolCall] = []
    if "shell" in raw:
        if not isinstance(raw["shell"], str) or not raw["shell"]:
            raise ScenarioError(f"{where}: `shell` takes the command line as a string")
        tools.append(ToolCall(name=SHELL, input={"command": raw["shell"]}, agent_shell=True))
    if "tool" in raw:
        tools.append(_tool({"name": raw["tool"], "input": raw.get("input", {})}, where))
    tools.extend(_tool(item, where) for item in raw.get("tools", []))
    text = str(raw.get("text", ""))
    if not text and not tools:
        raise ScenarioError(
            f"{where}: a step needs text, shell, tool/tools, http_error or rate_limit"
        )
    return Step(kind=StepKind.REPLY, text=text, tools=tuple(tools), **common)

"""The scenario files in tests/scenarios and what the scripted model saw of them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ralph.testing.model_server import Recorded
from ralph.testing.scenario import Scenario, load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
# A subscription-style token: the CLI then reads the usage-limit headers the scripted model
# sends and emits real `rate_limit_event`s (with an API key a 429 is only "API Error").
FAKE_TOKEN = "sk-ant-oat01-springfield-e2e"
_ID = re.compile(r'"id":\s*"([^"]+)"')


def scenario(name: str) -> Scenario:
    """A scenario from tests/scenarios by file stem."""
    return load_scenario(SCENARIOS / f"{name}.json")


def scenario_json(name: str) -> dict[str, Any]:
    """A scenario file's decoded JSON, for tests that add steps to it."""
    raw = json.loads((SCENARIOS / f"{name}.json").read_text())
    assert isinstance(raw, dict)
    return raw


def tool_results(requests: list[Recorded]) -> Iterator[tuple[str, str, str]]:
    """(tool_use id, Bash command or tool name, result text) of every tool call, once each."""
    seen: set[str] = set()
    for request in requests:
        if request.kind != "main" or not isinstance(request.body, Mapping):
            continue
        calls: dict[str, str] = {}
        for message in request.body.get("messages", []):
            for block in message.get("content", []) if isinstance(message, Mapping) else []:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "tool_use":
                    tool_input = block.get("input", {})
                    calls[block["id"]] = str(tool_input.get("command", block.get("name")))
                elif block.get("type") == "tool_result" and block["tool_use_id"] not in seen:
                    seen.add(block["tool_use_id"])
                    content = block.get("content")
                    text = content if isinstance(content, str) else json.dumps(content)
                    yield block["tool_use_id"], calls.get(block["tool_use_id"], "?"), text


def claimed(requests: list[Recorded]) -> list[str]:
    """Issue ids handed out by `pn claim-next`, in the order the agents saw them."""
    ids: list[str] = []
    for _, command, result in tool_results(requests):
        if "claim-next" in command:
            ids.extend(_ID.findall(result)[:1])
    return ids

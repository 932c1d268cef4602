"""OpenAI Codex CLI: `codex exec --json`, the prompt on stdin, a provider from OPENAI_BASE_URL.

codex's built-in OpenAI provider speaks the Responses API over a WebSocket; a custom provider
with `wire_api = "responses"` speaks it over HTTP streaming, so any compatible server (a proxy,
a local model, the scripted server) can stand behind OPENAI_BASE_URL. Its configuration lives in
`CODEX_HOME` in the run's HOME: the project's own `.codex/` is agent-written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph import safefile
from ralph.agents import common, prices
from ralph.stream import Event, Reader, Result, Text, ToolError, ToolUse

_BYPASS = "--dangerously-bypass-approvals-and-sandbox"  # the container is the sandbox


@dataclass
class Codex:
    model: str | None = None
    name: str = "codex"

    def afk(self, command: str, prompt: bytes, extra: Sequence[str]) -> tuple[list[str], bytes]:
        flags = ["exec", "--json", "--skip-git-repo-check", _BYPASS]
        return [command, *flags, *extra, "-"], prompt  # `-`: the prompt is read from stdin

    def interactive(self, command: str, hint: str | None, extra: Sequence[str]) -> list[str]:
        return [command, _BYPASS, *extra, *([hint] if hint else [])]

    def setup(self, home: Path, host: Mapping[str, str]) -> dict[str, str]:
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        safefile.replace(codex_home / "config.toml", config_toml(self.model, host))
        return {"CODEX_HOME": str(codex_home)}

    def reader(self) -> Reader:
        return CodexReader(self.model)


def config_toml(model: str | None, host: Mapping[str, str]) -> bytes:
    """codex's `config.toml`: the model, and a provider for OPENAI_BASE_URL when it is set.
    Written by tomli-w, so any model name or URL (quotes, backslashes, control characters,
    emoji) reads back as it was given."""
    import tomli_w

    config: dict[str, Any] = {}
    if model:
        config["model"] = model
    config["check_for_update_on_startup"] = False
    if url := host.get("OPENAI_BASE_URL"):
        config["model_provider"] = "ralph"
        config["model_providers"] = {
            "ralph": {
                "name": "ralph",
                "base_url": url,
                "env_key": "OPENAI_API_KEY",
                "wire_api": "responses",
            }
        }
    config["analytics"] = {"enabled": False}
    return tomli_w.dumps(config).encode()


@dataclass
class CodexReader:
    """`thread.started`, `item.*`, then `turn.completed` (usage) or `turn.failed` per turn."""

    model: str | None
    turns: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    failed: str | None = None

    def line(self, line: bytes) -> list[Event] | None:
        raw = common.load(line)
        if raw is None:
            return None
        kind = raw.get("type")
        item = common.obj(raw.get("item"))
        if kind == "item.started" and item.get("type") == "command_execution":
            return [
                ToolUse(common.SHELL, {"command": common.command(common.text(item.get("command")))})
            ]
        if kind == "item.completed":
            if item.get("type") == "agent_message" and (said := common.text(item.get("text"))):
                return [Text(said)]
            if item.get("type") == "command_execution" and common.num(item.get("exit_code")):
                return [ToolError(common.text(item.get("aggregated_output")))]
            return []
        # `codex exec` runs one turn: its end is the run's result, so the watchdog's grace
        # after a result holds for codex too
        if kind == "turn.completed":
            self.turns += 1
            for key, value in common.obj(raw.get("usage")).items():
                self.usage[key] = self.usage.get(key, 0) + common.num(value)
            return self._result()
        if kind == "turn.failed":
            self.failed = common.text(common.obj(raw.get("error")).get("message")) or "failed"
            return self._result()
        return []  # thread.started, turn.started, error notices, newer types

    def end(self) -> list[Event]:
        return []

    def _result(self) -> list[Event]:
        cached = self.usage.get("cached_input_tokens", 0)
        fresh = max(self.usage.get("input_tokens", 0) - cached, 0)  # input counts cache reads
        output = self.usage.get("output_tokens", 0)
        failed = self.failed
        cost = prices.cost("codex", self.model, fresh=fresh, cached=cached, output=output)
        return [
            Result(
                subtype="error" if failed else "success",
                is_error=failed is not None,
                text=failed or "",
                num_turns=self.turns,
                cost_usd=cost,
                input_tokens=fresh,
                output_tokens=output,
                cache_tokens=cached,
                api_error_status=common.status_in(failed) if failed else None,
                errors=(failed,) if failed else (),
                cost_computed=True,
            )
        ]

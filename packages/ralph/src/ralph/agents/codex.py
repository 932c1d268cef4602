"""OpenAI Codex CLI: `codex exec --json`, the prompt on stdin, a provider from OPENAI_BASE_URL.

codex's built-in OpenAI provider speaks the Responses API over a WebSocket; a custom provider
with `wire_api = "responses"` speaks it over HTTP streaming, so any compatible server (a proxy,
a local model, the scripted server) can stand behind OPENAI_BASE_URL. Its configuration lives in
`CODEX_HOME` in the run's HOME: the project's own `.codex/` is agent-written.

Its hooks take Claude Code's JSON both ways. In the container they are managed requirements
(`/etc/codex/requirements.toml`): codex runs managed hooks without asking to trust them,
keeps them on whatever a user or project layer says, and the requirement `features.hooks`
pins the feature on. On the host they go into the run's `config.toml`, which codex trusts
only with `--dangerously-bypass-hook-trust`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph import safefile
from ralph.agents import common, hookset, prices
from ralph.agents.hookset import HookSet, Wiring
from ralph.stream import Event, Reader, Result, Text, ToolError, ToolUse

_BYPASS = "--dangerously-bypass-approvals-and-sandbox"  # the container is the sandbox
MANAGED = "/etc/codex/requirements.toml"
_TOOLS = "^(Bash|apply_patch)$"  # its shell and its file edits, by the names its hooks see
_TRUST = "--dangerously-bypass-hook-trust"  # on the host: the run's own config.toml's hooks


@dataclass
class Codex:
    model: str | None = None
    name: str = "codex"

    def afk(
        self, command: str, prompt: bytes, extra: Sequence[str], hooks: HookSet | None = None
    ) -> tuple[list[str], bytes]:
        flags = ["exec", "--json", "--skip-git-repo-check", _BYPASS]
        return [command, *flags, *extra, "-"], prompt  # `-`: the prompt is read from stdin

    def interactive(self, command: str, hint: str | None, extra: Sequence[str]) -> list[str]:
        return [command, _BYPASS, *extra, *([hint] if hint else [])]

    def setup(
        self, home: Path, host: Mapping[str, str], hooks: HookSet | None = None
    ) -> dict[str, str]:
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        safefile.replace(codex_home / "config.toml", config_toml(self.model, host, hooks))
        # codex refuses to put its helper binaries in a CODEX_HOME under the temporary
        # directory and says so on stderr every run ("could not create PATH aliases"); the run's
        # HOME is under /tmp, so the temporary directory moves into it instead
        scratch = home / "tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        return {"CODEX_HOME": str(codex_home), "TMPDIR": str(scratch)}

    def wire(self, hooks: HookSet) -> Wiring:
        import tomli_w

        requirements = {"features": {"hooks": True}, "hooks": hook_events(hooks)}
        return Wiring(MANAGED, tomli_w.dumps(requirements).encode(), (_TRUST,))

    def reader(self) -> Reader:
        return CodexReader(self.model)

    def warnings(self, host: Mapping[str, str]) -> list[str]:
        # its own default model speaks a newer tool protocol that a compatible server does
        # not see as tools: each iteration then "succeeds" at once, having done nothing
        return common.unnamed_model("codex", "its own default model", self.model, host)


def hook_events(hooks: HookSet) -> dict[str, list[dict[str, Any]]]:
    """The `[hooks]` table: one command per event ralph uses."""

    def group(event: str, matcher: str | None = None) -> dict[str, Any]:
        command = {"type": "command", "command": hooks.line(event), "timeout": 120}
        return {"hooks": [command], **({"matcher": matcher} if matcher else {})}

    events = {
        "SessionStart": [group(hookset.SESSION_START)],
        "PostToolUse": [group(hookset.POST_TOOL_USE, _TOOLS)],
    }
    if hooks.guard:
        events["PreToolUse"] = [group(hookset.PRE_TOOL_USE, _TOOLS)]
    if hooks.stop:
        events["Stop"] = [group(hookset.STOP)]
    return events


def config_toml(model: str | None, host: Mapping[str, str], hooks: HookSet | None = None) -> bytes:
    """codex's `config.toml`: the model, a provider for OPENAI_BASE_URL when it is set, and
    ralph's hooks on the host. Written by tomli-w, so any model name or URL (quotes,
    backslashes, control characters, emoji) reads back as it was given."""
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
    if hooks is not None:
        config["features"] = {"hooks": True}
        config["hooks"] = hook_events(hooks)
    return tomli_w.dumps(config).encode()


# "Reconnecting... 2/5 (unexpected status 503 ...)", "Reconnecting... waiting for network
# (Connection failed: error sending request)": codex retries by itself, the second forever
_RECONNECTING = re.compile(r"^Reconnecting\.\.\.\s*(?:(\d+)/\d+\s*)?(.*)$", re.DOTALL)
# items that are no action of the model's (its words, its thinking, codex's own notices)
_NO_ACTION = {"agent_message", "reasoning", "error"}


@dataclass
class CodexReader:
    """`thread.started`, `item.*`, then `turn.completed` (usage) or `turn.failed` per turn;
    `error` events between them are codex's notices, among them its retries."""

    model: str | None
    turns: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    failed: str | None = None
    actions: int = 0  # commands, file changes, tool calls: what the model did
    retries: int = 0

    def line(self, line: bytes) -> list[Event] | None:
        raw = common.load(line)
        if raw is None:
            return None
        kind = raw.get("type")
        item = common.obj(raw.get("item"))
        if kind in ("item.started", "item.completed") and item.get("type") not in _NO_ACTION:
            self.actions += 1
        if kind == "error":
            return self._notice(common.text(raw.get("message")))
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
        return []  # thread.started, turn.started, newer types

    def _notice(self, message: str) -> list[Event]:
        """A reconnect is a retry; other notices are repeated by `turn.failed`."""
        found = _RECONNECTING.match(message.strip())
        if found is None:
            return []
        self.retries += 1
        attempt = int(found.group(1)) if found.group(1) else self.retries
        why = found.group(2).strip()
        if why.startswith("(") and why.endswith(")"):
            why = why[1:-1]
        return [common.retry(attempt, why or message, offline=True)]

    def end(self) -> list[Event]:
        return []

    def stderr(self, line: bytes) -> list[Event] | None:
        return None

    def _result(self) -> list[Event]:
        cached = self.usage.get("cached_input_tokens", 0)
        fresh = max(self.usage.get("input_tokens", 0) - cached, 0)  # input counts cache reads
        output = self.usage.get("output_tokens", 0)
        failed = self.failed
        cost = prices.cost("codex", self.model, fresh=fresh, cached=cached, output=output)
        result = Result(
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
        return [common.nothing_done(result, tools=self.actions, variable="OPENAI_MODEL")]

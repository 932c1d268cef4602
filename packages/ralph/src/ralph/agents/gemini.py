"""Gemini CLI: `gemini --output-format stream-json -p PROMPT`, the endpoint from
GOOGLE_GEMINI_BASE_URL, settings in its own GEMINI_CLI_HOME outside the project.

Its hooks (BeforeTool, AfterTool, AfterAgent, SessionStart) are in its system settings in the
container (`/etc/gemini-cli/settings.json`), which it merges last, over the user's and the
project's; it reads them only from a file root owns and nobody else can write, which ralph
puts into each container as root. A project can still turn a hook off by its name
(`hooksConfig.disabled`, a union of every level), so each container's hooks have names of
their own (HookSet.nonce), which an agent cannot know before its container starts. On the host
they go into the run's user settings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ralph import safefile
from ralph.agents import common, hookset, prices
from ralph.agents.hookset import HookSet, Wiring
from ralph.stream import Event, Reader, Result, Text, ToolError, ToolUse

# --skip-trust: otherwise it exits in a folder it was never told to trust
_FLAGS = ["--yolo", "--skip-trust"]
_SHELLS = {"run_shell_command"}
# "Attempt 2 failed. Retrying with backoff... Error: exception TypeError: fetch failed ...",
# "Attempt 1 failed with status 500. Retrying with backoff... _ApiError: {...}"
_RETRY = re.compile(r"^Attempt (\d+) failed(.*?)\. Retrying with backoff\.\.\.\s*(.*)$")
# its API errors, each with a report file in the run's HOME, the message over several lines:
# a retry follows, or its `result` says the same
_API_ERRORS = ("Error when talking to Gemini API", "Error generating content via API")
# printed on stderr every run, telling ralph's reader nothing
_BANNERS = (
    "YOLO mode is enabled",
    "Warning: 256-color support not detected",
    "Ripgrep is not available",
    "[STARTUP] ",
)
MANAGED = "/etc/gemini-cli/settings.json"
_TOOLS = "^(run_shell_command|write_file|replace)$"  # its shell and its file edits
_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "telemetry": {"enabled": False},
}


@dataclass
class Gemini:
    model: str | None = None
    name: str = "gemini"

    def _model(self) -> list[str]:
        return ["-m", self.model] if self.model else []

    def afk(
        self, command: str, prompt: bytes, extra: Sequence[str], hooks: HookSet | None = None
    ) -> tuple[list[str], bytes]:
        text = prompt.decode(errors="replace")
        flags = [*_FLAGS, "--output-format", "stream-json", *self._model()]
        return [command, *flags, *extra, "-p", text], b""

    def interactive(self, command: str, hint: str | None, extra: Sequence[str]) -> list[str]:
        return [command, *_FLAGS, *self._model(), *extra, *(["-i", hint] if hint else [])]

    def setup(
        self, home: Path, host: Mapping[str, str], hooks: HookSet | None = None
    ) -> dict[str, str]:
        # its own home, so the user's ~/.gemini stays untouched under --sandbox none; a system
        # settings file would be skipped under /tmp (it refuses world-writable parents)
        cli_home = home / "gemini"
        path = cli_home / ".gemini" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = home / "tmp"  # where it writes its error reports
        scratch.mkdir(parents=True, exist_ok=True)
        settings = {**_SETTINGS, **(hook_settings(hooks) if hooks is not None else {})}
        safefile.replace(path, json.dumps(settings, indent=2).encode())
        return {
            "GEMINI_CLI_HOME": str(cli_home),
            "TMPDIR": str(scratch),
            # Otherwise it starts itself again as a child (for a larger heap) and the parent
            # ignores SIGINT and SIGTERM without passing them on: in Docker, whose init signals
            # only the parent, the stop ladder had to end in SIGKILL.
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }

    def wire(self, hooks: HookSet) -> Wiring:
        return Wiring(MANAGED, json.dumps(hook_settings(hooks), indent=2).encode())

    def reader(self) -> Reader:
        return GeminiReader(self.model)

    def warnings(self, host: Mapping[str, str]) -> list[str]:
        return []  # without GEMINI_MODEL its `auto` router picks among Gemini's own names


def hook_settings(hooks: HookSet) -> dict[str, object]:
    """The settings that turn hooks on and run ralph's for each event it uses."""

    def group(event: str, matcher: str | None = None) -> dict[str, object]:
        name = f"ralph-{event}" + (f"-{hooks.nonce}" if hooks.nonce else "")
        command = {"type": "command", "name": name, "command": hooks.line(event)}
        return {
            "hooks": [{**command, "timeout": 120_000}],
            **({"matcher": matcher} if matcher else {}),
        }

    events = {
        "SessionStart": [group(hookset.SESSION_START)],
        "AfterTool": [group(hookset.POST_TOOL_USE, _TOOLS)],
    }
    if hooks.guard:
        events["BeforeTool"] = [group(hookset.PRE_TOOL_USE, _TOOLS)]
    if hooks.stop:
        events["AfterAgent"] = [group(hookset.STOP)]
    return {"hooksConfig": {"enabled": True}, "hooks": events}


@dataclass
class GeminiReader:
    """`init`, `message` (text deltas), `tool_use`, `tool_result`, `error`, `result`."""

    model: str | None
    pending: list[str] = field(default_factory=list)
    turns: int = 0
    done: bool = False
    continued: bool = False  # the stderr line before began a message that goes on

    def _flush(self) -> list[Event]:
        said = "".join(self.pending).strip()
        self.pending.clear()
        return [Text(said)] if said else []

    def line(self, line: bytes) -> list[Event] | None:
        raw = common.load(line)
        if raw is None:
            return None
        kind = raw.get("type")
        if kind == "message":
            if raw.get("role") == "assistant":
                self.pending.append(common.text(raw.get("content")))
            return []
        events = self._flush()
        if kind == "tool_use":
            self.turns += 1
            tool = common.text(raw.get("tool_name")) or "?"
            name = common.SHELL if tool in _SHELLS else tool
            events.append(ToolUse(name, common.args(raw.get("parameters"))))
        elif kind == "tool_result" and raw.get("status") == "error":
            error = common.obj(raw.get("error"))
            events.append(ToolError(common.text(error.get("message") or raw.get("output"))))
        elif kind == "result":
            self.done = True
            events.append(self._result(raw))
        return events

    def _result(self, raw: dict[str, object]) -> Result:
        return common.nothing_done(self._stats(raw), tools=self.turns, variable="GEMINI_MODEL")

    def _stats(self, raw: dict[str, object]) -> Result:
        stats = common.obj(raw.get("stats"))
        error = common.obj(raw.get("error"))
        failed = raw.get("status") not in (None, "success")
        message = common.text(error.get("message")) or ("failed" if failed else "")
        cached = common.num(stats.get("cached"))
        fresh = max(common.num(stats.get("input_tokens") or stats.get("input")) - cached, 0)
        output = common.num(stats.get("output_tokens"))
        return Result(
            subtype="error" if failed else "success",
            is_error=failed,
            text=message,
            num_turns=self.turns + 1,
            duration_ms=common.num(stats.get("duration_ms")) or None,
            cost_usd=prices.cost("gemini", self.model, fresh=fresh, cached=cached, output=output),
            input_tokens=fresh,
            output_tokens=output,
            cache_tokens=cached,
            api_error_status=common.status_in(message) if failed else None,
            errors=(message,) if failed else (),
            cost_computed=True,
        )

    def end(self) -> list[Event]:
        return self._flush()

    def stderr(self, line: bytes) -> list[Event] | None:
        """Its retries become events; its API errors (the result or a retry tells them), stack
        traces, a message's indented lines and closing brace, and its banners are not shown."""
        text = line.decode(errors="replace")
        if text.startswith((" ", "\t")) and (self.continued or text.lstrip().startswith("at ")):
            return []
        if self.continued and text.strip() == "}":
            return []
        self.continued = False
        if text.startswith(_BANNERS):
            return []
        if text.startswith(_API_ERRORS):
            self.continued = True
            return []
        found = _RETRY.match(text)
        if found is None:
            return None
        self.continued = True
        attempt, status, error = found.groups()
        error = error.strip().removeprefix("Error: ")
        why = " ".join(part for part in (status.strip(), error) if part)
        return [common.retry(int(attempt), why, offline=not status.strip())]

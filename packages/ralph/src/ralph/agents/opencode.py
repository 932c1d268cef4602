"""opencode: `opencode run --format json PROMPT`, an OpenAI-compatible provider from
OPENAI_BASE_URL (chat completions), configured by a file outside the project.

Its hooks are a plugin (inside/opencode_plugin.js) named in its managed settings in the
container (`/etc/opencode/opencode.json`), which it reads last, over the user's and the
project's; on the host in the run's own config. It has no event for the end of a turn, so the
stop checklist runs it instead (inside/rerun.py): AFK, `opencode run` is started by ralph's
hook program, which asks it again on the same session while the checklist sends it back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph import safefile
from ralph.agents import common, hookset, prices
from ralph.agents.hookset import HookSet, Wiring
from ralph.stream import Event, Reader, Result, Text, ToolError, ToolUse

MANAGED = "/etc/opencode/opencode.json"
PLUGIN = "opencode_plugin.js"
# what opencode installs from npm before it loads a plugin (plugin_package_present)
PLUGIN_PACKAGE = "@opencode-ai/plugin"
_SHELLS = {"bash"}
# opencode's `run --format json` prints nothing while it retries a failed API call (five
# times, about a minute): its ERROR log on stderr is the only place a retry shows
_LOGS = ["--print-logs", "--log-level", "ERROR"]
_LOG_FIELD = r'(?:^|\s){}=(?:"((?:[^"\\]|\\.)*)"|(\S+))'
_MESSAGE = re.compile(_LOG_FIELD.format("message"))
_ERROR = re.compile(_LOG_FIELD.format(r"error\.error"))
_CAUSE = re.compile(r" \(cause: .*\)$")  # the same words again, from the error's cause
# the AI SDK's words for a request that got no answer (a fetch that failed)
_OFFLINE = ("Cannot connect to API", "Unable to connect")


@dataclass
class Opencode:
    model: str | None = None
    name: str = "opencode"

    def afk(
        self, command: str, prompt: bytes, extra: Sequence[str], hooks: HookSet | None = None
    ) -> tuple[list[str], bytes]:
        text = prompt.decode(errors="replace")
        argv = [command, "run", "--format", "json", *_LOGS, *extra, text]
        if hooks is not None and hooks.stop:
            return [*hooks.argv(hookset.RERUN), "--", *argv], b""
        return argv, b""

    def interactive(self, command: str, hint: str | None, extra: Sequence[str]) -> list[str]:
        return [command, *extra, *(["--prompt", hint] if hint else [])]

    def setup(
        self, home: Path, host: Mapping[str, str], hooks: HookSet | None = None
    ) -> dict[str, str]:
        model = self.model or prices.DEFAULT["opencode"]
        config: dict[str, Any] = {
            "autoupdate": False,
            "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
        }
        if url := host.get("OPENAI_BASE_URL"):
            config |= {
                "model": f"ralph/{model}",
                "small_model": f"ralph/{model}",
                "provider": {
                    "ralph": {
                        # bundled in the binary: nothing is fetched
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "ralph",
                        "options": {"baseURL": url, "apiKey": "{env:OPENAI_API_KEY}"},
                        "models": {model: {"name": model, "tool_call": True}},
                    }
                },
            }
        if hooks is not None:
            config |= plugins(hooks)
        path = home / ".config" / "ralph-opencode.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        safefile.replace(path, json.dumps(config, indent=2).encode())
        plugin_package_present(home / ".config" / "opencode")
        return {
            "OPENCODE_CONFIG": str(path),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
        }

    def wire(self, hooks: HookSet) -> Wiring:
        return Wiring(MANAGED, json.dumps(plugins(hooks), indent=2).encode())

    def reader(self) -> Reader:
        return OpencodeReader(self.model)

    def warnings(self, host: Mapping[str, str]) -> list[str]:
        asked = f"the model {prices.DEFAULT['opencode']}"
        return common.unnamed_model("opencode", asked, self.model, host)


def plugin_package_present(folder: Path) -> None:
    """Tell opencode that its plugin package is installed in its config folder (`folder`,
    under the run's HOME), so it starts without npm.

    Before it loads any plugin, opencode installs `@opencode-ai/plugin` from npm into each of
    its config folders and waits for that: without a registry (the sandbox's egress allows
    none) it retries for over a minute, on every run and every rerun of the stop checklist.
    ralph's plugin needs nothing from npm, and opencode skips the install where a
    `node_modules/` and a lock file that lists the package exist (checked with the pinned
    opencode)."""
    (folder / "node_modules").mkdir(parents=True, exist_ok=True)
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": {PLUGIN_PACKAGE: "*"}}}}
    safefile.replace(folder / "package-lock.json", json.dumps(lock).encode())


def plugins(hooks: HookSet) -> dict[str, object]:
    """The config that loads ralph's plugin, with the hook program's argv as its option."""
    options = {"argv": hooks.program(), "guard": hooks.guard}
    return {"plugin": [[f"file://{hooks.inside(PLUGIN)}", options]]}


@dataclass
class OpencodeReader:
    """`step_start`, `text`, `tool_use`, `step_finish` (tokens, cost) and `error` lines; no
    final event, so the result is built when the stream ends."""

    model: str | None
    steps: int = 0
    tools: int = 0
    retries: int = 0
    fresh: int = 0
    cached: int = 0
    output: int = 0
    reported: float = 0.0
    error: str | None = None
    status: int | None = None

    def line(self, line: bytes) -> list[Event] | None:
        raw = common.load(line)
        if raw is None:
            return None
        kind = raw.get("type")
        part = common.obj(raw.get("part"))
        if kind == "text" and (said := common.text(part.get("text"))):
            return [Text(said)]
        if kind == "tool_use":
            self.tools += 1
            tool = common.text(part.get("tool")) or "?"
            state = common.obj(part.get("state"))
            events: list[Event] = [
                ToolUse(common.SHELL if tool in _SHELLS else tool, common.args(state.get("input")))
            ]
            exit_code = common.num(common.obj(state.get("metadata")).get("exit"))
            if state.get("status") == "error" or exit_code:
                events.append(ToolError(common.text(state.get("output") or state.get("error"))))
            return events
        if kind == "step_finish":
            self.steps += 1
            tokens = common.obj(part.get("tokens"))
            cache = common.obj(tokens.get("cache"))
            self.fresh += common.num(tokens.get("input"))
            self.cached += common.num(cache.get("read")) + common.num(cache.get("write"))
            self.output += common.num(tokens.get("output")) + common.num(tokens.get("reasoning"))
            cost = part.get("cost")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                self.reported += float(cost)
            return []
        if kind == "error":
            error = common.obj(raw.get("error"))
            data = common.obj(error.get("data"))
            self.error = common.text(data.get("message")) or common.text(error.get("name"))
            self.error = self.error or "error"
            self.status = common.num(data.get("statusCode")) or common.status_in(self.error)
            return []
        return []

    def end(self) -> list[Event]:
        if not self.steps and self.error is None:
            return []
        computed = not self.reported
        cost = self.reported or prices.cost(
            "opencode", self.model, fresh=self.fresh, cached=self.cached, output=self.output
        )
        result = Result(
            subtype="error" if self.error else "success",
            is_error=self.error is not None,
            text=self.error or "",
            num_turns=self.steps,
            cost_usd=cost,
            input_tokens=self.fresh,
            output_tokens=self.output,
            cache_tokens=self.cached,
            api_error_status=self.status,
            errors=(self.error,) if self.error else (),
            cost_computed=computed,
        )
        return [common.nothing_done(result, tools=self.tools, variable="OPENAI_MODEL")]

    def stderr(self, line: bytes) -> list[Event] | None:
        """Its log: each "stream error" is a failed API call it retries (or gives up on, which
        the `error` event reports again), a failed session step is in that event too."""
        text = line.decode(errors="replace")
        if not text.startswith("timestamp="):
            return None
        message = _field(_MESSAGE, text)
        if message == "process":
            return []
        if message != "stream error":
            return None
        error = _CAUSE.sub("", _field(_ERROR, text).removeprefix("AI_APICallError: "))
        self.retries += 1
        offline = any(words in error for words in _OFFLINE)
        return [common.retry(self.retries, error or "stream error", offline=offline)]


def _field(pattern: re.Pattern[str], line: str) -> str:
    """A `key="value"` (or `key=value`) field of an opencode log line, or ""."""
    found = pattern.search(line)
    if found is None:
        return ""
    quoted, bare = found.groups()
    return bare if quoted is None else re.sub(r"\\(.)", r"\1", quoted)

"""The real, pinned claude, codex, opencode and gemini CLIs driven by the scripted model
server, each in its own dialect, on the host with the network cut.

Each run happens inside a fresh network namespace (`unshare -rn`): only loopback exists, so
the CLI can reach the scripted server and nothing else (no telemetry, update checks or model
lists). The server runs in the same namespace, on a fixed port nothing else can hold there.
Every CLI walks the same script: text with a shell command that writes a file, then a step
that only plays when that command's output matches, then the final answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ralph.agents import opencode as opencode_agent

PORT = 8765
URL = f"http://127.0.0.1:{PORT}"
PROMPT = "Follow the script."

SCENARIO: dict[str, Any] = {
    "final_text": "The script ran past its end.",
    "steps": [
        # No `$(...)`: gemini-cli refuses command substitution as "command injection".
        {"text": "Writing the file.", "shell": "echo scripted > made.txt && wc -c made.txt"},
        {"when": {"result": r"(?P<size>\d+) made\.txt"}, "text": "The file has {{size}} bytes."},
    ],
}

# Brings loopback up, starts the scripted server on it, waits (bounded) until it listens,
# runs the CLI given as "$@" and exits with the CLI's status.
WRAPPER = f"""
ip link set lo up || exit 96
"$PYTHON" -m ralph.testing.model_server --scenario "$SCENARIO" --port {PORT} \\
    --ready-file "$READY" --record "$RECORD" >/dev/null 2>"$SERVER_LOG" &
server=$!
for _ in $(seq 400); do [ -s "$READY" ] && break; sleep 0.05; done
[ -s "$READY" ] || {{ echo "the scripted server did not start" >&2; exit 97; }}
"$@" </dev/null
status=$?
kill "$server"
wait "$server"
exit "$status"
"""


@dataclass(frozen=True, slots=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]

    def main_paths(self) -> set[str]:
        return {r["path"] for r in self.requests if r["kind"] == "main"}

    def explain(self) -> str:
        return f"exit {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr[-4000:]}"


def offline(
    tmp_path: Path,
    project: Path,
    argv: list[str],
    env: Mapping[str, str],
    scenario_json: object = SCENARIO,
) -> Run:
    """Run `argv` in `project` with only loopback and the scripted server reachable."""
    unshare = shutil.which("unshare")
    cut = subprocess.run(
        [unshare or "unshare", "-rn", "true"], capture_output=True, check=False
    ).returncode
    if not (unshare and shutil.which("ip") and cut == 0):
        why = "these tests need `unshare -rn` and `ip` to cut the network"
        if os.environ.get("CI") == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(scenario_json))
    record = tmp_path / "requests.jsonl"
    server_log = tmp_path / "server.log"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    wrapper_env = {
        **os.environ,
        **env,
        "PYTHON": sys.executable,
        "SCENARIO": str(scenario),
        "READY": str(tmp_path / "ready"),
        "RECORD": str(record),
        "SERVER_LOG": str(server_log),
        # gemini-cli writes its error reports to the temporary directory.
        "TMPDIR": str(tmp),
    }
    done = subprocess.run(
        [unshare, "-rn", "bash", "-c", WRAPPER, "offline", *argv],
        cwd=project,
        env=wrapper_env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    requests = (
        [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    )
    log = server_log.read_text() if server_log.exists() else ""
    return Run(done.returncode, done.stdout, done.stderr + log, requests)


@pytest.fixture
def project(make_repo: Any) -> Path:
    return Path(make_repo("project"))


def assert_walked_the_script(run: Run, project: Path) -> None:
    assert run.returncode == 0, run.explain()
    made = project / "made.txt"
    assert made.is_file(), run.explain()
    assert made.read_text() == "scripted\n", run.explain()
    assert "Writing the file." in run.stdout, run.explain()
    # Only said when the next step's `when.result` read the command's output.
    assert "The file has 9 bytes." in run.stdout, run.explain()
    assert "past its end" not in run.stdout, run.explain()


@dataclass(frozen=True, slots=True)
class Agent:
    """How one CLI is started against the server, and how to read what it said."""

    argv: list[str]
    env: dict[str, str]
    said: Callable[[list[dict[str, Any]]], str]  # its JSON-lines events -> the model's text


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def codex(binary: Path, tmp_path: Path) -> Agent:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        f"""model = "scripted-1"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "{URL}/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
"""
    )
    argv = [
        str(binary),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        PROMPT,
    ]
    env = {"CODEX_HOME": str(codex_home), "SCRIPTED_API_KEY": "sk-test"}

    def said(lines: list[dict[str, Any]]) -> str:
        items = [e["item"] for e in lines if e["type"] == "item.completed"]
        return "\n".join(i["text"] for i in items if i["type"] == "agent_message")

    return Agent(argv, env, said)


def opencode(binary: Path, tmp_path: Path) -> Agent:
    config = tmp_path / "opencode.json"
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Scripted",
        "options": {"baseURL": f"{URL}/v1", "apiKey": "sk-test"},
        "models": {"scripted-1": {"name": "Scripted", "tool_call": True}},
    }
    config.write_text(
        json.dumps(
            {
                "autoupdate": False,
                "share": "disabled",
                "model": "scripted/scripted-1",
                "small_model": "scripted/scripted-1",
                "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
                "provider": {"scripted": provider},
            }
        )
    )
    argv = [str(binary), "run", "--format", "json", PROMPT]
    env = {
        "OPENCODE_CONFIG": str(config),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }

    def said(lines: list[dict[str, Any]]) -> str:
        return "\n".join(e["part"]["text"] for e in lines if e["type"] == "text")

    return Agent(argv, env, said)


def gemini(binary: Path, tmp_path: Path) -> Agent:
    settings = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "telemetry": {"enabled": False},
            }
        )
    )
    # No -m: the model is "auto", whose router asks a side call for a JSON classification.
    argv = [str(binary), "--yolo", "--skip-trust", "--output-format", "stream-json", "-p", PROMPT]
    env = {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": URL}

    def said(lines: list[dict[str, Any]]) -> str:
        return "".join(e["content"] for e in lines if e.get("role") == "assistant")

    return Agent(argv, env, said)


def claude(binary: Path, tmp_path: Path) -> Agent:
    argv = [
        str(binary),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        PROMPT,
    ]
    env = {"ANTHROPIC_BASE_URL": URL, "ANTHROPIC_API_KEY": "sk-test", "IS_SANDBOX": "1"}

    def said(lines: list[dict[str, Any]]) -> str:
        messages = [e["message"]["content"] for e in lines if e["type"] == "assistant"]
        return "\n".join(b["text"] for m in messages for b in m if b["type"] == "text")

    return Agent(argv, env, said)


def walk(agent: Agent, project: Path, tmp_path: Path) -> Run:
    """Play SCENARIO to `agent` and check it wrote the file and read the command's output."""
    run = offline(tmp_path, project, agent.argv, agent.env)
    assert run.returncode == 0, run.explain()
    made = project / "made.txt"
    assert made.is_file(), run.explain()
    assert made.read_text() == "scripted\n", run.explain()
    said = agent.said(events(run.stdout))
    assert "Writing the file." in said, run.explain()
    # Only said when the next step's `when.result` read the command's output.
    assert "The file has 9 bytes." in said, run.explain()
    assert "past its end" not in said, run.explain()
    return run


@pytest.mark.codex
def test_real_codex_speaks_responses_offline(
    codex_bin: Path, project: Path, tmp_path: Path
) -> None:
    run = walk(codex(codex_bin, tmp_path), project, tmp_path)
    assert run.main_paths() == {"/v1/responses"}
    done = [e["item"] for e in events(run.stdout) if e["type"] == "item.completed"]
    ran = [item["exit_code"] for item in done if item["type"] == "command_execution"]
    assert ran == [0], run.explain()
    # Usage as the Responses API reports it: 10 input tokens a request, two requests.
    (usage,) = [e["usage"] for e in events(run.stdout) if e["type"] == "turn.completed"]
    assert usage["input_tokens"] == 20


@pytest.mark.opencode
def test_real_opencode_speaks_chat_completions_offline(
    opencode_bin: Path, project: Path, tmp_path: Path
) -> None:
    run = walk(opencode(opencode_bin, tmp_path), project, tmp_path)
    assert run.main_paths() == {"/v1/chat/completions"}
    # Its title request offers no tools: a side call, answered without touching the script.
    assert any(r["kind"] == "side" for r in run.requests)
    steps = [e["part"]["tokens"] for e in events(run.stdout) if e["type"] == "step_finish"]
    assert [tokens["input"] for tokens in steps] == [10, 10]


@pytest.mark.opencode
def test_real_opencode_loads_a_plugin_without_asking_npm_for_its_package(
    opencode_bin: Path, project: Path, tmp_path: Path
) -> None:
    """opencode installs its plugin package from npm into its config folder before it loads
    any plugin, and waits for that (over a minute of retries without a registry); in a folder
    prepared as ralph prepares the run's, it loads the plugin and never asks npm."""
    agent = opencode(opencode_bin, tmp_path)
    config_path = Path(agent.env["OPENCODE_CONFIG"])
    loaded = tmp_path / "plugin-loaded"
    plugin = tmp_path / "plugin.js"
    plugin.write_text(
        'import { writeFileSync } from "node:fs";\n'
        f"export const Probe = async () => {{ writeFileSync({json.dumps(str(loaded))}, "
        '"yes"); return {}; };\n'
    )
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "plugin": [f"file://{plugin}"]}))
    folder = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "opencode"
    opencode_agent.plugin_package_present(folder)
    argv = [*agent.argv[:-1], "--print-logs", "--log-level", "WARN", agent.argv[-1]]

    run = offline(tmp_path, project, argv, agent.env)

    assert run.returncode == 0, run.explain()
    assert loaded.read_text() == "yes", run.explain()
    assert "dependency install" not in run.stderr, run.explain()


@pytest.mark.gemini
def test_real_gemini_speaks_the_gemini_api_offline(
    gemini_bin: Path, project: Path, tmp_path: Path
) -> None:
    run = walk(gemini(gemini_bin, tmp_path), project, tmp_path)
    last = events(run.stdout)[-1]
    assert (last["type"], last["status"]) == ("result", "success"), run.explain()
    (path,) = run.main_paths()
    assert path.endswith(":streamGenerateContent"), path
    # One router call, answered in JSON its schema accepts: not retried.
    assert [r["status"] for r in run.requests if r["kind"] == "side"] == [200]
    # usageMetadata read back: 10 prompt tokens for each of the three requests.
    assert last["stats"]["input_tokens"] == 30


@pytest.mark.claude
def test_real_claude_walks_the_same_script_offline(
    claude_bin: Path, project: Path, tmp_path: Path
) -> None:
    run = walk(claude(claude_bin, tmp_path), project, tmp_path)
    assert run.main_paths() == {"/v1/messages"}


LIMITED_ONCE = [
    {"rate_limit": {"reset_in": 1, "message": "Scripted usage limit"}, "times": 1},
    {"text": "After the limit."},
]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(codex, marks=pytest.mark.codex, id="codex"),
        pytest.param(opencode, marks=pytest.mark.opencode, id="opencode"),
        pytest.param(gemini, marks=pytest.mark.gemini, id="gemini"),
    ],
)
def test_each_cli_retries_a_429_in_its_api_s_shape(
    make: Callable[[Path, Path], Agent],
    agent_bins: dict[str, Path],
    project: Path,
    tmp_path: Path,
) -> None:
    name = make.__name__
    binary = agent_bins.get(name)
    if binary is None:
        pytest.skip(f"{name} binary unavailable: run scripts/ensure-agents.sh")
    agent = make(binary, tmp_path)
    run = offline(tmp_path, project, agent.argv, agent.env, LIMITED_ONCE)
    assert run.returncode == 0, run.explain()
    assert "After the limit." in agent.said(events(run.stdout)), run.explain()
    assert [r["status"] for r in run.requests if r["kind"] == "main"] == [429, 200]

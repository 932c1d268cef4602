"""agents/: each backend's argv, configuration files and event reader, offline and in-process.

The lines are the shapes the pinned CLIs print (testing/AGENTS.md); tests/test_e2e_agents.py
runs the real CLIs in the sandbox.
"""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ralph import agents, limits
from ralph.stream import Event, Parser, Result, Text, ToolError, ToolUse


def read(agent: str, *lines: object) -> list[Event]:
    data = "\n".join(json.dumps(line) for line in lines).encode()
    return list(Parser(agents.get(agent).reader()).events([data]))


def test_every_backend_is_known_and_claude_is_the_default() -> None:
    assert agents.names() == ("claude", "codex", "gemini", "opencode")
    assert agents.get("claude").afk("claude", b"do it", ["--model", "x"]) == (
        [
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--model",
            "x",
        ],
        b"do it",
    )
    with pytest.raises(KeyError):
        agents.get("aider")


def test_codex_reads_its_prompt_from_stdin_and_the_others_from_argv() -> None:
    argv, stdin = agents.get("codex").afk("codex", b"do it", [])
    assert argv[-1] == "-"
    assert stdin == b"do it"
    for name in ("opencode", "gemini"):
        argv, stdin = agents.get(name).afk(name, b"do it", [])
        assert argv[-1] == "do it"
        assert stdin == b""


def test_codex_gets_a_responses_provider_from_openai_base_url(tmp_path: Path) -> None:
    env = agents.get("codex", {"OPENAI_MODEL": "m-1"}).setup(
        tmp_path, {"OPENAI_BASE_URL": "http://proxy:8080/v1"}
    )
    config = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())
    assert env == {"CODEX_HOME": str(tmp_path / ".codex")}
    assert config["model"] == "m-1"
    assert config["model_provider"] == "ralph"
    assert config["model_providers"]["ralph"] == {
        "name": "ralph",
        "base_url": "http://proxy:8080/v1",
        "env_key": "OPENAI_API_KEY",
        "wire_api": "responses",
    }


AWKWARD = [
    'say "hi"',
    "C:\\models\\m-1",
    "line\nbreak\ttab",
    "del\x7fnul\x00",
    "emoji \U0001f600 and \u202eright-to-left",
    "]] [table] = '''x'''",
    'multi """ quotes',
]


@pytest.mark.parametrize("awkward", AWKWARD)
def test_codex_config_reads_back_exactly_whatever_the_model_and_url_hold(
    tmp_path: Path, awkward: str
) -> None:
    url = f"http://proxy:8080/v1?q={awkward}"
    agents.get("codex", {"OPENAI_MODEL": awkward}).setup(tmp_path, {"OPENAI_BASE_URL": url})
    config = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text(encoding="utf-8"))
    assert config == {
        "model": awkward,
        "check_for_update_on_startup": False,
        "model_provider": "ralph",
        "model_providers": {
            "ralph": {
                "name": "ralph",
                "base_url": url,
                "env_key": "OPENAI_API_KEY",
                "wire_api": "responses",
            }
        },
        "analytics": {"enabled": False},
    }


def test_codex_config_without_a_model_or_url_only_quiets_codex(tmp_path: Path) -> None:
    agents.get("codex").setup(tmp_path, {})
    config = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text(encoding="utf-8"))
    assert config == {"check_for_update_on_startup": False, "analytics": {"enabled": False}}


def test_opencode_and_gemini_configuration_stays_outside_the_project(tmp_path: Path) -> None:
    env = agents.get("opencode").setup(tmp_path, {"OPENAI_BASE_URL": "http://proxy/v1"})
    config = json.loads(Path(env["OPENCODE_CONFIG"]).read_text())
    assert config["provider"]["ralph"]["options"]["baseURL"] == "http://proxy/v1"
    assert env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    env = agents.get("gemini").setup(tmp_path, {})
    settings = Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
    assert json.loads(settings.read_text())["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert all(Path(v).is_relative_to(tmp_path) for k, v in env.items() if k != "TMPDIR")


def test_codex_events_become_ralphs_with_a_computed_cost() -> None:
    events = read(
        "codex",
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "Claiming."}},
        {"type": "item.started", "item": {"type": "command_execution",
                                          "command": "/bin/bash -lc 'pn claim-next --json'"}},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "x",
                                            "aggregated_output": "boom", "exit_code": 2}},
        {"type": "turn.completed",
         "usage": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 100}},
    )  # fmt: skip
    assert events[:3] == [
        Text("Claiming."),
        ToolUse("Bash", {"command": "pn claim-next --json"}),
        ToolError("boom"),
    ]
    result = events[3]
    assert isinstance(result, Result)
    assert (result.input_tokens, result.cache_tokens, result.output_tokens) == (600, 400, 100)
    assert result.cost_computed
    assert result.cost_usd == pytest.approx((600 * 1.25 + 400 * 0.125 + 100 * 10.0) / 1e6)


def test_a_codex_429_is_a_usage_limit_ralph_backs_off_from() -> None:
    [result] = read(
        "codex",
        {"type": "turn.failed",
         "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"}},
    )  # fmt: skip
    assert isinstance(result, Result)
    assert result.is_error
    assert result.api_error_status == 429
    limit = limits.detect(None, result, now=datetime.now(UTC))
    assert limit is not None
    assert limit.resets_at is None


def test_opencode_sums_its_steps_into_one_result_at_the_end() -> None:
    step = {"type": "step_finish",
            "part": {"reason": "tool-calls", "cost": 0,
                     "tokens": {"input": 10, "output": 5, "reasoning": 1,
                                "cache": {"read": 2, "write": 0}}}}  # fmt: skip
    events = read(
        "opencode",
        {"type": "text", "part": {"text": "Claiming."}},
        {"type": "tool_use", "part": {"tool": "bash", "state": {
            "status": "completed", "input": {"command": "false"}, "output": "no",
            "metadata": {"exit": 1}}}},
        step,
        step,
    )  # fmt: skip
    assert events[:3] == [Text("Claiming."), ToolUse("Bash", {"command": "false"}), ToolError("no")]
    result = events[3]
    assert isinstance(result, Result)
    assert (result.num_turns, result.input_tokens, result.output_tokens) == (2, 20, 12)
    assert result.cache_tokens == 4
    assert result.cost_computed


def test_an_opencode_429_error_is_a_usage_limit() -> None:
    [result] = read(
        "opencode",
        {"type": "error", "error": {"name": "APIError",
                                    "data": {"message": "Too Many Requests", "statusCode": 429}}},
    )  # fmt: skip
    assert isinstance(result, Result)
    assert result.api_error_status == 429
    assert limits.detect(None, result, now=datetime.now(UTC)) is not None


def test_gemini_joins_its_text_deltas_and_reads_its_stats() -> None:
    events = read(
        "gemini",
        {"type": "init", "model": "auto"},
        {"type": "message", "role": "user", "content": "do it"},
        {"type": "message", "role": "assistant", "content": "Claim", "delta": True},
        {"type": "message", "role": "assistant", "content": "ing.", "delta": True},
        {"type": "tool_use", "tool_name": "run_shell_command", "parameters": {"command": "ls"}},
        {"type": "tool_result", "status": "error", "error": {"message": "denied"}},
        {"type": "result", "status": "success",
         "stats": {"input_tokens": 30, "output_tokens": 7, "cached": 10, "duration_ms": 5}},
    )  # fmt: skip
    assert events[:3] == [
        Text("Claiming."),
        ToolUse("Bash", {"command": "ls"}),
        ToolError("denied"),
    ]
    result = events[3]
    assert isinstance(result, Result)
    assert (result.input_tokens, result.cache_tokens, result.output_tokens) == (20, 10, 7)
    assert not result.is_error
    assert result.cost_computed


def test_a_missing_agent_label_is_one_clear_line() -> None:
    assert agents.missing("claude", {}) is None
    assert agents.missing("codex", {"springfield.agent.codex": "0.169.0"}) is None
    why = agents.missing("codex", {})
    assert why is not None
    assert "springfield.agent.codex" in why
    assert "sgf sandbox build" in why


def test_each_backend_opens_an_interactive_session_with_the_hint() -> None:
    hint = "Read @/run/prompt.md and follow its instructions."
    assert agents.get("claude").interactive("claude", hint, []) == [
        "claude",
        "--dangerously-skip-permissions",
        hint,
    ]
    assert agents.get("codex").interactive("codex", hint, [])[-1] == hint
    assert agents.get("opencode").interactive("opencode", hint, [])[-2:] == ["--prompt", hint]
    gemini = agents.get("gemini", {"GEMINI_MODEL": "gemini-2.5-flash"})
    assert gemini.interactive("gemini", hint, []) == [
        "gemini", "--yolo", "--skip-trust", "-m", "gemini-2.5-flash", "-i", hint,
    ]  # fmt: skip

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
from ralph.stream import NOTHING_DONE, ApiRetry, Event, Parser, Result, Text, ToolError, ToolUse


def read(agent: str, *lines: object) -> list[Event]:
    data = "\n".join(json.dumps(line) for line in lines).encode()
    return list(Parser(agents.get(agent).reader()).events([data]))


def stderr(agent: str, text: str) -> list[Event | bytes]:
    """What ralph shows of `text` on the agent's stderr: its events, or lines as they are."""
    parser = Parser(agents.get(agent).reader())
    return parser.stderr(text.encode()) + parser.stderr_end()


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
    # its temporary directory outside the CODEX_HOME, so it makes its helper binaries without
    # "could not create PATH aliases" on stderr every run
    assert env == {"CODEX_HOME": str(tmp_path / ".codex"), "TMPDIR": str(tmp_path / "tmp")}
    assert (tmp_path / "tmp").is_dir()
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
    paths = {k: v for k, v in env.items() if k not in ("TMPDIR", "GEMINI_CLI_NO_RELAUNCH")}
    assert all(Path(v).is_relative_to(tmp_path) for v in paths.values())


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


SHELL_RUN = {"type": "item.started", "item": {"type": "command_execution", "command": "ls"}}


def test_codex_reconnects_are_retries_the_unanswered_ones_offline() -> None:
    waiting = "Reconnecting... waiting for network (Connection failed: error sending request)"
    refused = (
        "Reconnecting... 2/5 (unexpected status 401 Unauthorized: Incorrect API key provided, "
        "url: http://127.0.0.1:8080/v1/responses)"
    )
    events = read(
        "codex",
        {"type": "turn.started"},
        {"type": "error", "message": waiting},
        {"type": "error", "message": waiting},
        {"type": "error", "message": refused},
        {"type": "error", "message": "unexpected status 401 Unauthorized"},  # turn.failed says it
    )
    assert events == [
        ApiRetry(1, None, "waiting for network (Connection failed: error sending request)", True),
        ApiRetry(2, None, "waiting for network (Connection failed: error sending request)", True),
        ApiRetry(2, 401, refused.split("(", 1)[1].rstrip(")"), offline=False),
    ]


def test_a_turn_without_a_single_tool_call_did_nothing_and_failed() -> None:
    """codex's own default model at a compatible server: "OK", and the turn "succeeds"."""
    said = {"type": "item.completed", "item": {"type": "agent_message", "text": "OK"}}
    done = {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 7}}
    [text, result] = read("codex", {"type": "turn.started"}, said, done)
    assert text == Text("OK")
    assert isinstance(result, Result)
    assert (result.subtype, result.is_error, result.nothing_done) == (NOTHING_DONE, True, True)
    assert "the model made no tool call" in result.text
    assert "OPENAI_MODEL" in result.text
    assert limits.detect(None, result, now=datetime.now(UTC)) is None  # no waiting: a failure
    edited = {"type": "item.completed", "item": {"type": "file_change", "changes": []}}
    for action in (SHELL_RUN, edited):
        *_, result = read("codex", action, done)
        assert isinstance(result, Result)
        assert not result.is_error


def test_the_others_fail_a_run_without_a_tool_call_too() -> None:
    step = {"type": "step_finish", "part": {"tokens": {"input": 1, "output": 1}}}
    [said, result] = read("opencode", {"type": "text", "part": {"text": "Hello."}}, step)
    assert said == Text("Hello.")
    assert isinstance(result, Result)
    assert result.nothing_done
    assert "OPENAI_MODEL" in result.text
    [result] = read("gemini", {"type": "result", "status": "success", "stats": {}})
    assert isinstance(result, Result)
    assert result.nothing_done
    assert "GEMINI_MODEL" in result.text
    # a failure stays the agent's own
    [result] = read("gemini", {"type": "result", "status": "error", "error": {"message": "x"}})
    assert isinstance(result, Result)
    assert (result.subtype, result.text) == ("error", "x")


OPENCODE_LOG = (
    'timestamp=2026-11-29T01:34:47.196Z level=ERROR run=6c9b45c1 message="stream error" '
    "providerID=ralph modelID=m-1 session.id=ses_1 small=false agent=build mode=primary "
    'error.error="AI_APICallError: {}"\n'
)


def test_opencode_prints_its_error_log_whose_stream_errors_are_its_retries() -> None:
    argv, _ = agents.get("opencode").afk("opencode", b"do it", [])
    assert argv[:6] == ["opencode", "run", "--format", "json", "--print-logs", "--log-level"]
    assert argv[6:] == ["ERROR", "do it"]
    offline = "Cannot connect to API: Unable to connect. Is the computer able to access the url?"
    shown = stderr(
        "opencode",
        OPENCODE_LOG.format(f"{offline} (cause: Error: Unable to connect.)")
        + OPENCODE_LOG.format('upstream \\"exploded\\"')
        + 'timestamp=x level=ERROR run=1 message=process error="boom" stack="at y"\n'
        + 'timestamp=x level=ERROR run=1 message="something else"\n'
        + "a line of its own\n",
    )
    assert shown == [
        ApiRetry(1, None, offline, offline=True),
        ApiRetry(2, None, 'upstream "exploded"', offline=False),  # an answer, without a status
        b'timestamp=x level=ERROR run=1 message="something else"\n',
        b"a line of its own\n",
    ]


GEMINI_STDERR = """Warning: 256-color support not detected. Using a terminal with 256 colours.
YOLO mode is enabled. All tool calls will be automatically approved.
Ripgrep is not available. Falling back to GrepTool.
Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request
    at file:///gemini/bundle/chunk-JDPZ4CE3.js:267671:13
    at async retryWithBackoff (file:///gemini/bundle/chunk-JDPZ4CE3.js:308039:23)
Attempt 2 failed with status 500. Retrying with backoff... _ApiError: {"error":{"code":500}}
  status: 500
}
Error generating content via API. Full report available at: /tmp/report.json
    at async Models.generateContent (file:///gemini/bundle/chunk-JDPZ4CE3.js:268643:16)
Error when talking to Gemini API Full report available at: /tmp/r.json _ApiError: {"error":{
  status: 401
}
(node:7) MaxListenersExceededWarning: Possible EventTarget memory leak detected.
    at emitWarning (node:internal/process/warning:1:1)
}
"""


def test_gemini_s_retries_are_events_and_its_stack_traces_and_banners_are_not_shown() -> None:
    assert stderr("gemini", GEMINI_STDERR) == [
        ApiRetry(1, None, "exception TypeError: fetch failed sending request", offline=True),
        ApiRetry(2, 500, 'with status 500 _ApiError: {"error":{"code":500}}', offline=False),
        b"(node:7) MaxListenersExceededWarning: Possible EventTarget memory leak detected.\n",
        b"}\n",  # a brace that closes no message of gemini's is the agent's to show
    ]


def test_gemini_runs_as_one_process_so_a_signal_to_it_stops_it(tmp_path: Path) -> None:
    """Without the variable it starts itself again as a child and ignores SIGINT and SIGTERM
    in the parent, which is all Docker's init signals."""
    env = agents.get("gemini").setup(tmp_path, {})
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"


def test_a_custom_openai_endpoint_without_a_model_is_warned_about_at_launch() -> None:
    custom = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}
    [codex] = agents.get("codex").warnings(custom)
    assert "OPENAI_MODEL is not" in codex
    assert "set OPENAI_MODEL to a model the endpoint serves" in codex
    [opencode] = agents.get("opencode").warnings(custom)
    assert "the model gpt-5" in opencode  # what ralph's configuration then names
    assert agents.get("codex", {"OPENAI_MODEL": "m-1"}).warnings(custom) == []
    assert agents.get("codex").warnings({}) == []  # OpenAI's own endpoint knows its models
    assert agents.get("claude").warnings(custom) == []
    assert agents.get("gemini").warnings({"GOOGLE_GEMINI_BASE_URL": "http://x"}) == []

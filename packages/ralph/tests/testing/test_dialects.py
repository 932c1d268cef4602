"""One scenario, four dialects: each API's requests read into the engine and its replies,
streams, usage and errors in that API's own shape, over real HTTP to the scripted server."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import ScenarioError, parse_scenario

# Text with a neutral shell call, then a step that only plays when the call's output matches.
SCRIPT = [
    {"text": "Writing.", "shell": "echo hi > f && wc -c f"},
    {"when": {"result": r"(?P<size>\d+) f"}, "text": "It has {{size}} bytes."},
]


def post(
    server: ModelServer, path: str, payload: dict[str, Any]
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def data_lines(raw: bytes) -> list[Any]:
    """The decoded `data:` payloads of an SSE stream ("[DONE]" kept as a string)."""
    found: list[Any] = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            found.append(data if data == "[DONE]" else json.loads(data))
    return found


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(parse_scenario(SCRIPT)) as running:
        yield running


# --- OpenAI Responses (codex) ---------------------------------------------------------------

RESPONSES_TOOLS = [{"type": "function", "name": "exec_command", "parameters": {}}]


def responses_body(*items: dict[str, Any], stream: bool = True) -> dict[str, Any]:
    opening = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>\n<cwd>/w</cwd>"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
    ]
    return {
        "model": "m",
        "input": [*opening, *items],
        "tools": RESPONSES_TOOLS,
        "stream": stream,
        "prompt_cache_key": "thread-1",
    }


def test_responses_streams_the_shell_call_as_exec_command_and_reads_its_output(
    server: ModelServer,
) -> None:
    status, headers, raw = post(server, "/v1/responses", responses_body())
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events = data_lines(raw)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Writing."
    items = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    call = items[1]
    assert (call["type"], call["name"]) == ("function_call", "exec_command")
    assert json.loads(call["arguments"]) == {"cmd": "echo hi > f && wc -c f"}
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens"] == 10
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]

    answered = responses_body(
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "Output:\n3 f\n"},
        stream=False,
    )
    status, _, raw = post(server, "/v1/responses", answered)
    output = json.loads(raw)["output"]
    assert output[0]["content"][0]["text"] == "It has 3 bytes."
    assert [r.session for r in server.main_requests()] == ["thread-1", "thread-1"]


# --- OpenAI chat completions (opencode) -----------------------------------------------------

CHAT_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]


def chat_body(*messages: dict[str, Any], stream: bool = True) -> dict[str, Any]:
    opening = [
        {"role": "system", "content": "Working directory: /w"},
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
    ]
    body: dict[str, Any] = {"model": "m", "messages": [*opening, *messages], "tools": CHAT_TOOLS}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


def test_chat_streams_the_shell_call_as_bash_and_ends_with_usage_and_done(
    server: ModelServer,
) -> None:
    status, _, raw = post(server, "/v1/chat/completions", chat_body())
    assert status == 200
    chunks = data_lines(raw)
    assert chunks[-1] == "[DONE]"
    deltas = [c["choices"][0]["delta"] for c in chunks[:-2]]
    assert "".join(d.get("content", "") for d in deltas) == "Writing."
    calls = [call for d in deltas for call in d.get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "bash"
    arguments = "".join(call["function"]["arguments"] for call in calls)
    assert json.loads(arguments) == {"command": "echo hi > f && wc -c f"}
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-2]["choices"] == []
    assert chunks[-2]["usage"]["prompt_tokens"] == 10

    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    answered = chat_body(
        {"role": "assistant", "content": "Writing.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "3 f\n"},
        stream=False,
    )
    status, _, raw = post(server, "/v1/chat/completions", answered)
    reply = json.loads(raw)
    assert reply["choices"][0]["message"]["content"] == "It has 3 bytes."
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"]["completion_tokens"] > 0


def test_chat_without_tools_is_a_side_call(server: ModelServer) -> None:
    body = chat_body(stream=False)
    del body["tools"]
    _, _, raw = post(server, "/v1/chat/completions", body)
    assert json.loads(raw)["choices"][0]["message"]["content"] == "OK"
    assert server.main_requests() == []


# --- Gemini API (gemini-cli) ----------------------------------------------------------------

GEMINI_TOOLS = [{"functionDeclarations": [{"name": "run_shell_command"}]}]


def gemini_body(*contents: dict[str, Any]) -> dict[str, Any]:
    opening = {"role": "user", "parts": [{"text": "go"}]}
    return {"contents": [opening, *contents], "tools": GEMINI_TOOLS}


def test_gemini_streams_the_shell_call_as_run_shell_command(server: ModelServer) -> None:
    path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    status, _, raw = post(server, path, gemini_body())
    assert status == 200
    chunks = data_lines(raw)
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "Writing."
    call = next(p["functionCall"] for p in parts if "functionCall" in p)
    assert call == {"name": "run_shell_command", "args": {"command": "echo hi > f && wc -c f"}}
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["promptTokenCount"] == 10

    answered = gemini_body(
        {"role": "model", "parts": [{"functionCall": call}]},
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "run_shell_command",
                        "response": {"output": "3 f"},
                    }
                }
            ],
        },
    )
    status, _, raw = post(server, "/v1beta/models/gemini-x:generateContent", answered)
    reply = json.loads(raw)
    assert reply["candidates"][0]["content"]["parts"] == [{"text": "It has 3 bytes."}]
    assert reply["usageMetadata"]["totalTokenCount"] > 10


def test_a_gemini_side_call_that_wants_json_gets_what_its_schema_accepts(
    server: ModelServer,
) -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "reasoning": {"type": "STRING"},
            "score": {"type": "INTEGER"},
            "next_speaker": {"type": "STRING", "enum": ["user", "model"]},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
        },
    }
    body = {
        "contents": [{"role": "user", "parts": [{"text": "classify"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema},
    }
    _, _, raw = post(server, "/v1beta/models/lite:generateContent", body)
    text = json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"reasoning": "OK", "score": 1, "next_speaker": "user", "tags": []}
    assert server.main_requests() == []


# --- Anthropic Messages (Claude Code) -------------------------------------------------------


def test_anthropic_maps_the_shell_call_to_bash(server: ModelServer) -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": "Bash"}],
    }
    _, _, raw = post(server, "/v1/messages", body)
    blocks = json.loads(raw)["content"]
    assert blocks[1] == {
        "type": "tool_use",
        "id": blocks[1]["id"],
        "name": "Bash",
        "input": {"command": "echo hi > f && wc -c f"},
    }


# --- errors ---------------------------------------------------------------------------------

LIMITED = [{"rate_limit": {"reset_in": 7, "message": "slow down"}}, {"http_error": 503}]


@pytest.mark.parametrize(
    ("path", "body", "error"),
    [
        (
            "/v1/responses",
            responses_body(stream=False),
            {
                "message": "slow down",
                "type": "rate_limit_exceeded",
                "param": None,
                "code": "rate_limit_exceeded",
            },
        ),
        (
            "/v1/chat/completions",
            chat_body(stream=False),
            {
                "message": "slow down",
                "type": "rate_limit_exceeded",
                "param": None,
                "code": "rate_limit_exceeded",
            },
        ),
        (
            "/v1beta/models/g:streamGenerateContent",
            gemini_body(),
            {
                "code": 429,
                "message": "slow down",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
                ],
            },
        ),
    ],
)
def test_a_rate_limit_is_a_429_in_each_api_s_error_shape(
    path: str, body: dict[str, Any], error: dict[str, Any]
) -> None:
    with ModelServer(parse_scenario(LIMITED)) as server:
        status, headers, raw = post(server, path, body)
        assert (status, headers["retry-after"], json.loads(raw)) == (429, "7", {"error": error})
        assert not any(name.startswith("anthropic-") for name in headers)
        status, _, raw = post(server, path, body)
        assert status == 503
        assert json.loads(raw)["error"]["message"] == "Scripted HTTP 503"


def test_a_shell_step_needs_a_command_line() -> None:
    with pytest.raises(ScenarioError, match="step 0: `shell` takes the command line"):
        parse_scenario([{"shell": ["ls"]}])


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/messages", {"messages": "x", "tools": [1], "system": 5}),
        ("/v1/responses", {"input": [{"type": "function_call_output", "output": 7}], "tools": [1]}),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "assistant", "tool_calls": [{"function": "x"}]}], "tools": [1]},
        ),
        (
            "/v1beta/models/m:generateContent",
            {"contents": [{"parts": [{"functionResponse": 3}]}], "generationConfig": []},
        ),
    ],
)
def test_a_malformed_body_still_gets_an_answer(path: str, body: dict[str, Any]) -> None:
    with ModelServer(parse_scenario([{"text": "fine"}])) as server:
        status, _, _ = post(server, path, body)
    assert status == 200

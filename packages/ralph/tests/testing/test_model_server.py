"""The scripted Messages API server: wire format, scenario engine, life cycle, real CLI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import ScenarioError, load_scenario, parse_scenario

FIXTURES = Path(__file__).parents[1] / "fixtures" / "stream"
TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


def body(
    *turns: dict[str, Any], tools: bool = True, stream: bool = True, prompt: str = "go"
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": prompt}]},
        *turns,
    ]
    request: dict[str, Any] = {"model": "claude-test", "max_tokens": 100, "messages": messages}
    if tools:
        request["tools"] = TOOLS
    if stream:
        request["stream"] = True
    return request


def tool_turn(result: str, tool_id: str = "toolu_1") -> tuple[dict[str, Any], dict[str, Any]]:
    """An assistant tool call and the user message carrying its result."""
    return (
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "x"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": result}],
        },
    )


def post(
    server: ModelServer, payload: dict[str, Any], *, session: str = "s1", path: str = "/v1/messages"
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "X-Claude-Code-Session-Id": session},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    events = []
    for chunk in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
        if "data" in lines:
            data = json.loads(lines["data"])
            assert data["type"] == lines["event"]
            events.append(data)
    return events


def assembled(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rebuild content blocks from SSE deltas the way an SDK client does."""
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for event in events:
        if event["type"] == "content_block_start":
            blocks.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                blocks[event["index"]]["text"] += delta["text"]
            else:
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text)
    return blocks


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[ModelServer] = []

    def start(raw: object, **kwargs: Any) -> ModelServer:
        server = ModelServer(parse_scenario(raw), **kwargs).start()
        started.append(server)
        return server

    threads_before = threading.active_count()
    yield start
    for server in started:
        server.stop()
    # A handler thread sends its last byte before it ends: wait for it, with a deadline.
    deadline = time.monotonic() + 5
    while threading.active_count() > threads_before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= threads_before


def test_streams_text_and_tool_use_as_sse_events(serve: Any) -> None:
    server = serve([{"text": "Let me look.", "tool": "Bash", "input": {"command": "ls -la"}}])
    status, headers, raw = post(server, body())
    events = sse_events(raw)
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    assert [e["type"] for e in events] == [
        "message_start",
        *["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"]
        * 2,
        "message_delta",
        "message_stop",
    ]
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    text, tool = assembled(events)
    assert text == {"type": "text", "text": "Let me look."}
    assert tool["name"] == "Bash"
    assert tool["input"] == {"command": "ls -la"}
    assert tool["id"].startswith("toolu_")


def test_answers_without_stream_as_one_json_message(serve: Any) -> None:
    server = serve([{"text": "plain"}])
    status, _, raw = post(server, body(stream=False))
    message = json.loads(raw)
    assert status == 200
    assert message["content"] == [{"type": "text", "text": "plain"}]
    assert message["stop_reason"] == "end_turn"


def test_side_calls_get_a_short_text_and_leave_the_script_alone(serve: Any) -> None:
    server = serve({"side_reply": "Title", "steps": [{"text": "first"}, {"text": "second"}]})
    _, _, side = post(server, body(tools=False, stream=False))
    _, _, main = post(server, body(stream=False))
    assert json.loads(side)["content"][0]["text"] == "Title"
    assert json.loads(main)["content"][0]["text"] == "first"
    assert [r.kind for r in server.requests] == ["side", "main"]


def test_when_branches_on_the_last_tool_result_and_captures_variables(serve: Any) -> None:
    server = serve(
        [
            {"tool": "Bash", "input": {"command": "pn claim-next --json"}},
            {"when": {"result": "^null"}, "text": "nothing to do", "goto": "end"},
            {
                "when": {"result": '"id": "(?P<task>[^"]+)"'},
                "tool": "Bash",
                "input": {"command": "pn close {{task}}"},
            },
            {"label": "end", "text": "done {{task}}"},
        ]
    )
    post(server, body(), session="a")
    _, _, raw = post(server, body(*tool_turn('{"id": "pn-12ab"}')), session="a")
    assert assembled(sse_events(raw))[0]["input"] == {"command": "pn close pn-12ab"}
    _, _, raw = post(server, body(*tool_turn("x"), *tool_turn("closed", "t2")), session="a")
    assert assembled(sse_events(raw))[0]["text"] == "done pn-12ab"

    post(server, body(), session="b")
    _, _, raw = post(server, body(*tool_turn("null")), session="b")
    assert assembled(sse_events(raw))[0]["text"] == "nothing to do"
    _, _, raw = post(server, body(*tool_turn("null"), *tool_turn("y", "t2")), session="b")
    assert assembled(sse_events(raw))[0]["text"] == "done {{task}}"


def test_a_fresh_conversation_starts_its_script_from_the_top(serve: Any) -> None:
    server = serve([{"text": "one"}, {"text": "two"}])
    texts = []
    for session in ("a", "b"):
        _, _, raw = post(server, body(stream=False), session=session)
        texts.append(json.loads(raw)["content"][0]["text"])
    assert texts == ["one", "one"]


def test_scripts_are_chosen_by_prompt(serve: Any) -> None:
    server = serve(
        {
            "scripts": [
                {"name": "plan", "prompt": "issues", "steps": [{"text": "planning"}]},
                {"name": "build", "steps": [{"text": "building"}]},
            ]
        }
    )
    _, _, plan = post(server, body(prompt="triage issues", stream=False), session="a")
    _, _, build = post(server, body(prompt="build it", stream=False), session="b")
    assert json.loads(plan)["content"][0]["text"] == "planning"
    assert json.loads(build)["content"][0]["text"] == "building"


def test_an_http_error_with_times_meets_the_retries_then_lets_them_through(serve: Any) -> None:
    server = serve([{"http_error": 529, "times": 2, "retry_after": 0}, {"text": "ok"}])
    results = [post(server, body(stream=False)) for _ in range(3)]
    assert [status for status, _, _ in results] == [529, 529, 200]
    assert results[0][1]["retry-after"] == "0"
    assert json.loads(results[0][2])["error"]["type"] == "overloaded_error"
    _, _, again = post(server, body(stream=False), session="new")
    assert json.loads(again)["content"][0]["text"] == "ok"


def test_a_rate_limit_step_sends_unified_rejected_headers(serve: Any) -> None:
    server = serve([{"rate_limit": {"reset_in": 60}, "times": 1}, {"text": "ok"}])
    before = int(time.time())
    status, headers, raw = post(server, body())
    assert status == 429
    assert headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert before + 59 <= int(headers["anthropic-ratelimit-unified-reset"]) <= before + 61
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"
    status, _, _ = post(server, body(), session="rerun")
    assert status == 200


def test_utilization_adds_allowed_usage_headers(serve: Any) -> None:
    server = serve({"utilization": 0.5, "steps": [{"text": "ok"}]})
    _, headers, _ = post(server, body())
    assert headers["anthropic-ratelimit-unified-status"] == "allowed"
    assert headers["anthropic-ratelimit-unified-5h-utilization"] == "0.5"


def test_input_tokens_set_the_usage_every_reply_reports(serve: Any) -> None:
    server = serve({"input_tokens": 400, "steps": [{"text": "ok"}]})
    _, _, raw = post(server, body())
    [start] = [e for e in sse_events(raw) if e["type"] == "message_start"]
    assert start["message"]["usage"]["input_tokens"] == 400
    _, _, raw = post(server, body(stream=False), session="s2")
    assert json.loads(raw)["usage"]["input_tokens"] == 400


def test_past_the_end_it_says_the_final_text(serve: Any) -> None:
    server = serve({"final_text": "bye", "steps": [{"text": "only"}]})
    post(server, body())
    _, _, raw = post(server, body(*tool_turn("x")))
    assert assembled(sse_events(raw))[0]["text"] == "bye"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/hello", 200),
        ("HEAD", "/api/hello", 200),
        ("GET", "/v1/models", 200),
        ("GET", "/api/oauth/profile", 404),
        ("POST", "/api/event_logging/batch", 404),
    ],
)
def test_other_routes_get_harmless_json(serve: Any, method: str, path: str, status: int) -> None:
    server = serve([{"text": "x"}])
    request = urllib.request.Request(
        server.url + path, method=method, data=b"{}" if method == "POST" else None
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            got, raw = response.status, response.read()
    except urllib.error.HTTPError as e:
        got, raw = e.code, e.read()
    assert got == status
    if method != "HEAD":
        json.loads(raw)
    assert server.requests[-1].kind == "other"


def test_count_tokens_answers_a_number(serve: Any) -> None:
    server = serve([{"text": "x"}])
    status, _, raw = post(server, body(), path="/v1/messages/count_tokens")
    assert status == 200
    assert json.loads(raw)["input_tokens"] > 0


def test_records_every_request_as_json_lines(serve: Any, tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    server = serve([{"text": "x"}], record=record)
    post(server, body(tools=False))
    post(server, body())
    server.stop()
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(line["kind"], line["status"], line["step"]) for line in lines] == [
        ("side", 200, None),
        ("main", 200, 0),
    ]
    assert lines[1]["body"]["messages"][0]["content"][0]["text"] == "go"


def test_binds_loopback_only_and_frees_the_port_when_stopped() -> None:
    with ModelServer(parse_scenario([{"text": "x"}])) as server:
        assert server.url.startswith("http://127.0.0.1:")
        port = server.port
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"steps": [{}]}, "needs text"),
        ({"steps": [{"text": "x", "goto": "nowhere"}]}, "no step is labelled"),
        ({"steps": [{"text": "x", "when": {"result": "("}}]}, "bad regex"),
        ({"steps": [{"text": "x", "when": {"other": "x"}}]}, "`when` takes"),
        ("nope", "expected an object"),
        ({"input_tokens": -1, "steps": [{"text": "x"}]}, "input_tokens must be a whole number"),
        ({"input_tokens": "many", "steps": [{"text": "x"}]}, "input_tokens must be"),
    ],
)
def test_bad_scenarios_are_refused_with_the_reason(raw: object, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(raw)


def test_every_committed_scenario_parses() -> None:
    scenarios = sorted(FIXTURES.glob("*.scenario.json"))
    assert scenarios
    for path in scenarios:
        load_scenario(path)


@pytest.mark.process
def test_runs_as_a_process_until_sigterm(tmp_path: Path, wait_for: Callable[..., None]) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps([{"text": "from a process"}]))
    ready, record = tmp_path / "ready", tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ralph.testing.model_server",
            "--scenario",
            str(scenario),
            "--port",
            "0",
            "--ready-file",
            str(ready),
            "--record",
            str(record),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_for(ready.exists, 15, "the ready file")
        url = ready.read_text().strip()
        request = urllib.request.Request(
            url + "/v1/messages", data=json.dumps(body(stream=False)).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert "from a process" in response.read().decode()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    assert not ready.exists()
    assert json.loads(record.read_text().splitlines()[0])["kind"] == "main"


def run_claude(claude: Path, server: ModelServer, cwd: Path, **env: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [
            str(claude),
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
        ],
        input=b"Follow the script.\n",
        cwd=cwd,
        env={
            "PATH": os.environ["PATH"],
            "HOME": os.environ["HOME"],
            "IS_SANDBOX": "1",
            "ANTHROPIC_BASE_URL": server.url,
            **env,
        },
        capture_output=True,
        timeout=120,
        check=False,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith(b"{")]


@pytest.mark.claude
def test_the_real_cli_runs_a_tool_scenario_to_a_result(claude_bin: Path, tmp_path: Path) -> None:
    scenario = parse_scenario(
        [
            {"tool": "Write", "input": {"file_path": "{{cwd}}/hello.txt", "content": "hi\n"}},
            {"tool": "Bash", "input": {"command": "cat hello.txt"}},
            {"text": "wrote it"},
        ]
    )
    with ModelServer(scenario) as server:
        events = run_claude(claude_bin, server, tmp_path, ANTHROPIC_API_KEY="sk-test")
        main = server.main_requests()
    assert (tmp_path / "hello.txt").read_text() == "hi\n"
    assert [r.step for r in main] == [0, 1, 2]
    assert events[-1]["type"] == "result"
    assert events[-1]["is_error"] is False
    assert events[-1]["result"] == "wrote it"


@pytest.mark.claude
def test_the_real_cli_reports_a_rejected_usage_limit(claude_bin: Path, tmp_path: Path) -> None:
    with ModelServer(parse_scenario([{"rate_limit": {"reset_in": 120}}])) as server:
        events = run_claude(claude_bin, server, tmp_path, CLAUDE_CODE_OAUTH_TOKEN="sk-ant-oat01-x")
    limits = [e for e in events if e["type"] == "rate_limit_event"]
    assert limits[-1]["rate_limit_info"]["status"] == "rejected"
    assert limits[-1]["rate_limit_info"]["resetsAt"] > time.time() + 100
    assert events[-1]["api_error_status"] == 429


def test_a_prompt_no_script_claims_gets_the_final_text(serve: Any) -> None:
    server = serve(
        {
            "final_text": "not mine",
            "scripts": [{"name": "plan", "prompt": "^plan", "steps": [{"text": "planning"}]}],
        }
    )
    _, _, raw = post(server, body(prompt="build", stream=False))
    assert json.loads(raw)["content"][0]["text"] == "not mine"
    assert server.requests[-1].kind == "unscripted"


def test_cwd_comes_from_the_environment_block(serve: Any) -> None:
    server = serve([{"tool": "Read", "input": {"file_path": "{{cwd}}/a.txt"}}])
    request = body(stream=False)
    request["messages"].append(
        {"role": "system", "content": [{"type": "text", "text": "Primary working directory: /w/p"}]}
    )
    _, _, raw = post(server, request)
    assert json.loads(raw)["content"][0]["input"] == {"file_path": "/w/p/a.txt"}


def test_without_a_session_header_the_prompt_identifies_the_conversation(serve: Any) -> None:
    server = serve([{"text": "one"}, {"text": "two"}])
    texts = []
    for turns in ((), tool_turn("x"), ()):
        _, _, raw = post(server, body(*turns, stream=False), session="")
        texts.append(json.loads(raw)["content"][0]["text"])
    assert texts == ["one", "two", "one"]


def test_a_delayed_step_answers_late_and_stop_cuts_the_wait(
    serve: Any, wait_for: Callable[..., None]
) -> None:
    server = serve([{"text": "slow", "delay": 0.3}, {"text": "slower", "delay": 60}])
    started = time.monotonic()
    post(server, body())
    assert time.monotonic() - started >= 0.3
    worker = threading.Thread(target=post, args=(server, body(*tool_turn("x"))))
    worker.start()
    wait_for(lambda: server.engine.played("main", 1) == 1, 10, "the slow step to start")
    started = time.monotonic()
    server.stop()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert time.monotonic() - started < 5


def test_an_http_error_without_retry_after_sends_no_such_header(serve: Any) -> None:
    server = serve([{"http_error": 500}])
    status, headers, raw = post(server, body())
    assert status == 500
    assert "retry-after" not in {k.lower() for k in headers}
    assert json.loads(raw)["error"] == {"type": "api_error", "message": "Scripted HTTP 500"}


def test_a_messages_post_that_is_not_json_is_another_route(serve: Any) -> None:
    server = serve([{"text": "x"}])
    request = urllib.request.Request(server.url + "/v1/messages", data=b"not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    raised.value.close()
    assert raised.value.code == 404
    assert server.requests[-1].body == "not json"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"steps": [{"tool": "Bash", "input": "ls"}]}', "tool input must be an object"),
        ('{"steps": [{"tools": [{"input": {}}]}]}', "needs a name"),
        ('{"scripts": [{"name": "x"}]}', "needs a list of steps"),
        ('{"steps": ["text"]}', "a step is an object"),
    ],
)
def test_bad_scenario_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=message):
        load_scenario(path)

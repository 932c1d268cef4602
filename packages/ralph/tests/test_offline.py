"""`ralph --scenario FILE`: the run plays FILE on a scripted model ralph starts itself, with a
credential it makes up; the user's own keys, endpoints and models never reach the agent."""

from __future__ import annotations

import json
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ralph import offline
from ralph.errors import UsageProblem

from .conftest import Run

HELLO = [{"text": "SCRIPTED-HELLO"}]
# A stand-in for `claude -p`: one Messages API turn with the credential and endpoint it was
# given, its answer printed as stream-json (or the HTTP status it got, as an error result).
AGENT = """\
import json, os, sys, urllib.error, urllib.request
prompt = sys.stdin.read()
body = {"model": "m", "messages": [{"role": "user", "content": prompt}],
        "tools": [{"name": "Bash"}]}
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["CLAUDE_CODE_OAUTH_TOKEN"],
             "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = json.load(answer)["content"][0]["text"]
        error = False
except urllib.error.HTTPError as e:
    text, error = f"HTTP {e.code}", True
print(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}))
print(json.dumps({"type": "result", "subtype": "success", "is_error": error, "result": text,
                  "num_turns": 1, "usage": {"input_tokens": 1, "output_tokens": 1}}))
"""


def scenario_file(tmp_path: Path, steps: object = HELLO) -> Path:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(steps))
    return path


def post(url: str, token: str) -> int:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"n": 1}]}
    request = urllib.request.Request(
        url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_the_environment_points_every_api_at_the_server_and_drops_the_users_own() -> None:
    host = {
        "PATH": "/bin",
        "ANTHROPIC_API_KEY": "sk-ant-api03-real",
        "ANTHROPIC_AUTH_TOKEN": "real",
        "ANTHROPIC_MODEL": "claude-opus",
        "ANTHROPIC_BASE_URL": "https://gateway.example",
        "OPENAI_API_KEY": "sk-real",
        "OPENAI_BASE_URL": "https://openai.example/v1",
        "GEMINI_API_KEY": "real",
        "GEMINI_MODEL": "gemini-pro",
    }
    env = offline.environment(host, "http://127.0.0.1:9", "sk-ant-oat01-made-up")
    assert env == {
        "PATH": "/bin",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-made-up",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "sk-ant-oat01-made-up",
        "OPENAI_MODEL": offline.OPENAI_MODEL,
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
        "GEMINI_API_KEY": "sk-ant-oat01-made-up",
    }


def test_the_server_takes_only_the_token_ralph_made_up_and_stops_with_the_block(
    tmp_path: Path,
) -> None:
    with offline.serve(scenario_file(tmp_path), {"CLAUDE_CODE_OAUTH_TOKEN": "mine"}) as env:
        url, token = env["ANTHROPIC_BASE_URL"], env["CLAUDE_CODE_OAUTH_TOKEN"]
        assert token.startswith(offline.TOKEN_PREFIX)
        assert token != "mine"
        assert post(url, token) == 200
        assert post(url, "mine") == 401
        port = int(url.rsplit(":", 1)[1])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "the scripted model is still up"


def test_each_run_makes_up_a_token_of_its_own(tmp_path: Path) -> None:
    path = scenario_file(tmp_path)
    with offline.serve(path, {}) as first, offline.serve(path, {}) as second:
        assert first["CLAUDE_CODE_OAUTH_TOKEN"] != second["CLAUDE_CODE_OAUTH_TOKEN"]


@pytest.mark.parametrize(
    ("content", "said"),
    [("{not json", "not JSON"), ('[{"when": {"result": "("}, "text": "x"}]', "bad regex")],
)
def test_a_scenario_that_is_no_scenario_is_one_line(
    tmp_path: Path, content: str, said: str
) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(content)
    with pytest.raises(UsageProblem, match=said), offline.serve(path, {}):
        pass


@pytest.mark.process
def test_ralph_plays_the_scenario_without_any_credential_of_the_users(
    ralph: Run, tmp_path: Path
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(f"#!{sys.executable}\n{AGENT}")
    agent.chmod(0o755)
    env = {
        "RALPH_COMMAND": str(agent),
        "ANTHROPIC_API_KEY": "sk-ant-api03-the-users-own",  # the server would refuse it
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",  # nothing listens there
    }
    done = ralph("-a", "--scenario", str(scenario_file(tmp_path)), "1", "say hello", env=env)
    assert done.returncode == 2, done.stdout + done.stderr  # one iteration, no sentinel
    assert "model: the scripted model playing" in done.stdout
    # the answer came from the scripted model, which takes no credential but ralph's
    assert "SCRIPTED-HELLO" in done.stdout


@pytest.mark.process
def test_a_missing_scenario_file_is_a_usage_error(ralph: Run, tmp_path: Path) -> None:
    done = ralph("-a", "--scenario", str(tmp_path / "nowhere.json"), "1", "x")
    assert done.returncode == 1
    assert "--scenario" in done.stderr
    assert "Traceback" not in done.stderr

"""What the agent sees of each credential and endpoint, and where each API family really goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralph.keyproxy import routes
from ralph.keyproxy.login import ClaudeLogin
from ralph.keyproxy.routes import Route

PROXY = "http://ralph-egress:8081"


def by_name(found: tuple[Route, ...]) -> dict[str, Route]:
    return {r.name: r for r in found}


def test_every_key_becomes_a_placeholder_and_every_endpoint_the_proxy() -> None:
    host = {
        "ANTHROPIC_API_KEY": "sk-ant-api03-real",
        "OPENAI_API_KEY": "sk-proj-real",
        "GEMINI_API_KEY": "AIzaReal",
        "OPENAI_BASE_URL": "http://127.0.0.1:9999/v1/",
    }
    planned = routes.plan(host)
    env = routes.agent_env(planned, PROXY)
    assert not set(env.values()) & {"sk-ant-api03-real", "sk-proj-real", "AIzaReal"}
    assert env["ANTHROPIC_BASE_URL"] == f"{PROXY}/anthropic"
    assert env["OPENAI_BASE_URL"] == f"{PROXY}/openai"
    assert env["GOOGLE_GEMINI_BASE_URL"] == f"{PROXY}/gemini"
    assert env["ANTHROPIC_API_KEY"].startswith("sk-ant-api03-ralph-placeholder-")
    assert env["OPENAI_API_KEY"].startswith("sk-proj-ralph-placeholder-")
    assert env["GEMINI_API_KEY"].startswith("ralph-placeholder-")
    found = by_name(planned)
    assert found["openai"].upstream == "http://127.0.0.1:9999/v1"
    assert found["anthropic"].upstream == "https://api.anthropic.com"
    assert found["gemini"].upstream == "https://generativelanguage.googleapis.com"


def test_placeholders_are_new_each_run_and_only_they_are_replaced() -> None:
    host = {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-real"}
    first, second = routes.plan(host), routes.plan(host)
    a = by_name(first)["anthropic"]
    b = by_name(second)["anthropic"]
    [credential] = a.credentials
    assert credential.variable == "CLAUDE_CODE_OAUTH_TOKEN"
    assert credential.placeholder.startswith("sk-ant-oat01-")  # claude's OAuth test still holds
    assert credential.placeholder != b.credentials[0].placeholder
    assert a.real(f"Bearer {credential.placeholder}") == "Bearer sk-ant-oat01-real"
    assert (
        a.real(f"Bearer {b.credentials[0].placeholder}") == f"Bearer {b.credentials[0].placeholder}"
    )
    assert a.secrets() == ["sk-ant-oat01-real"]


def login_file(path: Path, access: str = "sk-ant-oat01-login") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"claudeAiOauth": {"accessToken": access, "refreshToken": "r"}}))
    return path


def test_a_login_is_used_only_without_a_key_or_token(tmp_path: Path) -> None:
    login = ClaudeLogin(login_file(tmp_path / ".claude" / ".credentials.json"))
    [alone] = by_name(routes.plan({}, login=login))["anthropic"].credentials
    assert alone.variable == "CLAUDE_CODE_OAUTH_TOKEN"
    assert alone.source is login
    [key] = by_name(routes.plan({"ANTHROPIC_API_KEY": "k" * 20}, login=login))[
        "anthropic"
    ].credentials
    assert key.variable == "ANTHROPIC_API_KEY"


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"claudeAiOauth": {}}'])
def test_a_file_without_a_login_gives_no_credential(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".credentials.json"
    path.write_text(text)
    assert by_name(routes.plan({}, login=ClaudeLogin(path)))["anthropic"].credentials == ()


def test_the_login_lives_in_the_config_dir_or_home(tmp_path: Path) -> None:
    assert routes.host_login({"HOME": str(tmp_path)}) == tmp_path / ".claude" / ".credentials.json"
    other = tmp_path / "cfg"
    assert routes.host_login({"CLAUDE_CONFIG_DIR": str(other)}) == other / ".credentials.json"

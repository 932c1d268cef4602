"""Only the non-secret credential settings pass through to the container as they are."""

from __future__ import annotations

from ralph import credentials


def test_only_endpoints_and_models_pass_through() -> None:
    host = {
        "ANTHROPIC_API_KEY": "k",
        "CLAUDE_CODE_OAUTH_TOKEN": "t",
        "ANTHROPIC_AUTH_TOKEN": "b",
        "OPENAI_API_KEY": "o",
        "GEMINI_API_KEY": "g",
        "ANTHROPIC_BASE_URL": "http://m",
        "ANTHROPIC_MODEL": "",
        "GEMINI_MODEL": "gemini-2.5-flash",
        "PATH": "/bin",
    }
    assert credentials.plain(host) == {
        "ANTHROPIC_BASE_URL": "http://m",
        "GEMINI_MODEL": "gemini-2.5-flash",
    }

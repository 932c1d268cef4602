"""The agent's `.claude.json`: first-run screens done, the host's preferences kept, no secrets."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ralph import claude_home

PROJECT = Path("/work/project")


def test_a_fresh_home_gets_onboarding_done_theme_and_trust() -> None:
    config = claude_home.onboarded(None, project=PROJECT)
    assert config == {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "bypassPermissionsModeAccepted": True,
        "autoUpdates": False,
        "projects": {
            str(PROJECT): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        },
    }


def test_only_the_hosts_preferences_carry_over() -> None:
    host = {
        "theme": "light",
        "editorMode": "vim",
        "hasCompletedOnboarding": False,
        "oauthAccount": {"emailAddress": "dev@example.com", "accountUuid": "u-1"},
        "primaryApiKey": "sk-ant-secret",
        "customApiKeyResponses": {"approved": ["secret"]},
        "projects": {str(PROJECT): {"allowedTools": ["Bash"]}, "/other": {"history": ["x"]}},
    }
    config = claude_home.onboarded(json.dumps(host), project=PROJECT)
    assert (config["theme"], config["editorMode"]) == ("light", "vim")
    assert config["hasCompletedOnboarding"] is True
    assert config["projects"] == {
        str(PROJECT): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    }
    written = json.dumps(config)
    for secret in ("dev@example.com", "sk-ant-secret", "approved", "/other", "allowedTools"):
        assert secret not in written


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"projects": 3}', ""])
def test_an_unreadable_host_config_is_replaced(text: str) -> None:
    config = claude_home.onboarded(text, project=PROJECT)
    assert config["hasCompletedOnboarding"] is True
    assert isinstance(config["projects"], dict)


def test_write_creates_a_private_file_in_the_run_home(tmp_path: Path) -> None:
    host, home = tmp_path / "host", tmp_path / "run-home"
    host.mkdir()
    home.mkdir()
    (host / ".claude.json").write_text('{"theme": "light-daltonized"}')
    written = claude_home.write(home, host_home=host, project=PROJECT)
    assert written == home / ".claude.json"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert json.loads(written.read_text())["theme"] == "light-daltonized"
    no_host = claude_home.write(home, host_home=tmp_path / "nobody", project=PROJECT)
    assert json.loads(no_host.read_text())["theme"] == "dark"

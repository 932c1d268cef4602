"""The agent's `.claude.json`: first-run screens done, the host's settings kept, no secrets."""

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
        "projects": {
            str(PROJECT): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        },
    }


def test_the_hosts_settings_carry_over() -> None:
    host = {
        "theme": "light",
        "hasCompletedOnboarding": False,
        "projects": {str(PROJECT): {"allowedTools": ["Bash"]}, "/other": {"x": 1}},
    }
    config = claude_home.onboarded(json.dumps(host), project=PROJECT)
    assert config["theme"] == "light"
    assert config["hasCompletedOnboarding"] is True
    projects = config["projects"]
    assert isinstance(projects, dict)
    assert projects["/other"] == {"x": 1}
    assert projects[str(PROJECT)]["allowedTools"] == ["Bash"]
    assert projects[str(PROJECT)]["hasTrustDialogAccepted"] is True


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

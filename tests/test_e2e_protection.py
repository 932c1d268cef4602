"""End to end: an agent that tries to rewrite its own prompt and backpressure cannot."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import scenario, tool_results

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]
PROTECTED = (".sgf/prompts/build.md", ".sgf/backpressure.md")


def test_agent_cannot_edit_prompts_or_backpressure(project: Project, model: Model) -> None:
    before = {name: (project.root / name).read_bytes() for name in PROTECTED}
    server = model(scenario("protection"))

    done = project.sgf("build", "-a", "1")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert {name: (project.root / name).read_bytes() for name in PROTECTED} == before
    assert project.run("git", "status", "--porcelain", "--", ".sgf").stdout == ""
    results = {command: text for _, command, text in tool_results(server.requests)}
    assert "Hacked" not in (project.root / ".sgf/prompts/build.md").read_text()
    # Claude Code's deny rules refuse the file tools; the read-only mount stops the shell.
    assert "updated successfully" not in results["Edit"]
    assert "File created successfully" not in results["Write"]
    assert project.pid_files() == []
    assert project.containers() == []


def test_agent_cannot_plant_a_notifier(project: Project, model: Model) -> None:
    """The `notify` command runs on the host: the agent must not choose it for the next run."""
    config = project.root / ".sgf/config.toml"
    before = config.read_bytes()
    server = model(scenario("notify-plant"))

    done = project.sgf("build", "-a", "1")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (tried,) = [text for _, command, text in tool_results(server.requests) if "PLANTED" in command]
    assert config.read_bytes() == before, tried
    assert not config.is_symlink()
    assert "notify" not in config.read_text()
    assert not (project.root / "PLANTED").exists()
    assert project.pid_files() == []
    assert project.containers() == []

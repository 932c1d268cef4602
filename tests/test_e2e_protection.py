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

"""End to end, real Docker: a `--parallel` group's budget is summed from run records no agent
can write. A hostile agent appends forged spending to every record it can name; the group
runs to its end, unstopped, and the records hold only what ralph wrote."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import scenario

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]


def test_an_agent_cannot_forge_the_spending_a_group_budget_sums(
    project: Project, model: Model
) -> None:
    model(scenario("forge-records"))

    done = project.sgf("build", "-a", "--no-push", "--parallel", "2", "--max-cost", "50", "3")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "budget reached" not in done.stderr
    runs = project.root / ".sgf" / "runs"
    assert not (runs / "forged.jsonl").exists()
    for record in runs.glob("*.jsonl"):
        for line in record.read_text().splitlines():
            event = json.loads(line)
            assert event.get("cost") != 1000, f"{record.name}: {line}"
    assert project.pid_files() == []
    assert project.containers() == []

"""End to end, real Docker: a `--parallel` group's budget. It is summed from run records no
agent can write (a hostile agent's forged spending stops nothing), and once reached it stops
each loop after the iteration it is in, that iteration's work landed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import scenario, scenario_json

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(900)]

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


def told(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# Repeated: the group's stop once raced the loops' landings (a signal killed `pn sync` inside
# one, and a task stayed closed while its commit sat on the loop's branch).
@pytest.mark.parametrize("run", range(5))
def test_a_group_budget_stops_every_loop_after_it_landed_its_iteration(
    project: Project, model: Model, wait_for: Callable[..., None], run: int
) -> None:
    for n in range(8):
        project.create_task(f"task {n}")
    project.commit_all("chore: seed tasks")
    played = scenario_json("build-loop")
    played["input_tokens"] = 1500  # each turn costs Claude Code's pricing of that: ~$0.0075
    model(played)
    events = project.root.parent / "events.jsonl"

    done = project.sgf(
        "build", "-a", "10", "--parallel", "2", "--max-cost", "0.05",
        "--notify", f"cat >> {events}", timeout=600,
    )  # fmt: skip

    said = done.stdout + done.stderr
    assert done.returncode == 2, said[-4000:]
    assert "Traceback" not in said
    loop_ids = re.findall(r"sgf: \[\d\] (build-\d{8}T\d{6}) \(log", done.stderr)
    assert len(loop_ids) == 2, done.stderr
    status = json.loads(project.run("sgf", "status", "--json").stdout)
    reasons = {r["loop_id"]: r.get("stop_reason") for r in status["recent"]}
    for loop_id in loop_ids:
        [end] = [e for e in record(project, loop_id) if e["event"] == "end"]
        reason = str(end["stop_reason"])
        assert end["exit"] == 2, end
        assert reason.startswith("budget reached: group budget $0.0500 for 2 loops"), reason
        assert f"{loop_id}: {reason}; work may remain" in done.stderr  # sgf's words
        assert reasons[loop_id] == reason  # sgf status
        log = (project.root / ".sgf" / "logs" / f"{loop_id}.log").read_text()
        assert f"stopped: {reason}" in log  # ralph's own totals line
        assert "Traceback" not in log
        assert "Interrupted" not in log
    # every closed task's commit reached the branch; nothing waits on a loop's branch
    subjects = project.git("log", "--format=%s", "main").splitlines()
    closed = [i for i, issue in project.issues().items() if issue["status"] == "closed"]
    assert closed, said[-4000:]
    for task in closed:
        assert f"[{task}] implement" in subjects, (task, subjects)
    assert project.git("branch", "--list", "sgf/*") == ""
    assert project.pn("list", "--status", "in_progress") == []  # every claim given back
    wait_for(lambda: len(told(events)) >= 4, 60, "a budget and an end event per loop")
    budgets = sorted(e["loop_id"] for e in told(events) if e["event"] == "budget")
    assert budgets == sorted(loop_ids)
    notify_log = project.root / ".sgf" / "logs" / "notify.log"
    assert "Traceback" not in (notify_log.read_text() if notify_log.exists() else "")
    assert project.pid_files() == []
    assert project.containers() == []


def record(project: Project, loop_id: str) -> list[dict[str, Any]]:
    path = project.root / ".sgf" / "runs" / f"{loop_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]

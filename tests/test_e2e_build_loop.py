"""End to end: `sgf build` drives ralph, the real claude CLI in the sandbox image, and pn.

The model is the scripted server (tests/scenarios); everything else is real: dockerd, the
`springfield-sandbox` image built by `sgf sandbox build`, git with a bare remote.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import claimed, scenario, scenario_json
from tests.e2e_harness.tracker import committed_issues, touches_issues

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]


def assert_clean_exit(project: Project) -> None:
    """What every finished loop leaves: no PID file, no container, nothing root-owned."""
    assert project.pid_files() == []
    assert project.containers() == []
    assert project.foreign_files() == []


def test_build_loop_closes_every_task_in_dependency_order(project: Project, model: Model) -> None:
    first = project.create_task("add the greeting module")
    second = project.create_task("use the greeting in the CLI", deps=[first])
    third = project.create_task("document the greeting")
    project.commit_all("chore: seed tasks")
    server = model(scenario("build-loop"))

    done = project.sgf("build", "-a", "5")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    issues = project.issues()
    assert {issues[i]["status"] for i in (first, second, third)} == {"closed"}
    order = claimed(server.requests)
    assert sorted(order) == sorted([first, second, third])
    assert order.index(first) < order.index(second)
    commits = project.commits_touching(r"^\[pn-[0-9a-f]+\] implement")
    assert [subject.split("]")[0][1:] for subject, _ in commits] == order
    for subject, files in commits:
        task = subject.split("]")[0][1:]
        assert f"work/{task}.py" in files, (subject, files)
        assert touches_issues(files), (subject, files)
    assert (
        project.git("rev-parse", "HEAD")
        == project.run("git", "--git-dir", str(project.remote), "rev-parse", "main").stdout.strip()
    )
    [log] = project.logs()
    text = log.read_text()
    assert "Bash(pn claim-next --json)" in text
    assert re.search(r"Write\(.*work/pn-", text)
    assert not (project.root / ".ralph-complete").exists()
    assert project.sent_back() == []  # it checked its work the way the stack does
    assert_clean_exit(project)


def test_build_loop_that_never_finishes_exits_2_and_pushes_its_work(
    project: Project, model: Model
) -> None:
    tasks = [project.create_task(f"task {n}") for n in range(3)]
    project.commit_all("chore: seed tasks")
    server = model(scenario("exhausted"))

    done = project.sgf("build", "-a", "2")

    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    # one claim per agent: the second iteration's claim-next hands back the task the first
    # left in progress, rather than leaving it held and taking another
    held = claimed(server.requests)
    assert len(held) == 2
    assert held[0] == held[1]
    assert held[0] in tasks
    remote = project.remote_log()
    assert [s for s in remote if "work in progress" in s] == [f"[{held[0]}] work in progress"]
    issues = project.issues()
    # Claims end with the loop: the unfinished task is back in the queue, with a history line
    # saying which loop gave it back and why.
    assert [issues[t]["status"] for t in held] == ["open", "open"]
    assert [issues[t]["assignee"] for t in held] == [None, None]
    [loop_id] = [log.stem for log in project.logs()]
    for task in set(held):
        released = [e for e in project.pn("history", task) if e["event_type"] == "released"]
        assert released[0]["actor"] == loop_id
        assert released[0]["detail"].endswith(f"loop {loop_id} ended: iterations exhausted")
    doctor = json.loads(project.run("pn", "doctor", "--json").stdout)
    assert [f for f in doctor["findings"] if f["check"] == "claim"] == []
    assert_clean_exit(project)


def test_usage_limit_waits_for_the_reset_and_reruns_the_iteration(
    project: Project, model: Model
) -> None:
    task = project.create_task("the only task")
    project.commit_all("chore: seed tasks")
    played = scenario_json("build-loop")
    played["steps"] = [{"rate_limit": {"reset_in": 4}, "times": 1}, *played["steps"]]
    server = model(played)
    project.env["RALPH_LIMIT_MARGIN"] = "1"  # ralph's safety margin after the reset (default 10 s)

    # Two iterations are enough only if the rejected one is not counted: the task, then done.
    done = project.sgf("build", "-a", "2")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert project.issues()[task]["status"] == "closed"
    main = server.main_requests()
    assert main[0].status == 429
    rejected_at = main[0].seq
    after = [r for r in main if r.seq > rejected_at]
    assert after, "the iteration was not re-run"
    assert after[0].time - main[0].time >= 3, "ralph did not wait for the reset"
    [log] = project.logs()
    assert re.search(r"(?i)limit", log.read_text())
    assert_clean_exit(project)


def test_a_rejected_push_is_replayed_onto_the_remote_and_both_sides_claims_and_closes_survive(
    project: Project, model: Model
) -> None:
    """Another clone pushes first: ralph's push is rejected, the host replays the branch onto
    the remote's tip (no `pull --rebase` in the checkout) and pushes again, and pensa's files
    of both sides merge: nobody's claim or close is lost."""
    first = project.create_task("first task")
    second = project.create_task("second task")
    theirs = project.create_task("claimed on the other machine")
    project.commit_all("chore: seed tasks")
    other = project.root.parent / "other"
    project.run("git", "clone", "-q", str(project.remote), str(other))
    elsewhere = {**project.env, "PN_ACTOR": "other-machine"}

    def there(*argv: str) -> str:
        done = subprocess.run(
            argv, cwd=other, env=elsewhere, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    there("pn", "init")
    there("pn", "update", theirs, "--claim")
    done_there = json.loads(
        there("pn", "create", "fixed on the other machine", "-t", "task", "--json")
    )
    there("pn", "close", done_there["id"], "--reason", "done there")
    there("git", "commit", "-q", "--allow-empty", "-m", "work on the other machine")
    there("git", "push", "-q", "origin", "main")
    server = model(scenario("build-loop"))

    done = project.sgf("build", "-a", "5")

    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "push of main: pushed after replaying onto the remote" in output, output[-3000:]
    assert sorted(claimed(server.requests)) == sorted([first, second])
    issues = project.issues()
    assert issues[first]["status"] == issues[second]["status"] == "closed"
    assert (issues[theirs]["status"], issues[theirs]["assignee"]) == (
        "in_progress",
        "other-machine",
    )
    assert issues[done_there["id"]]["status"] == "closed"
    remote_issues = committed_issues(
        lambda *args: project.run("git", "--git-dir", str(project.remote), *args).stdout, "main"
    )
    assert remote_issues[first]["status"] == remote_issues[second]["status"] == "closed"
    assert remote_issues[theirs]["status"] == "in_progress"
    assert remote_issues[done_there["id"]]["status"] == "closed"
    assert_clean_exit(project)


def test_a_task_the_agent_cannot_do_leaves_the_queue_and_the_loop_finishes_the_rest(
    project: Project, model: Model
) -> None:
    """With the real claude binary in the sandbox: the agent gives up on one task
    every time it gets it; after 3 claims pn hands it to a human, the loop finishes the other
    task and exits 0, and `sgf status` says a task needs a human."""
    stuck = project.create_task("impossible: needs a human decision")
    doable = project.create_task("an ordinary task")
    project.run("pn", "update", stuck, "-p", "p0")
    project.commit_all("chore: seed tasks")
    model(scenario("stuck"))

    done = project.sgf("build", "-a", "8")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    issues = project.issues()
    assert issues[doable]["status"] == "closed"
    assert (issues[stuck]["status"], issues[stuck]["assignee"]) == ("open", "human")
    shown = project.pn("show", stuck)
    assert any(c["text"].startswith("stuck: claimed 3 times") for c in shown["comments"])
    status = json.loads(project.run("sgf", "status", "--json").stdout)
    assert status["pensa"]["needs_human"] == 1
    assert status["pensa"]["stuck"] == [
        {"id": stuck, "title": "impossible: needs a human decision"}
    ]
    assert status["pensa"]["ready"] == 0  # the stuck task is no agent's work
    [recent] = status["recent"]
    assert (recent["exit_code"], recent["stop_reason"]) == (0, "complete")
    assert recent["tasks_closed"] == [doable]
    text = project.run("sgf", "status").stdout
    assert "needing a human" in text
    assert f"{stuck}  impossible: needs a human decision" in text
    assert project.sent_back() == []
    assert_clean_exit(project)

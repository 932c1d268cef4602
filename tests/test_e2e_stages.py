"""End to end: the verify, test-plan, test and issues-log stages, each committing once, the
way its prompt says (tests/test_scenarios_once.py checks the commands match).

The scripted agents run every command once: a commit that failed would fail the loop here,
where a retry would have hidden it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import scenario, tool_results
from tests.e2e_harness.terminal import read_until, screen_text, terminal
from tests.e2e_harness.tracker import touches_issues

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]


def with_spec(project: Project) -> None:
    """A spec `greet` for the stages that work spec by spec."""
    (project.root / "specs" / "greet.md").write_text("# greet\n\nGreets a name.\n")
    project.commit_all("spec: greet")


def subjects(project: Project) -> list[str]:
    return project.git("log", "--format=%s").splitlines()


def assert_clean(project: Project) -> None:
    assert project.sent_back() == []  # each stage's agent did what its checklist asks
    assert project.git("status", "--porcelain") == ""
    assert project.pid_files() == []
    assert project.containers() == []


def test_verify_commits_its_report_once_and_logs_the_gap(project: Project, model: Model) -> None:
    with_spec(project)
    model(scenario("verify"))

    done = project.sgf("verify", "3")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert subjects(project).count("verify: greet") == 1
    bugs = [i for i in project.issues().values() if i["issue_type"] == "bug"]
    assert [b["title"] for b in bugs] == ["greet: empty name not handled"]
    assert "verification-report.md" in project.git("show", "--name-only", "--format=", "HEAD")
    assert_clean(project)


def test_test_plan_commits_its_items_once(project: Project, model: Model) -> None:
    with_spec(project)
    model(scenario("test-plan"))

    done = project.sgf("test-plan", "3")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert subjects(project).count("test plan: greet") == 1
    items = [i for i in project.issues().values() if i["issue_type"] == "test"]
    assert [i["title"] for i in items] == ["greet greets a name"]
    # the tracker's change alone is in the commit: pensa's JSONL, nothing retried
    assert touches_issues(project.git("show", "--name-only", "--format=", "HEAD").split())
    assert_clean(project)


def test_test_runs_an_item_then_commits_the_report(project: Project, model: Model) -> None:
    item = project.create_task("greet greets a name", kind="test")
    project.commit_all("chore: seed a test item")
    model(scenario("test"))

    done = project.sgf("test", "-a", "3")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert project.issues()[item]["status"] == "closed"
    assert subjects(project)[:2] == ["test report", f"[{item}] greet greets a name"]
    assert_clean(project)


def test_issues_log_commits_the_bug_it_logged(project: Project, model: Model) -> None:
    server = model(scenario("issues-log"))
    argv = ["sgf", "issues", "log"]
    with terminal(argv, cwd=project.root, env=project.env) as (proc, master):
        seen = read_until(master, lambda _raw: proc.poll() is not None, timeout=240)
        tail = screen_text(seen)[-3000:]
        assert proc.wait(timeout=30) == 0, tail
    [bug] = [i for i in project.issues().values() if i["issue_type"] == "bug"]
    played = [(command, text[-500:]) for _, command, text in tool_results(server.requests)]
    subject = f"[{bug['id']}] log bug: greet crashes on empty input"
    assert subjects(project)[0] == subject, played
    assert_clean(project)

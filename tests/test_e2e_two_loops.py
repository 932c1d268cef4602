"""End to end: a build loop and an issues-plan loop on the same repository at once."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import claimed, scenario, tool_results

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]


def history(project: Project, issue: str) -> dict[str, set[str]]:
    """The actors of each kind of event in an issue's audit log."""
    actors: dict[str, set[str]] = {}
    for event in project.pn("history", issue):
        actors.setdefault(event["event_type"], set()).add(event["actor"])
    return actors


def run_both(project: Project, *extra: str) -> tuple[str, str, str, str]:
    """`sgf build -a 5` and `sgf issues plan -a 4` started together; each must complete (the
    plan loop in 2 iterations, the build loop in 3). Returns the build's and the plan's
    output and their loop ids."""

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["sgf", *args, *extra],
            cwd=project.root,
            env=project.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    build = start("build", "-a", "5")
    plan = start("issues", "plan", "-a", "4")
    try:
        plan_out, _ = plan.communicate(timeout=220)
        build_out, _ = build.communicate(timeout=220)
    finally:
        for loop in (build, plan):
            if loop.poll() is None:
                loop.kill()
                loop.communicate()

    assert plan.returncode == 0, plan_out[-3000:]
    assert "ralph complete after 2 iteration(s)" in plan_out, plan_out[-3000:]
    assert build.returncode == 0, build_out[-3000:]
    assert "ralph complete after 3 iteration(s)" in build_out, build_out[-3000:]
    [build_id] = [log.stem for log in project.logs() if log.stem.startswith("build-")]
    [plan_id] = [log.stem for log in project.logs() if log.stem.startswith("issues-plan-")]
    return build_out, plan_out, build_id, plan_id


def test_plan_and_build_loops_turn_a_bug_into_a_closed_fix(project: Project, model: Model) -> None:
    task = project.create_task("an ordinary task")
    bug = project.create_task("crash on empty input", kind="bug")
    project.commit_all("chore: seed a task and a bug")
    server = model(scenario("two-loops"))

    # The plan loop plans the fix, then finishes by writing its sentinel while the build loop
    # still has work, and holds it until the build loop has closed a task. Each loop's sentinel
    # is in its own workspace: the plan's ends the plan loop (2 iterations) and not the build
    # loop, which goes on to its last task (3 iterations); none reaches the checkout or a commit.
    build_out, plan_out, build_id, plan_id = run_both(project)
    [held] = [out for _, cmd, out in tool_results(server.requests) if "> .ralph-complete &&" in cmd]
    assert f"sentinel: {plan_id}" in held  # still the plan's when the build loop closed a task
    assert not (project.root / ".ralph-complete").exists()
    assert project.git("log", "--all", "--format=%h", "--", ".ralph-complete") == ""
    issues = project.issues()
    [fix] = [i for i in issues.values() if i.get("fixes") == bug]
    assert issues[task]["status"] == "closed"
    assert fix["status"] == "closed"
    assert issues[bug]["status"] == "closed"
    assert fix["id"] in (issues[bug]["close_reason"] or "")
    claims = Counter(claimed(server.requests))
    assert claims == Counter({task: 1, fix["id"]: 1})
    # ralph sets PN_ACTOR to the loop id: each loop's claims and closes name it
    for built in (task, fix["id"]):
        actors = history(project, built)
        assert (actors["claimed"], actors["closed"]) == ({build_id}, {build_id}), actors
    assert history(project, fix["id"])["created"] == {plan_id}
    assert history(project, bug)["claimed"] == {plan_id}
    for output in (plan_out, build_out, *(log.read_text() for log in project.logs())):
        assert "database is locked" not in output
    assert project.sent_back() == []
    assert project.pid_files() == []
    assert project.containers() == []


def test_plan_and_build_loops_with_the_old_worktree_flag_meet_on_main(
    project: Project, model: Model
) -> None:
    """The same pair with --worktree, which is still accepted and changes nothing: each loop
    commits in a workspace of its own, seen at the project's own path, both claim from the
    checkout's database, and their commits reach main (and the remote) after every
    iteration; no `.sgf/worktrees/` is made and nothing is left behind."""
    task = project.create_task("an ordinary task")
    bug = project.create_task("crash on empty input", kind="bug")
    project.commit_all("chore: seed a task and a bug")
    server = model(scenario("two-loops-worktree"))

    build_out, plan_out, build_id, plan_id = run_both(project, "--worktree")
    worked_in = {out.strip() for _, cmd, out in tool_results(server.requests) if "&& pwd" in cmd}
    assert {line.splitlines()[-1] for line in worked_in} == {str(project.root)}
    assert not (project.root / ".sgf" / "worktrees").exists()
    issues = project.issues()
    [fix] = [i for i in issues.values() if i.get("fixes") == bug]
    assert [issues[i]["status"] for i in (task, fix["id"], bug)] == ["closed"] * 3
    assert Counter(claimed(server.requests)) == Counter({task: 1, fix["id"]: 1})
    for built in (task, fix["id"]):
        actors = history(project, built)
        assert (actors["claimed"], actors["closed"]) == ({build_id}, {build_id}), actors
    assert history(project, fix["id"])["created"] == {plan_id}
    subjects = project.git("log", "--format=%s", "main").splitlines()
    for subject in (f"[{task}] implement", f"[{fix['id']}] implement", f"[{bug}] plan fix"):
        assert subject in subjects
        assert subject in project.remote_log()
    assert (project.root / "work" / f"{task}.py").is_file()  # main's tree followed
    assert (project.root / "plans" / f"{bug}.md").is_file()
    assert project.git("status", "--porcelain") == ""
    assert project.git("worktree", "list", "--porcelain").count("worktree ") == 1
    assert project.git("branch", "--list", "sgf/*") == ""
    for output in (plan_out, build_out, *(log.read_text() for log in project.logs())):
        assert "database is locked" not in output
    assert project.sent_back() == []
    assert project.pid_files() == []
    assert project.containers() == []

"""README "Try it offline", run as a newcomer without an account would: its commands in order,
in a project as "Your first project" leaves it (default network, no credential anywhere), with
the real claude CLI in the sandbox and the scenarios sgf ships. Each stage's effect is checked:
the spec written and its plan filed as pn tasks, the tasks built and closed, the verification
reported with its gap as a bug, the fix planned, then built, closing the bug.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from collections.abc import Callable
from functools import partial

import pytest
import tomli_w

from tests.e2e_harness.project import Project
from tests.e2e_harness.readme import block_with
from tests.e2e_harness.terminal import read_until, screen_text, terminal

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(1200)]

# The block's commands, in order; the test fails when the README says something else.
DOCUMENTED = [
    "sgf spec --offline",
    "sgf build -a --offline",
    "sgf verify --offline",
    "sgf issues plan -a --offline",
    "sgf build -a --offline",
]
# What the scripted interview asks, and what a newcomer types back.
ANSWERS = [
    ("type any answer and press Enter", "a friendly greeter, for people at a terminal"),
    ("Anything to correct", "no, that is it"),
    ("Shall I commit them?", "yes"),
]
CREDENTIALS = (
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
)


def documented() -> list[str]:
    """The README block's commands, comments left out."""
    block = block_with("sgf spec --offline")
    return [" ".join(shlex.split(line, comments=True)) for line in block.splitlines()]


def as_first_project_leaves_it(project: Project) -> None:
    """The project's own config (the harness adds `network = "host"`), no credential set."""
    path = project.root / ".sgf" / "config.toml"
    config = tomllib.loads(path.read_text())
    config.pop("network", None)
    path.write_text(tomli_w.dumps(config))
    project.git("commit", "-qam", "chore: the default network")
    for name in CREDENTIALS:
        project.env.pop(name, None)
    assert not (project.root.parent / "home" / ".claude" / ".credentials.json").exists()


def shows(text: str) -> Callable[[bytes], bool]:
    """A condition for read_until: the screen shows `text`."""
    return lambda raw: text in screen_text(raw)


def echoed(typed: str, raw: bytes) -> bool:
    """Whether the terminal shows `typed` (the input box may draw it in pieces)."""
    return typed.replace(" ", "") in screen_text(raw).replace(" ", "")


def interview(project: Project, argv: list[str]) -> str:
    """Run the interactive spec session on a terminal, answering each question once."""
    with terminal(argv, cwd=project.root, env=project.env) as (proc, master):
        seen = b""
        for question, answer in ANSWERS:
            seen += read_until(master, shows(question), timeout=240)
            assert question in screen_text(seen), screen_text(seen)[-3000:]
            os.write(master, answer.encode())
            # Claude Code takes a burst of keys ending in Enter as a paste: Enter once it shows
            read_until(master, partial(echoed, answer), timeout=30)
            os.write(master, b"\r")
        seen += read_until(master, lambda _raw: proc.poll() is not None, timeout=240)
        shown = screen_text(seen)
        assert proc.wait(timeout=60) == 0, shown[-3000:]
    return shown


def tasks(project: Project) -> dict[str, dict[str, object]]:
    return {i["title"]: i for i in project.issues().values() if i["issue_type"] == "task"}


def bugs(project: Project) -> list[dict[str, object]]:
    return [i for i in project.issues().values() if i["issue_type"] == "bug"]


def greeting(project: Project, name: str) -> str:
    code = f"from greet import greet; print(greet({name!r}))"
    return project.run("python3", "-c", code).stdout.strip()


def spec_written_and_planned(project: Project) -> None:
    assert project.git("log", "-1", "--format=%s") == "spec: greeter"
    assert "`greet(name)`" in (project.root / "specs" / "greeter.md").read_text()
    assert "[greeter](greeter.md)" in (project.root / "specs" / "README.md").read_text()
    planned = tasks(project)
    assert sorted(planned) == [
        "Add a command line",
        "Test greet() with unit tests",
        "Write the greet function",
    ]
    assert {t["status"] for t in planned.values()} == {"open"}
    assert {t["spec"] for t in planned.values()} == {"greeter"}
    assert [t["title"] for t in project.pn("ready")] == ["Write the greet function"]


def built_and_closed(project: Project) -> None:
    assert {t["status"] for t in tasks(project).values()} == {"closed"}
    assert greeting(project, "Ada") == "Hello, Ada!"
    assert project.run("python3", ".", "Ada", "Lovelace").stdout == "Hello, Ada Lovelace!\n"
    project.run("python3", "-m", "unittest", "-q")
    assert project.pn("ready") == []


def verified_with_its_gap_logged(project: Project) -> None:
    assert project.git("log", "-1", "--format=%s") == "verify: greeter"
    report = (project.root / "verification-report.md").read_text()
    assert "❌ missing" in report
    [bug] = bugs(project)
    assert bug["status"] == "open"
    assert bug["spec"] == "greeter"


def fix_planned(project: Project) -> None:
    [bug] = bugs(project)
    assert project.git("log", "-1", "--format=%s") == f"[{bug['id']}] plan fix"
    fix = tasks(project)["fix: greet a blank name as the world"]
    assert fix["fixes"] == bug["id"]
    assert fix["status"] == "open"
    assert bug["status"] == "open"  # the problem record stays open until its fix closes


def fix_built_and_bug_closed(project: Project) -> None:
    fix = tasks(project)["fix: greet a blank name as the world"]
    assert fix["status"] == "closed"
    assert [b["status"] for b in bugs(project)] == ["closed"]
    assert greeting(project, "   ") == "Hello, world!"


EFFECTS: list[Callable[[Project], None]] = [
    spec_written_and_planned,
    built_and_closed,
    verified_with_its_gap_logged,
    fix_planned,
    fix_built_and_bug_closed,
]


def test_the_whole_cycle_runs_offline_from_the_readme_alone(project: Project) -> None:
    assert documented() == DOCUMENTED
    as_first_project_leaves_it(project)
    for command, effect in zip(documented(), EFFECTS, strict=True):
        argv = shlex.split(command)
        if argv[:2] == ["sgf", "spec"]:
            said = interview(project, argv)
        else:
            done = project.run(*argv, timeout=600, check=False)
            said = done.stdout + done.stderr
            assert done.returncode == 0, f"{command}\n{said[-4000:]}"
        assert "model: the scripted model playing" in said, said[-3000:]
        effect(project)
        assert project.git("status", "--porcelain") == "", command
    assert project.sent_back() == []  # every stage's agent did what its checklist asks
    assert project.pid_files() == []
    assert project.remote_log()[0] == project.git("log", "-1", "--format=%s")  # pushed


def test_quitting_an_offline_interview_says_what_works_instead_of_resuming(
    project: Project,
) -> None:
    as_first_project_leaves_it(project)
    with terminal(["sgf", "spec", "--offline"], cwd=project.root, env=project.env) as (
        proc,
        master,
    ):
        seen = read_until(master, shows(ANSWERS[0][0]), timeout=240)
        os.write(master, b"/exit")
        read_until(master, partial(echoed, "/exit"), timeout=30)
        os.write(master, b"\r")
        seen += read_until(master, lambda _raw: proc.poll() is not None, timeout=120)
        assert proc.wait(timeout=60) == 2  # the session ended before the agent finished
    shown = screen_text(seen)
    after = shown[shown.index("Resume this session with") :]
    assert "its resume command cannot find it" in after, after
    loop_id = project.logs()[-1].stem
    assert f"the session is in its log: `sgf logs {loop_id}`" in after, after

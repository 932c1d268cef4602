"""The check step in the loop, through the real ralph program on the host: a task's Verify
decides whether its work lands, the task carries the evidence, the record the verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import AGENTS, Git, Run, Script, pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

BIN = Path(sys.executable).parent


def task_with(project: Path, git: Git, description: str) -> str:
    made = subprocess.run(
        [str(BIN / "pn"), "q", "the work", "--description-file", "-"],
        input=description, cwd=project, capture_output=True, text=True, check=True,
    )  # fmt: skip
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a task")
    return made.stdout.strip()


def doer(task: str) -> list[list[object]]:
    """The doer's one iteration: claim the task, do it, close it, commit."""
    work = (
        f"pn update {task} --claim >/dev/null && mkdir -p work && echo done > work/{task}.txt "
        f"&& pn close {task} --reason done >/dev/null && git add work && git commit -qm work"
    )
    return [["sh", work], ["result"]]


def checks(record: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    return [e for e in lines if e["event"] == "check"]


@pytest.fixture
def env(ralph_env: dict[str, str]) -> dict[str, str]:
    return {**ralph_env, "PATH": f"{BIN}:{os.environ['PATH']}"}


def test_work_whose_verify_fails_never_lands_and_its_task_carries_the_evidence(
    project: Path, ralph: Run, script: Script, git: Git, env: dict[str, str], tmp_path: Path
) -> None:
    task = task_with(project, git, "Objective: a file\nVerify: `test -e work/missing.txt`\n")
    main = git(project, "rev-parse", "main")
    record = tmp_path / "run.jsonl"

    done = ralph(
        "-a", "--loop-id", "build-v", "--record", str(record), "1", script(default=doer(task)),
        env=env,
    )  # fmt: skip

    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert (
        f"check FAIL: {task}'s Verify `test -e work/missing.txt` failed on the rebased branch "
        f"(exit 1): main did not move; its commits are on sgf/build-v-rejected-"
    ) in out
    assert f"reopened: {task}" in out
    assert git(project, "rev-parse", "main") == main  # nothing landed
    [kept] = git(project, "branch", "--list", "sgf/build-v-rejected-*").split()
    assert git(project, "show", f"{kept}:work/{task}.txt") == "done"
    shown = pn(project, "show", task)
    assert isinstance(shown, dict)
    assert shown["status"] == "open"
    [comment] = [c["text"] for c in shown["comments"]]
    assert comment.startswith(f"check FAIL on {git(project, 'rev-parse', kept)[:12]} (not landed")
    assert f"Verify of {task} failed (exit 1): `test -e work/missing.txt`" in comment
    [check] = checks(record)
    assert (check["verdict"], check["landed"], check["tasks"], check["reopened"]) == (
        "FAIL", False, [task], [task],
    )  # fmt: skip
    assert check["evidence"] == [
        {"command": "test -e work/missing.txt", "task": task, "exit": 1, "output": ""}
    ]


def test_work_whose_verify_passes_lands_with_a_pass_on_its_task(
    project: Path, ralph: Run, script: Script, git: Git, env: dict[str, str], tmp_path: Path
) -> None:
    task = task_with(project, git, "Verify:\n```\ntest -e work/*.txt\ngrep -q done work/*\n```\n")
    main = git(project, "rev-parse", "main")
    record = tmp_path / "run.jsonl"

    done = ralph(
        "-a", "--loop-id", "build-p", "--record", str(record), "1", script(default=doer(task)),
        env=env,
    )  # fmt: skip

    out = done.stdout + done.stderr
    assert f"check PASS on {git(project, 'rev-parse', 'main')[:12]}: 2 command(s) passed" in out
    assert git(project, "log", "--format=%s", f"{main}..main").splitlines()[0] == "work"
    shown = pn(project, "show", task)
    assert isinstance(shown, dict)
    assert shown["status"] == "closed"
    assert [c["text"].split("\n")[0] for c in shown["comments"]] == [
        f"check PASS on {git(project, 'rev-parse', 'main')[:12]} (landed)"
    ]
    [check] = checks(record)
    assert (check["verdict"], check["landed"], check["kept"]) == ("PASS", True, None)


def test_a_check_agent_s_fail_keeps_passing_commands_work_off_the_branch_and_hands_it_over(
    project: Path, ralph: Run, script: Script, git: Git, env: dict[str, str], tmp_path: Path
) -> None:
    task = task_with(project, git, "Verify: `true`\n\nfake-check: fail\n")
    main = git(project, "rev-parse", "main")
    record = tmp_path / "run.jsonl"
    agent = ["--check-agent", "claude", "--check-agent-command", str(AGENTS / "check_agent.py")]

    done = ralph(
        "-a", "--loop-id", "build-c", "--record", str(record), "--stuck-threshold", "1", *agent,
        "1", script(default=doer(task)), env=env,
    )  # fmt: skip

    out = done.stdout + done.stderr
    assert "check agent (claude) on " in out
    assert (
        "check FAIL: the check agent (claude) judged the rebased branch FAIL: the fake check "
        "agent said fail: main did not move"
    ) in out
    assert f"handed to a human: {task}" in out
    assert git(project, "rev-parse", "main") == main
    shown = pn(project, "show", task)
    assert isinstance(shown, dict)
    assert (shown["status"], shown["assignee"]) == ("open", "human")
    first, handed = (c["text"] for c in shown["comments"])
    assert "Check agent (claude): FAIL: the fake check agent said fail" in first
    assert "To fix:\n- make it so: here" in first
    assert handed.startswith("check: handed to a human after 1 failed checks")
    [check] = checks(record)
    assert check["agent"] == {
        "agent": "claude",
        "refused": None,
        "verdict": "FAIL",
        "summary": "the fake check agent said fail",
        "findings": ["looked at it"],
        "fixes": [{"title": "make it so", "description": "here"}],
    }
    assert check["human"] == [task]

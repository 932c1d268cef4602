"""Reviews in the loop, through the real ralph program on the host (docs/guardrails.md
"Reviews"): the landing that completes a feature starts three reviewers at once; a FAIL
reopens the feature and files a fix task under it; the final review runs at the plan's end."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from .conftest import AGENTS, Git, Run, Script, pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

BIN = Path(sys.executable).parent
REVIEWER = ["--check-agent", "claude", "--check-agent-command", str(AGENTS / "check_agent.py")]


def make(project: Path, *args: str) -> str:
    made = pn(project, "create", *args)
    assert isinstance(made, dict)
    return str(made["id"])


def feature(project: Path, git: Git, says: str) -> tuple[str, str, str]:
    """A feature (its description tells the fake reviewers what to say) with two tasks."""
    top = make(project, "greetings", "-t", "feature", "--description", f"fake-check: {says}")
    first = make(project, "first", "-t", "task", "--parent", top)
    second = make(project, "second", "-t", "task", "--parent", top)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a feature")
    return top, first, second


def doer(task: str) -> list[list[object]]:
    work = (
        f"pn update {task} --claim >/dev/null && mkdir -p work && echo done > work/{task}.txt "
        f"&& pn close {task} --reason done >/dev/null && git add work && "
        f"git commit -qm '[{task}] work'"
    )
    return [["sh", work], ["result"]]


def finish() -> list[list[object]]:
    return [["sh", 'echo "$RALPH_LOOP_ID" > .ralph-complete'], ["result"]]


def reviews(record: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    return [e for e in lines if e["event"] == "review"]


@pytest.fixture
def env(ralph_env: dict[str, str]) -> dict[str, str]:
    return {**ralph_env, "PATH": f"{BIN}:{os.environ['PATH']}"}


def test_a_failed_review_reopens_the_feature_with_a_fix_task_under_it(
    project: Path, ralph: Run, script: Script, git: Git, env: dict[str, str], tmp_path: Path
) -> None:
    top, first, second = feature(project, git, "fail")
    record = tmp_path / "run.jsonl"

    done = ralph(
        "-a", "--loop-id", "build-r", "--record", str(record), "--review", "feature",
        *REVIEWER, "2", script(_1=doer(first), _2=doer(second)), env=env,
    )  # fmt: skip

    out = done.stdout + done.stderr
    assert f"review of {top}: 3 reviewers at once on " in out
    [line] = reviews(record)  # the first task's landing completed nothing
    assert (line["kind"], line["issue"], line["verdict"]) == ("feature", top, "FAIL")
    reviewers = line["reviewers"]
    assert isinstance(reviewers, list)
    spans = [(r["started"], r["ended"]) for r in reviewers]
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # all three ran at once
    filed = line["filed"]
    assert isinstance(filed, list)
    [fix] = filed  # three reviewers asked for one fix
    assert isinstance(fix, str)
    shown = pn(project, "show", top)
    assert isinstance(shown, dict)
    assert shown["status"] == "open"
    assert [c["id"] for c in shown["children"]] == [first, second, fix]
    fixed = pn(project, "show", fix)
    assert isinstance(fixed, dict)
    assert (fixed["title"], fixed["status"], fixed["issue_type"]) == ("make it so", "open", "task")
    [said] = (c["text"] for c in shown["comments"])
    assert said.startswith("review FAIL on ")
    assert "Reviewer 1 (the whole change): FAIL: the fake check agent said fail" in said
    assert f"review FAIL: {top} reopened; fix tasks filed: {fix}" in out


def test_a_feature_failing_its_review_at_the_stuck_threshold_goes_to_a_human(
    project: Path, ralph: Run, script: Script, git: Git, env: dict[str, str], tmp_path: Path
) -> None:
    top, first, second = feature(project, git, "fail")

    done = ralph(
        "-a", "--loop-id", "build-h", "--review", "feature", "--reviewers", "2",
        "--stuck-threshold", "1", *REVIEWER, "2", script(_1=doer(first), _2=doer(second)),
        env=env,
    )  # fmt: skip

    assert f"review FAIL: {top} handed to a human after 1" in done.stdout + done.stderr
    shown = pn(project, "show", top)
    assert isinstance(shown, dict)
    assert (shown["status"], shown["assignee"]) == ("open", "human")
    assert len(shown["children"]) == 2  # nothing more filed


def test_a_passed_feature_review_and_the_final_review_when_the_plan_is_done(
    project: Path, ralph: Run, script: Script, git: Git, env: dict[str, str], tmp_path: Path
) -> None:
    top, first, second = feature(project, git, "pass")
    start = git(project, "rev-parse", "main")
    record = tmp_path / "run.jsonl"

    done = ralph(
        "-a", "--loop-id", "build-p", "--record", str(record), "--review", "feature",
        *REVIEWER, "3", script(_1=doer(first), _2=doer(second), _3=finish()), env=env,
    )  # fmt: skip

    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    passed, final = reviews(record)
    assert (passed["issue"], passed["verdict"], passed["filed"]) == (top, "PASS", [])
    assert passed["base"] == start  # from before the feature's first task's commit
    assert (final["kind"], final["verdict"], final["base"]) == ("final", "PASS", start)
    assert final["commit"] == git(project, "rev-parse", "main")
    assert "final review PASS (3 reviewers)" in out
    shown = pn(project, "show", top)
    assert isinstance(shown, dict)
    assert shown["status"] == "closed"


def test_no_review_runs_when_reviews_are_off(
    project: Path, ralph: Run, script: Script, git: Git, env: dict[str, str], tmp_path: Path
) -> None:
    _, first, second = feature(project, git, "fail")
    record = tmp_path / "run.jsonl"

    ralph(
        "-a", "--loop-id", "build-o", "--record", str(record), *REVIEWER, "3",
        script(_1=doer(first), _2=doer(second), _3=finish()), env=env,
    )  # fmt: skip

    assert reviews(record) == []

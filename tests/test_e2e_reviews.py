"""End to end: reviews in the build loop (docs/guardrails.md "Reviews"), in the real sandbox
with the scripted model: a feature whose two tasks complete gets three reviewers whose runs
overlap; one's FAIL files a fix task under the feature, which reopens and is reviewed again
when the fix lands; the final review runs when the plan is done."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from ralph.testing.model_server import ModelServer

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import scenario

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(900)]

Model = Callable[..., ModelServer]


def reviews(project: Project) -> list[dict[str, Any]]:
    """The `review` lines of every run record, in order."""
    found = []
    for path in sorted((project.root / ".sgf" / "runs").glob("*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in found if e["event"] == "review"]


def overlap(line: dict[str, Any]) -> bool:
    """Whether every reviewer of one review ran while every other did: the last to start
    started before the first to end ended (RFC 3339 UTC strings order as times)."""
    spans = [(r["started"], r["ended"]) for r in line["reviewers"]]
    return bool(max(s for s, _ in spans) < min(e for _, e in spans))


def test_a_completed_feature_gets_three_overlapping_reviewers_and_a_fail_files_a_fix_task(
    project: Project, model: Model
) -> None:
    feature = str(project.pn("create", "greetings", "-t", "feature")["id"])
    first = str(project.pn("create", "a first file", "-t", "task", "--parent", feature)["id"])
    second = str(project.pn("create", "a second file", "-t", "task", "--parent", feature)["id"])
    project.set_config(review="feature", reviewers=3)
    project.commit_all("chore: seed a feature with two tasks")
    model(scenario("review"))

    done = project.sgf("build", "-a", "8", timeout=840)

    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    failed, passed, final = reviews(project)
    # the feature's first review: three reviewers, each its own focus, at once; one FAILs
    assert (failed["kind"], failed["issue"], failed["verdict"]) == ("feature", feature, "FAIL")
    assert [r["focus"] for r in failed["reviewers"]] == ["correctness", "tests", "design"]
    assert [r["verdict"] for r in failed["reviewers"]] == ["PASS", "FAIL", "PASS"]
    assert overlap(failed), failed["reviewers"]
    # its change runs from before the first task's commit to the landing
    commits = project.git("log", "--format=%H %s", "main").splitlines()
    by_subject = {s: h for h, s in (c.split(" ", 1) for c in commits)}
    assert failed["base"] == project.git("rev-parse", f"{by_subject[f'[{first}] implement']}^")
    assert failed["commit"] == by_subject[f"[{second}] implement"]
    [fix] = failed["filed"]
    assert failed["reopened"] is True
    issues = project.issues()
    assert (issues[fix]["title"], issues[fix]["parent"]) == ("test the files", feature)
    assert f"review FAIL: {feature} reopened; fix tasks filed: {fix}" in out
    # the fix landed, the feature closed again and passed its second review
    assert (passed["issue"], passed["verdict"]) == (feature, "PASS")
    assert passed["commit"] == by_subject[f"[{fix}] implement"]
    assert overlap(passed), passed["reviewers"]
    assert issues[feature]["status"] == "closed"
    assert issues[fix]["status"] == "closed"
    texts = [str(c["text"]) for c in project.pn("comment", "list", feature)]
    assert texts[0].startswith("review FAIL on ")
    assert "Reviewer 2 (tests): FAIL: the second file has no test" in texts[0]
    assert texts[1].startswith("review PASS on ")
    # the plan done, the final review of everything the build landed
    assert (final["kind"], final["issue"], final["verdict"]) == ("final", None, "PASS")
    assert len(final["reviewers"]) == 3
    assert overlap(final), final["reviewers"]
    assert final["commit"] == project.git("rev-parse", "main")
    assert "final review PASS (3 reviewers)" in out

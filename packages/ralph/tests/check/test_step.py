"""The check step on real commits, a real tracker and the fake check agent, on the host
(check/step.py, check/agent.py, check/act.py); the same in Docker: tests/test_e2e_check_step.py."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pensa.shared.assignee import HUMAN

from ralph import proc, workspace
from ralph.check import act, step
from ralph.check.contract import Contract
from ralph.check.step import Checker, CheckFailed, Outcome
from ralph.check.verdict import Evidence, Judgement, Verdict
from ralph.git import objects_dir
from ralph.governor import Budgets, Governor
from ralph.models import CheckAgent, Config, Guardrails, Prompt, SandboxKind
from ralph.render import Output
from ralph.sandbox import Place
from ralph.sandbox.host import HostSandbox

from ..conftest import AGENTS, git

BIN = Path(sys.executable).parent
PASSED, FAILED = Evidence("true", 0, ""), Evidence("false", 1, "no")


@pytest.mark.parametrize(
    ("evidence", "judged", "agent_ran", "expected"),
    [
        ([], None, False, None),  # nothing to check: lands as before
        ([PASSED], None, False, Verdict.PASS),
        ([PASSED, FAILED], None, False, Verdict.PARTIAL),
        ([FAILED], None, False, Verdict.FAIL),
        ([], Judgement(Verdict.PASS), True, Verdict.PASS),
        ([PASSED], Judgement(Verdict.PARTIAL), True, Verdict.PARTIAL),
        ([PASSED], Judgement(Verdict.FAIL), True, Verdict.FAIL),
        ([PASSED, FAILED], Judgement(Verdict.PASS), True, Verdict.PARTIAL),
        ([PASSED], None, True, Verdict.FAIL),  # the agent ran and gave no verdict ralph takes
        ([], None, True, Verdict.FAIL),
    ],
)
def test_the_verdict_and_the_landing_decision(
    evidence: list[Evidence], judged: Judgement | None, agent_ran: bool, expected: Verdict | None
) -> None:
    verdict = step.decide(evidence, judged, agent_ran=agent_ran)
    assert verdict is expected
    assert step.lands(verdict) is (expected in (None, Verdict.PASS))


def test_the_agent_runs_only_on_closed_work_whose_commands_did_not_fail() -> None:
    task = [Contract("pn-1", "t")]
    assert step.agent_needed([PASSED], task)
    assert step.agent_needed([], task)
    assert not step.agent_needed([PASSED, FAILED], task)
    assert not step.agent_needed([PASSED], [])


@pytest.fixture
def pn_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}


def pn(project: Path, env: dict[str, str], *args: str) -> object:
    done = subprocess.run(
        ["pn", *args, "--json"], cwd=project, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def make_checker(
    repo: Path,
    env: dict[str, str],
    *,
    check_command: str | None = None,
    agent: bool = False,
    stdout: io.StringIO | None = None,
) -> Iterator[Checker]:
    """A checker of `repo` on the host (one, yielded: `for checker in ...` closes it)."""
    config = Config(
        project=repo,
        prompt=Prompt("x"),
        sandbox=SandboxKind.NONE,
        guardrails=Guardrails(check_command=check_command),
        check_agent=CheckAgent("claude", command=str(AGENTS / "check_agent.py")) if agent else None,
    )
    state = repo.parent / "state"
    state.mkdir(exist_ok=True)
    place = Place(workspace.Workspace(repo.parent / "ws"), repo, "main", objects_dir(repo), None)
    box = HostSandbox(config, env, state, place=place)
    out = Output(stdout or io.StringIO(), io.StringIO(), styled=False, log=None)
    try:
        with proc.Interrupts() as interrupts:
            yield Checker(
                config, box, out, interrupts, Governor(Budgets()), env, state,
                base=lambda: git(repo, "rev-parse", "HEAD~1"),
            )  # fmt: skip
    finally:
        box.close()


@pytest.fixture
def checked(repo: Path, pn_env: dict[str, str]) -> Path:
    """`repo` with a second commit: the work about to land."""
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the work")
    return repo


@pytest.mark.process
def test_the_tasks_verify_commands_run_else_the_check_command(
    checked: Path, pn_env: dict[str, str]
) -> None:
    for checker in make_checker(checked, pn_env, check_command="test -e b.txt"):
        with_verify = [Contract("pn-1", "t", verify=("test -e a.txt", "test -e gone.txt"))]
        assert checker.commands(with_verify) == [
            ("pn-1", "test -e a.txt"),
            ("pn-1", "test -e gone.txt"),
        ]
        assert checker.commands([Contract("pn-2", "t")]) == [(None, "test -e b.txt")]
        outcome = checker.check(git(checked, "rev-parse", "HEAD"), with_verify)
        assert outcome.verdict is Verdict.PARTIAL
        assert [(e.task, e.status) for e in outcome.evidence] == [("pn-1", 0), ("pn-1", 1)]
    for checker in make_checker(checked, pn_env):
        assert checker.gate([Contract("pn-3", "t")], branch="main") is None  # nothing to run


@pytest.mark.process
def test_the_gate_lets_a_pass_through_and_refuses_the_rest(
    checked: Path, pn_env: dict[str, str]
) -> None:
    head = git(checked, "rev-parse", "HEAD")
    for checker in make_checker(checked, pn_env):
        gate = checker.gate([Contract("pn-1", "t", verify=("test -e b.txt",))], branch="main")
        assert gate is not None
        assert gate(head) is None
        assert checker.last is not None
        assert checker.last.verdict is Verdict.PASS
        gate = checker.gate([Contract("pn-1", "t", verify=("test ! -e b.txt",))], branch="main")
        assert gate is not None
        failed = gate(head)
        assert isinstance(failed, CheckFailed)
        assert str(failed) == (
            "check FAIL: pn-1's Verify `test ! -e b.txt` failed on the rebased branch (exit 1): "
            "main did not move"
        )


AGENT_CASES = [
    ("pass", Verdict.PASS, None),
    ("partial", Verdict.PARTIAL, None),
    ("fail", Verdict.FAIL, None),
    ("none", Verdict.FAIL, "the check agent wrote no verdict file"),
    ("malformed", Verdict.FAIL, "the verdict file is not a JSON object"),
    ("extra", Verdict.FAIL, "the verdict file has unknown keys: approved_by"),
    ("lowercase", Verdict.FAIL, "the verdict file's verdict is not PASS, PARTIAL or FAIL"),
    ("huge", Verdict.FAIL, "the verdict file holds"),
    ("fifo", Verdict.FAIL, "the verdict file is not a plain file: not read"),
    ("dir", Verdict.FAIL, "the verdict file is not a plain file: not read"),
    ("symlink:{host}", Verdict.FAIL, "the verdict file is a symbolic link: not read"),
]


@pytest.mark.process
@pytest.mark.parametrize(("wanted", "verdict", "refused"), AGENT_CASES)
def test_the_check_agent_decides_and_its_file_is_taken_as_data_or_not_at_all(
    checked: Path, pn_env: dict[str, str], tmp_path: Path, wanted: str, verdict: Verdict,
    refused: str | None,
) -> None:  # fmt: skip
    host = tmp_path / "a-host-file-holding-a-pass.json"
    host.write_text('{"verdict": "PASS"}')
    task = Contract("pn-1", "t", description=f"fake-check: {wanted.format(host=host)}")
    for checker in make_checker(checked, pn_env, agent=True):
        outcome = checker.check(git(checked, "rev-parse", "HEAD"), [task])
        assert outcome.verdict is verdict, outcome
        assert (outcome.refused or "")[: len(refused or "")] == (refused or ""), outcome
        assert (outcome.refused is None) is (refused is None), outcome
        assert outcome.agent == "claude"
        assert not (checker.state / "checks").exists() or not any(
            (checker.state / "checks").iterdir()
        )  # each check's folders go with it
    assert host.read_text() == '{"verdict": "PASS"}'


@pytest.mark.process
def test_the_check_agent_works_in_a_clean_checkout_of_the_commit(
    checked: Path, pn_env: dict[str, str]
) -> None:
    (checked / "uncommitted.txt").write_text("not part of the commit\n")
    task = Contract("pn-1", "t", description="fake-check: pass")
    out = io.StringIO()
    for checker in make_checker(checked, pn_env, agent=True, stdout=out):
        checker.check(git(checked, "rev-parse", "HEAD"), [task])
        said = out.getvalue()
        assert "fake check agent: pass in " in said
        where = Path(said.split("fake check agent: pass in ", 1)[1].split()[0])
        assert where != checked
        assert where.name == "checkout"


@pytest.mark.process
def test_no_agent_runs_on_work_whose_commands_failed(checked: Path, pn_env: dict[str, str]) -> None:
    task = Contract("pn-1", "t", description="fake-check: pass", verify=("false",))
    for checker in make_checker(checked, pn_env, agent=True):
        outcome = checker.check(git(checked, "rev-parse", "HEAD"), [task])
        assert (outcome.verdict, outcome.agent) == (Verdict.FAIL, None)


def closed_task(project: Path, env: dict[str, str]) -> str:
    made = pn(project, env, "create", "the work", "-t", "task")
    assert isinstance(made, dict)
    task = str(made["id"])
    pn(project, env, "close", task, "--reason", "done")
    return task


def comments(project: Path, env: dict[str, str], task: str) -> list[str]:
    shown = pn(project, env, "comment", "list", task)
    assert isinstance(shown, list)
    return [str(c["text"]) for c in shown]


@pytest.mark.process
def test_a_failed_check_reopens_the_task_with_its_evidence_and_a_human_gets_it_at_last(
    repo: Path, pn_env: dict[str, str]
) -> None:
    task = closed_task(repo, pn_env)
    failed = Outcome(
        "c0ffee" * 7,
        Verdict.PARTIAL,
        (task,),
        (Evidence("pytest -q", 1, "1 failed", task), Evidence("ruff check", 0, "", task)),
        Judgement(Verdict.PARTIAL, "half", ("no test",)),
        agent="codex",
        base="ba5e" * 10,
    )
    for attempt in (1, 2):
        acted = act.act(
            repo, failed, kept="sgf/x-rejected-c0ffee", base=failed.base, actor="build-1",
            threshold=2, env=pn_env,
        )  # fmt: skip
        shown = pn(repo, pn_env, "show", task)
        assert isinstance(shown, dict)
        if attempt == 1:
            assert acted == act.Acted(reopened=[task])
            assert (shown["status"], shown["assignee"]) == ("open", None)
            pn(repo, pn_env, "close", task, "--reason", "done again")
        else:
            assert acted == act.Acted(reopened=[task], human=[task])
            assert (shown["status"], shown["assignee"]) == ("open", HUMAN)
    said = comments(repo, pn_env, task)
    assert said[0].splitlines()[:3] == [
        f"check PARTIAL on {'c0ffee' * 2} (not landed; kept on sgf/x-rejected-c0ffee)",
        "",
        f"Verify of {task} failed (exit 1): `pytest -q`",
    ]
    assert "1 failed" in said[0]
    assert f"Verify of {task} passed (exit 0): `ruff check`" in said[0]
    assert "Check agent (codex): PARTIAL: half\n- no test" in said[0]
    assert f"`git cherry-pick {'ba5e' * 10}..{'c0ffee' * 7}`" in said[0]
    assert said[-1].startswith("check: handed to a human after 2 failed checks")


@pytest.mark.process
def test_a_pass_is_a_comment_and_counts_start_again_after_it(
    repo: Path, pn_env: dict[str, str]
) -> None:
    task = closed_task(repo, pn_env)
    passed = Outcome("ab" * 20, Verdict.PASS, (task,), (Evidence("true", 0, "", None),))
    acted = act.act(repo, passed, kept=None, base=None, actor="b", threshold=1, env=pn_env)
    assert acted == act.Acted()
    [said] = comments(repo, pn_env, task)
    assert said == f"check PASS on {'ab' * 6} (landed)\n\nMerge check passed (exit 0): `true`"
    assert act.failures([{"text": "check FAIL on x"}, {"text": said}]) == 0
    assert act.failures([{"text": said}, {"text": "check FAIL"}, {"text": "check PARTIAL"}]) == 2
    assert act.failures([{"text": "check FAIL"}, {"text": "check: handed to a human"}]) == 0
    assert act.failures(["junk", {"text": 3}, {"text": "checked it by hand: FAIL"}]) == 0

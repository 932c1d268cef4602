"""`--offline`: a stage hands its shipped scenario to ralph, and no credential is asked for."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sgf import preflight
from sgf.cli import cli
from sgf.config import SandboxKind
from sgf.errors import NoOfflineScenario, PreflightError
from sgf.loop import offline, relaunch
from sgf.loop.loops import Launch
from sgf.stages import Stage

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Git = Callable[..., str]

SHIPPED = [Stage.SPEC, Stage.BUILD, Stage.VERIFY, Stage.ISSUES_PLAN]


def test_the_shipped_scenarios_are_the_cycles_stages() -> None:
    assert offline.stages() == SHIPPED
    for stage in SHIPPED:
        path = offline.scenario(stage, "claude")
        assert path.name == f"{stage.value}.json"
        played = json.loads(path.read_text(encoding="utf-8"))
        assert played.get("steps") or all(s["steps"] for s in played["scripts"])


@pytest.mark.parametrize("stage", sorted(set(Stage) - set(SHIPPED)))
def test_a_stage_without_a_scenario_says_which_have_one(stage: Stage) -> None:
    with pytest.raises(NoOfflineScenario) as e:
        offline.scenario(stage, "claude")
    assert str(e.value) == (
        f"`{stage.command} --offline`: no scripted scenario ships for this stage; these have "
        "one: `sgf spec`, `sgf build`, `sgf verify`, `sgf issues plan`"
    )


def test_the_scenarios_play_claude_codes_tools_only() -> None:
    with pytest.raises(
        NoOfflineScenario, match="plays Claude Code's tools, and this stage runs codex"
    ):
        offline.scenario(Stage.BUILD, "codex")


def test_every_stage_commands_help_names_the_stages_with_a_scenario() -> None:
    shown = CliRunner().invoke(cli, ["build", "--help"]).output
    said = " ".join(shown.split())
    listed = ", ".join(stage.command.removeprefix("sgf ") for stage in offline.stages())
    assert f"({listed})" in said, said


def test_an_offline_run_needs_no_credential(tmp_path: Path, isolated_home: Path) -> None:
    ralph = tmp_path / "bin" / "ralph"
    ralph.parent.mkdir()
    ralph.write_text("#!/bin/sh\nexit 0\n")
    ralph.chmod(0o755)
    env = {"PATH": str(ralph.parent), "HOME": str(isolated_home)}
    found = preflight.check(tmp_path, template="i", sandbox=SandboxKind.NONE, env=env, offline=True)
    assert found == str(ralph)
    with pytest.raises(PreflightError, match="no Claude Code credentials"):
        preflight.check(tmp_path, template="i", sandbox=SandboxKind.NONE, env=env)
    with pytest.raises(PreflightError, match="no codex credentials"):
        preflight.check(tmp_path, template="i", sandbox=SandboxKind.NONE, env=env, agent="codex")


def test_a_restart_of_an_offline_loop_is_offline_again(project: Path) -> None:
    request = Launch(stage=Stage.BUILD, afk=True, iterations=3, offline=True)
    relaunch.save(project, "build-20260101T000000", request)
    assert relaunch.load(project, "build-20260101T000000") == request
    assert relaunch.sgf_args(request) == ["build", "-a", "--offline", "3"]


@pytest.mark.process
def test_build_offline_hands_ralph_the_build_scenario(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    done = sgf(project, "build", "-a", "--offline", "2", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    argv: list[str] = fake_ralph.calls()["argv"]
    played = Path(argv[argv.index("--scenario") + 1])
    assert played == offline.scenario(Stage.BUILD, "claude")
    assert argv[-2:][0] == "2"  # the flags come before the positionals


@pytest.mark.process
def test_offline_without_any_credential_launches(project: Path, sgf: Run, fake_ralph: Any) -> None:
    unset = dict.fromkeys(preflight.CREDENTIAL_VARS, "")  # whatever this machine has set
    env = {**fake_ralph.env(), "SGF_SKIP_PREFLIGHT": "0", **unset}
    done = sgf(project, "spec", "--offline", "--sandbox", "none", env=env)
    assert done.returncode == 0, done.stderr
    assert "--scenario" in fake_ralph.calls()["argv"]
    refused = sgf(project, "spec", "--sandbox", "none", env=env)
    assert refused.returncode == 1
    assert "no Claude Code credentials" in refused.stderr


@pytest.mark.process
def test_offline_for_a_stage_without_a_scenario_is_one_line_and_nothing_runs(
    project: Path, sgf: Run, fake_ralph: Any, git: Git
) -> None:
    (project / "dirty.txt").write_text("mine")  # nothing is stashed for a launch refused early
    done = sgf(project, "test-plan", "--offline", env=fake_ralph.env())
    assert done.returncode == 1
    assert done.stderr.startswith("error: `sgf test-plan --offline`: no scripted scenario")
    assert len(done.stderr.splitlines()) == 1
    assert not fake_ralph.record.exists()
    assert git(project, "stash", "list") == ""
    assert os.path.exists(project / "dirty.txt")

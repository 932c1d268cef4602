"""End to end: a hostile check agent in the real sandbox writes a huge, linked, malformed or
piped verdict file; none of it passes the work, and the host never reads through its link.

The check agent is ralph's fake one (packages/ralph/tests/agents/check_agent.py), committed in
the project so the check's clean checkout has it; each task's description tells it what to
plant. The doer is claude on the scripted model."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ralph.testing.model_server import ModelServer

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import scenario

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(900)]

Model = Callable[..., ModelServer]
FAKE = Path(__file__).resolve().parents[1] / "packages/ralph/tests/agents/check_agent.py"


def test_a_hostile_check_agent_s_verdict_file_never_lands_the_work(
    project: Project, model: Model, tmp_path: Path
) -> None:
    host_pass = tmp_path / "a-pass-of-the-hosts.json"
    host_pass.write_text('{"verdict": "PASS"}')
    plants = {
        "huge": "the verdict file holds",
        f"symlink:{host_pass}": "the verdict file is a symbolic link: not read",
        "malformed": "the verdict file is not a JSON object",
        "fifo": "the verdict file is not a plain file: not read",
        "extra": "the verdict file has unknown keys: approved_by",
    }
    hostile = {
        project.pn("create", f"task {n}", "--description", f"fake-check: {plant}")["id"]: why
        for n, (plant, why) in enumerate(plants.items())
    }
    honest = project.pn("create", "the honest one", "--description", "fake-check: pass")["id"]
    shutil.copy2(FAKE, project.root / "check_agent.py")
    project.set_config(stuck_threshold=1, check_agent="claude")
    project.commit_all("chore: seed tasks and the check agent")
    main = project.git("rev-parse", "main")
    model(scenario("check-step"))
    project.env["RALPH_CHECK_AGENT_COMMAND"] = "./check_agent.py"

    done = project.sgf("build", "-a", "8", timeout=840)

    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert project.git("log", "--format=%s", f"{main}..main").splitlines() == [
        f"[{honest}] implement"
    ]
    assert host_pass.read_text() == '{"verdict": "PASS"}'
    issues = project.issues()
    records = {c["tasks"][0]: c for c in checks(project)}
    for issue, why in hostile.items():
        assert (issues[issue]["status"], issues[issue]["assignee"]) == ("open", "human"), issue
        check = records[issue]
        assert (check["verdict"], check["landed"]) == ("FAIL", False), check
        assert check["agent"]["refused"].startswith(why), check
        [evidence, _] = [c["text"] for c in project.pn("comment", "list", issue)]
        assert f"Check agent (claude): no verdict taken: {why}" in evidence
    assert issues[honest]["status"] == "closed"
    assert (records[honest]["verdict"], records[honest]["landed"]) == ("PASS", True)


def checks(project: Project) -> list[dict[str, Any]]:
    found = []
    for path in sorted((project.root / ".sgf" / "runs").glob("*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in found if e["event"] == "check"]

"""End to end: the same guardrails for every backend, each through its own CLI's hooks.

One scenario (scenarios/guardrails-any-agent.json) played by the real pinned claude, codex,
opencode and gemini in the real sandbox, against the scripted model in each one's dialect: the
agent claims a task, tries `git reset --hard HEAD~1` over a commit it did not make (refused by
the command guard) and says it is done with the task still claimed (sent back by the stop
checklist), then closes, commits and finishes. `sgf build` runs it; `sgf status` counts what
the guardrails did from the run record, the same for every backend.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from ralph.testing.model_server import ModelServer

from tests.e2e_harness.agents import endpoints
from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import FAKE_TOKEN, scenario

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(600)]

Model = Callable[..., ModelServer]
BACKENDS = [
    "claude",
    pytest.param("codex", marks=pytest.mark.codex),
    pytest.param("opencode", marks=pytest.mark.opencode),
    pytest.param("gemini", marks=pytest.mark.gemini),
]


def said_to_the_model(server: ModelServer) -> str:
    """Everything the CLI sent the model, as JSON text: tool results and hook feedback."""
    return "\n".join(json.dumps(r.body) for r in server.requests if r.kind == "main")


def record(project: Project) -> list[dict[str, Any]]:
    lines = []
    for path in sorted((project.root / ".sgf" / "runs").glob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines() if line]
    return lines


@pytest.mark.parametrize("agent", BACKENDS)
def test_each_backend_refuses_a_destructive_command_and_sends_a_premature_stop_back(
    agent: str, project: Project, model: Model, request: pytest.FixtureRequest
) -> None:
    image = request.getfixturevalue("sandbox_image" if agent == "claude" else f"{agent}_image")
    (project.root / "theirs.txt").write_text("someone else's work\n")
    project.commit_all("feat: someone else's commit")
    theirs = project.git("rev-parse", "HEAD")
    task = project.create_task("close me")
    project.set_config(agent=agent, docker_template=image)
    project.commit_all(f"chore: seed a task, build with {agent}")
    server = model(scenario("guardrails-any-agent"), key=FAKE_TOKEN)
    project.env.update(endpoints(agent, server.url))

    done = project.sgf("build", "-a", "1")
    status = json.loads(project.sgf("status", "--json").stdout)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    said = said_to_the_model(server)
    assert "refused: git reset --hard HEAD~1 drops commits" in said, said[-3000:]
    assert "Not done yet (stop checklist, 1 of 3)" in said, said[-3000:]
    assert f"task {task} is still claimed" in said
    assert project.git("merge-base", "--is-ancestor", theirs, "HEAD") == ""
    assert (project.root / "theirs.txt").read_text() == "someone else's work\n"
    assert project.issues()[task]["status"] == "closed"
    assert project.commits_touching(rf"^\[{task}\] close")
    [iteration] = [e for e in record(project) if e["event"] == "iteration"]
    fired = [(e["hook"], e.get("rule"), e.get("released")) for e in iteration["guardrails"]]
    assert fired == [("guard", "reset-hard", None), ("stop", None, False)], fired
    [loop] = status["recent"]
    assert loop["guardrails"] == "1 refused, 1 sent back"
    assert project.containers() == []


# What an earlier iteration's agent could commit to turn its own CLI's hooks off, and where
# that CLI's managed settings are in the container. opencode.json as opencode leaves it: it
# writes a `$schema` into a config file that lacks one, which would be a change to commit.
TURNED_OFF = {
    "claude": (".claude/settings.json", '{"disableAllHooks": true}\n'),
    "codex": (".codex/config.toml", "[features]\nhooks = false\n"),
    "opencode": ("opencode.json", '{"$schema": "https://opencode.ai/config.json", "plugin": []}\n'),
    "gemini": (
        ".gemini/settings.json",
        '{"hooksConfig": {"enabled": false, "disabled": ["ralph-pre-tool-use"]}}\n',
    ),
}
MANAGED = {
    "claude": "/etc/claude-code/managed-settings.json",
    "codex": "/etc/codex/requirements.toml",
    "opencode": "/etc/opencode/opencode.json",
    "gemini": "/etc/gemini-cli/settings.json",
}


@pytest.mark.parametrize("agent", BACKENDS)
def test_no_backend_s_hooks_can_be_turned_off_or_rewritten_by_the_agent(
    agent: str, project: Project, model: Model, request: pytest.FixtureRequest
) -> None:
    """The project's own settings cannot turn the hooks off, and neither the CLI's managed
    settings (root's, in the container) nor the hook program's options (the read-only guard
    folder, beside the run's HOME) can be rewritten by the agent."""
    image = request.getfixturevalue("sandbox_image" if agent == "claude" else f"{agent}_image")
    path, text = TURNED_OFF[agent]
    (project.root / path).parent.mkdir(exist_ok=True)
    (project.root / path).write_text(text)
    project.set_config(agent=agent, docker_template=image)
    project.commit_all("chore: what an earlier iteration's agent committed")
    head = project.git("rev-parse", "HEAD")
    rewrite = f"echo '{{}}' > {MANAGED[agent]}; echo '{{}}' > \"$HOME/../guard/options.json\""
    steps = [
        {"text": "Rewriting the hooks.", "shell": f"{rewrite}; echo tried"},
        {"shell": "git reset --hard HEAD~1"},
        {"shell": 'echo "$RALPH_LOOP_ID" > .ralph-complete && echo finished'},
        {"text": "Done."},
    ]
    server = model({"steps": steps}, key=FAKE_TOKEN)
    project.env.update(endpoints(agent, server.url))

    done = project.sgf("build", "-a", "1")

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    said = said_to_the_model(server)
    assert said.count("Permission denied") + said.count("Read-only file system") >= 2, said
    assert "refused: git reset --hard HEAD~1 drops commits" in said, said[-3000:]
    assert project.git("rev-parse", "HEAD") == head
    [iteration] = [e for e in record(project) if e["event"] == "iteration"]
    assert [e.get("rule") for e in iteration["guardrails"]] == ["reset-hard"]

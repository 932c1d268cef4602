"""End to end: each agent backend (codex, opencode, gemini, and claude beside them) in the
real sandbox, offline, driven by the scripted model in its own API's dialect.

The agent claims a task with pn, writes a file, closes the task, commits and writes the
sentinel; ralph's one-liners, summary, totals and run record show the same fields for every
backend. The images are tests/conftest.py's (e2e_harness/agents.py).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ralph.testing.model_server import ModelServer

from tests.e2e_harness.agents import assert_image_carries, endpoints
from tests.e2e_harness.project import SANDBOX_IMAGE, Project
from tests.e2e_harness.scenarios import FAKE_TOKEN, scenario, scenario_json
from tests.e2e_harness.tracker import touches_issues

# the sandbox image is built with claude in it, as every project's is
pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[..., ModelServer]
WaitFor = Callable[..., None]


def run_ralph(
    project: Project, agent: str, image: str, url: str, record: Path
) -> subprocess.CompletedProcess[str]:
    """ralph on the default allow-list network: the server, on the host's loopback, is
    reached through the key proxy alone."""
    argv = ["ralph", "-a", "--agent", agent, "--template", image]
    argv += ["--loop-id", f"build-{agent}", "--record", str(record), "--max-cost", "5"]
    return project.run(
        *argv,
        "3",
        "Work on the next ready task, then finish the loop.",
        extra_env=endpoints(agent, url),
        timeout=240,
        check=False,
    )


def events(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def assert_one_task_done(
    project: Project, task: str, done: subprocess.CompletedProcess[str]
) -> None:
    """The same outcome and the same fields, whichever agent ran."""
    out = done.stdout
    assert done.returncode == 0, out[-4000:] + done.stderr[-4000:]
    assert project.issues()[task]["status"] == "closed"
    [(subject, files)] = project.commits_touching(rf"^\[{task}\] implement")
    assert f"work/{task}.py" in files, (subject, files)
    assert touches_issues(files), (subject, files)  # the close travels with the work
    assert ".pensa/uncommitted" not in files, (subject, files)  # pn's marker is never committed
    assert "-> Bash(pn claim-next --json)" in out, out
    [summary] = [line for line in out.splitlines() if line.startswith("Iteration 1 done: ")]
    assert " tokens · $" in summary, summary
    assert summary.endswith(" · exit 0"), summary
    assert "ralph complete after 1 iteration(s)" in out, out
    assert "1 task(s) closed, $" in out, out
    assert project.containers() == []


# agent -> (the path its API is asked at, whether it computes its cost from tokens)
BACKENDS = {
    "claude": ("/v1/messages", False),  # the baseline: claude reports its own cost
    "codex": ("/v1/responses", True),
    "opencode": ("/v1/chat/completions", None),  # opencode's cost is its own or computed
    "gemini": ("/v1beta/models/", True),
}


# What each CLI reaches for besides its model (update checks, package look-ups): refused by
# the allow-list and listed in the record, never the model's own endpoint.
ASKS_ON_ITS_OWN = {
    "claude": set(),
    "codex": {"github.com", "api.github.com", "chatgpt.com"},
    "opencode": {"registry.npmjs.org"},
    "gemini": set(),
}


@pytest.mark.parametrize(
    "agent",
    [
        "claude",
        pytest.param("codex", marks=pytest.mark.codex),
        pytest.param("opencode", marks=pytest.mark.opencode),
        pytest.param("gemini", marks=pytest.mark.gemini),
    ],
)
def test_each_agent_claims_edits_commits_closes_and_finishes(
    agent: str, project: Project, model: Model, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """One scenario, every backend in its own dialect: the same outcome and the same fields."""
    image = request.getfixturevalue("sandbox_image" if agent == "claude" else f"{agent}_image")
    task = project.create_task("add the greeting module")
    project.commit_all("chore: seed tasks")
    server = model(scenario("any-agent"), key=FAKE_TOKEN)
    record = tmp_path / "run.jsonl"

    done = run_ralph(project, agent, image, server.url, record)

    assert FAKE_TOKEN not in done.stdout + done.stderr
    assert 401 not in {r.status for r in server.requests}  # every request had the real key

    # gemini-cli runs its shell tool's git with GIT_CONFIG_* setting core.hooksPath to "" (and
    # global config to /dev/null): no hook runs, so pensa's pre-commit export does not; the
    # workspace finishes the commit as the hook would, and it lands like every other agent's.
    assert_one_task_done(project, task, done)
    api, computed = BACKENDS[agent]
    assert any(r.path.startswith(api) for r in server.requests)
    [iteration] = [e for e in events(record) if e["event"] == "iteration"]
    [end] = [e for e in events(record) if e["event"] == "end"]
    assert {r["host"] for r in end["refused"]} <= ASKS_ON_ITS_OWN[agent], end["refused"]
    assert iteration["claimed"] == [task]
    assert iteration["closed"] == [task]
    assert iteration["tokens"] > 0
    assert iteration["cost"] > 0
    if computed is not None:
        assert iteration.get("cost_computed", False) is computed


@pytest.mark.codex
def test_a_codex_build_stage_and_a_claude_verify_stage_finish_a_task(
    project: Project, model: Model, codex_image: str
) -> None:
    """`[stages.build] agent = "codex"`, verify left to claude: one image carries both."""
    task = project.create_task("add the greeting module")
    project.set_config(docker_template=codex_image, stages={"build": {"agent": "codex"}})
    project.commit_all("chore: seed tasks, build with codex")
    verify = {
        "text": "Verifying the specs.",
        "shell": "echo 'every spec verified' > verification-report.md && git add -A"
        " && git commit -q -m 'verify: report' && echo \"$RALPH_LOOP_ID\" > .ralph-complete",
    }
    server = model(
        {
            "scripts": [
                {"name": "verify", "prompt": "# Verify: check ONE spec", "steps": [verify]},
                {"name": "build", **scenario_json("any-agent")},
            ]
        }
    )
    project.env.update(endpoints("codex", server.url))

    built = project.sgf("build", "-a", "3")
    verified = project.sgf("verify")

    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr[-3000:]
    assert project.issues()[task]["status"] == "closed"
    assert project.commits_touching(rf"^\[{task}\] implement")
    assert project.commits_touching(r"^verify: report")
    paths = {r.path for r in server.requests if r.kind == "main"}
    assert "/v1/responses" in paths, paths  # the build stage's codex
    assert "/v1/messages" in paths, paths  # the verify stage's claude
    assert project.containers() == []


@pytest.mark.codex
def test_a_codex_iteration_counts_against_the_token_and_cost_budgets(
    project: Project, model: Model, codex_image: str, tmp_path: Path
) -> None:
    server = model({"steps": [{"text": "Looking around.", "shell": "echo looking"}]})
    record = tmp_path / "run.jsonl"
    argv = ["ralph", "-a", "--agent", "codex", "--template", codex_image, "--network", "host"]
    argv += ["--record", str(record), "--max-tokens", "1", "3", "Look around."]

    done = project.run(*argv, extra_env=endpoints("codex", server.url), timeout=240, check=False)

    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert "stopping before iteration 2: budget reached" in done.stdout, done.stdout
    [end] = [e for e in events(record) if e["event"] == "end"]
    assert end["iterations"] == 1
    assert end["tokens"] > 1
    assert end["cost"] > 0


def test_an_image_without_the_configured_agent_is_refused_before_any_iteration(
    project: Project, sandbox_image: str
) -> None:
    argv = ["ralph", "-a", "--agent", "codex", "--template", sandbox_image, "1", "Do it."]

    done = project.run(*argv, check=False)

    assert done.returncode == 1
    assert "the sandbox image has no codex" in done.stderr + done.stdout
    assert "Iteration 1" not in done.stdout


@pytest.mark.codex
def test_sgf_sandbox_build_puts_the_configured_agent_in_the_image(
    project: Project, base_image: str, claude_bin: Path, codex_bin: Path
) -> None:
    """`agent = "codex"` in the config: status warns the image lacks it until a build adds it
    (from the shared cache codex_bin filled) with its version label."""
    image = f"{SANDBOX_IMAGE}-sgf-codex"  # this checkout's own
    project.set_config(agent="codex")

    before = project.sgf("status")
    built = project.sgf(
        "sandbox", "build", "--image", image, "--base", base_image,
        "--claude-binary", str(claude_bin), timeout=900,
    )  # fmt: skip
    project.set_config(docker_template=image)
    after = project.sgf("status")

    assert "has no codex" in before.stdout + before.stderr
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert_image_carries(project, image, "codex")
    assert "has no codex" not in after.stdout + after.stderr


@pytest.mark.codex
def test_a_codex_429_past_its_own_retries_is_waited_out_and_the_iteration_run_again(
    project: Project, model: Model, codex_image: str, tmp_path: Path
) -> None:
    task = project.create_task("add the greeting module")
    project.commit_all("chore: seed tasks")
    steps = scenario_json("any-agent")
    # codex makes one request and five retries before its turn fails with the last status
    limited = {"http_error": 429, "retry_after": 0, "message": "Rate limited", "times": 6}
    server = model({**steps, "steps": [limited, *steps["steps"]]})
    project.env["RALPH_BACKOFF_BASE"] = "0.5"

    done = run_ralph(project, "codex", codex_image, server.url, tmp_path / "run.jsonl")

    assert "rate limited (429) with no reset time: retry 1" in done.stdout, done.stdout
    assert "retrying the same iteration" in done.stdout
    assert_one_task_done(project, task, done)


@pytest.mark.gemini
def test_sigterm_stops_a_gemini_iteration_in_docker_within_ten_seconds(
    project: Project, gemini_image: str, tmp_path: Path, wait_for: WaitFor
) -> None:
    """Docker's init passes ralph's signals to the agent's process alone: gemini restarted
    itself as a child and its parent ignored SIGINT and SIGTERM, so only SIGKILL stopped it.
    Here it is busy retrying an API at a closed port when ralph is told to stop."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    api = {"GOOGLE_GEMINI_BASE_URL": closed, "GEMINI_API_KEY": "test-key"}
    argv = ["ralph", "-a", "--agent", "gemini", "--template", gemini_image, "--network", "host"]
    log = tmp_path / "ralph.out"
    with log.open("wb") as sink:
        ralph = subprocess.Popen(
            [*argv, "1", "Work on the next ready task."],
            cwd=project.root,
            env={**project.env, **api, "RALPH_API_WAIT": "600"},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    running = ["docker", "ps", "-q", "--filter", f"label=springfield.project={project.root}"]
    try:
        wait_for(lambda: b"~ API retry 1" in log.read_bytes(), timeout=180, what="a retry")
        ralph.send_signal(signal.SIGTERM)
        wait_for(
            lambda: project.run(*running).stdout.strip() == "",
            timeout=10,
            what="gemini's container to stop",
        )
        assert ralph.wait(timeout=60) == 130
    finally:
        if ralph.poll() is None:
            ralph.kill()
            ralph.wait()
    text = log.read_text()
    assert "ignored SIGINT" not in text, text
    assert " · interrupted" in text, text

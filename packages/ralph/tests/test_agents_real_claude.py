"""ralph driving the real, pinned claude binary against the scripted Messages API server:
on the host and inside a real container (the binary travels in a test image: the agent's
workspace holds only what the project committed, as a user's sandbox image holds claude)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import parse_scenario

from .conftest import loop_containers

pytestmark = pytest.mark.claude

COMPLETES = [
    {"tool": "Bash", "input": {"command": "touch .ralph-complete", "description": "finish"}},
    {"text": "All done."},
]


@pytest.fixture(scope="session")
def claude_image(
    base_image: str, claude_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The base image with the pinned claude on its PATH; tagged by the binary, so each pin
    gets its own image and a later session reuses it."""
    found = claude_bin.stat()
    digest = hashlib.sha256(
        f"{base_image}\0{claude_bin.resolve()}\0{found.st_size}\0{found.st_mtime_ns}".encode()
    )
    tag = f"springfield-test-claude:{digest.hexdigest()[:16]}"
    inspect = ["docker", "image", "inspect", tag]
    if subprocess.run(inspect, capture_output=True, check=False).returncode == 0:
        return tag
    context = tmp_path_factory.mktemp("claude-image")
    try:
        os.link(claude_bin, context / "claude")  # 380 MB: link, not copy (its mode comes along)
    except OSError:
        shutil.copy2(claude_bin, context / "claude")
    (context / "Dockerfile").write_text(f"FROM {base_image}\nCOPY claude /usr/local/bin/claude\n")
    built = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr
    return tag


def run(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "ralph", "-a", "--auto-push", "false", *args]
    ralph = subprocess.Popen(
        argv,
        cwd=project,
        env={**env, "RALPH_RESULT_GRACE": "15"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = ralph.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        ralph.terminate()  # SIGTERM: ralph removes its container before exiting
        out, err = ralph.communicate(timeout=60)
        pytest.fail(f"ralph did not finish in 240 s:\n{out}\n{err}")
    return subprocess.CompletedProcess(argv, ralph.returncode, out, err)


def test_real_claude_on_the_host_completes_the_loop(
    claude_bin: Path, project: Path, ralph_env: dict[str, str]
) -> None:
    with ModelServer(parse_scenario(COMPLETES)) as server:
        env = {
            **ralph_env,
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "IS_SANDBOX": "1",
            "RALPH_COMMAND": str(claude_bin),
        }
        done = run(project, env, "--sandbox", "none", "3", "Follow the script.")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "-> Bash(touch .ralph-complete)" in done.stdout
    assert "All done." in done.stdout
    assert "Iteration 1 done: " in done.stdout
    assert not (project / ".ralph-complete").exists()


def test_real_claude_plays_a_scenario_with_no_credential_of_the_users(
    claude_bin: Path, project: Path, ralph_env: dict[str, str], tmp_path: Path
) -> None:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(COMPLETES))
    env = {k: v for k, v in ralph_env.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(IS_SANDBOX="1", RALPH_COMMAND=str(claude_bin))
    done = run(
        project, env, "--sandbox", "none", "--scenario", str(scenario), "3", "Follow the script."
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "model: the scripted model playing" in done.stdout
    assert "All done." in done.stdout


@pytest.mark.docker
def test_real_claude_in_a_container_waits_out_a_usage_limit(
    project: Path, ralph_env: dict[str, str], claude_image: str
) -> None:
    scenario = parse_scenario([{"rate_limit": {"reset_in": 2}, "times": 1}, *COMPLETES])
    loop_id = f"real-claude-{os.getpid()}"
    token = "sk-ant-oat01-test-token-only-the-host-holds"
    # the server takes only the real token, on the host's loopback: the container, on the
    # allow-list network, reaches it through the key proxy alone
    with ModelServer(scenario, key=token) as server:
        env = {
            **ralph_env,
            "ANTHROPIC_BASE_URL": server.url,
            "CLAUDE_CODE_OAUTH_TOKEN": token,
            "RALPH_COMMAND": "claude",
        }
        done = run(
            project,
            env,
            "--sandbox",
            "docker",
            "--template",
            claude_image,
            "--loop-id",
            loop_id,
            "2",
            "Follow the script.",
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "usage limit reached; it resets at" in done.stdout
    assert "retrying the same iteration" in done.stdout
    assert "-> Bash(touch .ralph-complete)" in done.stdout
    assert "Iteration 2" not in done.stdout
    assert "after its result" not in done.stdout
    assert token not in done.stdout + done.stderr
    assert {r.status for r in server.requests} <= {200, 429}, server.requests
    assert loop_containers(loop_id) == []


def test_real_claude_reports_cost_and_max_cost_stops_the_loop(
    claude_bin: Path, project: Path, ralph_env: dict[str, str], tmp_path: Path
) -> None:
    """`--max-cost 0.002` with the scripted model. Each reply reports 200 input
    tokens, which Claude Code prices into its result's total_cost_usd (about $0.001)."""
    scenario = parse_scenario({"input_tokens": 200, "steps": [{"text": "More work next time."}]})
    record = tmp_path / "run.jsonl"
    with ModelServer(scenario) as server:
        env = {
            **ralph_env,
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "IS_SANDBOX": "1",
            "RALPH_COMMAND": str(claude_bin),
        }
        done = run(
            project, env, "--sandbox", "none", "--max-cost", "0.002", "--record", str(record),
            "10", "Follow the script.",
        )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    iterations = [json.loads(line) for line in record.read_text().splitlines()]
    costs = [e["cost"] for e in iterations if e["event"] == "iteration"]
    assert costs, done.stdout
    assert all(isinstance(c, float) and c > 0 for c in costs), costs
    assert sum(costs[:-1]) < 0.002 <= sum(costs)  # stopped at the first iteration over it
    end = iterations[-1]
    assert end["stop_reason"].startswith("budget reached: cost $")
    assert end["stop_reason"].endswith("of --max-cost $0.002")
    assert f"stopping before iteration {len(costs) + 1}: budget reached: cost" in done.stdout
    assert f"totals: {len(costs)} iteration(s)" in done.stdout

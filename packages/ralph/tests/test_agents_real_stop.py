"""Every backend fails loudly and stops when told: the real, pinned claude, codex, opencode and
gemini CLIs in ralph's loop on the host (`--sandbox none`), at a closed port, at the scripted
model server refusing the key, with a model that does nothing, and signalled.

The waits are the acceptance's own deadlines (two minutes for a loop at a closed port, ten
seconds for a stop); bench/bench_agent_stops.py measures how long each really takes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ralph import agents
from ralph.stream import ApiRetry, Parser
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import parse_scenario

from .conftest import children, run_ralph

WaitFor = Callable[..., None]
PROMPT = "Do the work."
BACKENDS = [
    pytest.param("claude", marks=pytest.mark.claude),
    pytest.param("codex", marks=pytest.mark.codex),
    pytest.param("opencode", marks=pytest.mark.opencode),
    pytest.param("gemini", marks=pytest.mark.gemini),
]
FINISH: dict[str, object] = {
    "steps": [{"shell": 'echo "$RALPH_LOOP_ID" > .ralph-complete && echo finished'}]
}


@pytest.fixture
def closed_port() -> str:
    """The base URL of a loopback port nothing listens on: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def model() -> Iterator[Callable[[dict[str, object]], ModelServer]]:
    """model(scenario) -> the scripted server playing it, stopped after the test."""
    started: list[ModelServer] = []

    def start(scenario: dict[str, object]) -> ModelServer:
        started.append(ModelServer(parse_scenario(scenario)).start())
        return started[-1]

    yield start
    for server in started:
        server.stop()


def endpoint(agent: str, url: str, *, model: str | None = "scripted-1") -> dict[str, str]:
    """`agent`'s API at `url`, with a key, in the variables that backend reads."""
    if agent == "claude":
        # root may bypass permissions only in a throw-away sandbox, which a test's is
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-test", "IS_SANDBOX": "1"}
    if agent == "gemini":
        return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "test-key"}
    named = {"OPENAI_MODEL": model} if model else {}
    return {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-test", **named}


def ralph_env(agent: str, binary: Path, api: dict[str, str]) -> dict[str, str]:
    """ralph with its default timeouts (the acceptance's), the real `agent`, on the host."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RALPH_")}
    env |= {"RALPH_SANDBOX": "none", "RALPH_AUTO_PUSH": "false"}
    return env | {"RALPH_AGENT": agent, "RALPH_COMMAND": str(binary), **api}


@pytest.fixture
def binary(request: pytest.FixtureRequest) -> Path:
    """The pinned CLI of the test's `agent` parameter."""
    path = request.getfixturevalue(f"{request.node.callspec.params['agent']}_bin")
    assert isinstance(path, Path)
    return path


@pytest.mark.parametrize("agent", BACKENDS)
def test_at_a_closed_port_each_backend_says_so_and_the_loop_stops_within_two_minutes(
    agent: str, binary: Path, project: Path, closed_port: str
) -> None:
    env = ralph_env(agent, binary, endpoint(agent, closed_port))

    done = run_ralph(project, env, "-a", "5", PROMPT, timeout=120)

    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "   ~ API retry 1 (" in out, out  # the first failed call, as it happens
    assert "warning: the agent's API calls failed for 20 s: stopped it (last error: " in out
    assert out.count("· stopped (api-failing) ·") == 3, out
    assert "Iteration 4" not in out
    assert (
        "stopping: 3 iterations in a row failed; the last: the agent's API calls kept failing"
        in done.stderr
    )
    assert "    at " not in out + done.stderr  # no stack traces (gemini's)
    assert "could not create PATH aliases" not in done.stderr  # codex's, every run


@pytest.mark.parametrize("agent", BACKENDS)
def test_a_refused_key_fails_each_backend_s_iteration_in_one_line_within_a_minute(
    agent: str,
    binary: Path,
    project: Path,
    model: Callable[[dict[str, object]], ModelServer],
) -> None:
    refused = {"http_error": 401, "message": "Incorrect API key provided", "times": 1000}
    server = model({"steps": [refused]})
    env = ralph_env(agent, binary, endpoint(agent, server.url))

    done = run_ralph(project, env, "-a", "1", PROMPT, timeout=60)

    assert done.returncode == 1, done.stdout + done.stderr
    # the CLI's own verdict (codex, opencode, gemini), or ralph's on claude, which retries a
    # refused key for minutes
    [said] = [line for line in done.stdout.splitlines() if line.startswith("warning: ")]
    assert "401" in said or "Incorrect API key provided" in said, done.stdout
    assert "every iteration failed (1)" in done.stderr
    assert {r.status for r in server.requests if r.kind == "main"} == {401}


@pytest.mark.codex
def test_codex_s_own_model_at_a_custom_endpoint_is_warned_of_and_does_nothing_loudly(
    codex_bin: Path, project: Path, model: Callable[[dict[str, object]], ModelServer]
) -> None:
    """Without OPENAI_MODEL codex asks for its default model with a tool protocol the
    compatible server does not see as tools: it answers "OK" and the turn "succeeds"."""
    server = model(FINISH)
    env = ralph_env("codex", codex_bin, endpoint("codex", server.url, model=None))

    done = run_ralph(project, env, "-a", "5", PROMPT, timeout=120)

    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert out.count("warning: OPENAI_BASE_URL is set but OPENAI_MODEL is not") == 1, out
    verdict = "warning: the model made no tool call, so nothing was done: set OPENAI_MODEL"
    assert out.count(verdict) == 3, out
    assert "the last: the model made no tool call" in done.stderr
    assert not (project / ".ralph-complete").exists()


@pytest.mark.parametrize("agent", BACKENDS)
def test_with_its_model_named_each_backend_works_without_a_warning(
    agent: str,
    binary: Path,
    project: Path,
    tmp_path: Path,
    model: Callable[[dict[str, object]], ModelServer],
) -> None:
    """The control: the same argv, configuration and readers finish a scripted loop, say no
    word of the checks above, and show none of the CLIs' own noise; and the agent works
    where ralph starts it, whatever PWD ralph was given (opencode trusts $PWD)."""
    server = model(FINISH)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = ralph_env(agent, binary, endpoint(agent, server.url)) | {"PWD": str(elsewhere)}

    done = run_ralph(project, env, "-a", "2", PROMPT, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "ralph complete after 1 iteration(s)" in done.stdout
    assert "warning: " not in done.stdout, done.stdout
    assert done.stderr == "", done.stderr  # no banners, log lines or PATH-alias complaints
    assert list(elsewhere.iterdir()) == []


def retried(agent: str, out: bytes, err: bytes) -> bool:
    """Whether `agent`'s output so far holds a retry, read by its own reader."""
    parser = Parser(agents.get(agent).reader())
    events = [*parser.events([out]), *parser.stderr(err), *parser.stderr_end()]
    return any(isinstance(event, ApiRetry) for event in events)


def gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("agent", BACKENDS)
def test_sigterm_stops_each_backend_s_iteration_within_ten_seconds(
    agent: str, binary: Path, project: Path, closed_port: str, tmp_path: Path, wait_for: WaitFor
) -> None:
    """The agent is busy retrying its unreachable API (no deadline of ralph's near) when
    ralph is told to stop: the agent's process group is gone within ten seconds."""
    env = ralph_env(agent, binary, endpoint(agent, closed_port)) | {"RALPH_API_WAIT": "600"}
    log = tmp_path / "ralph.out"
    with log.open("wb") as sink:
        ralph = subprocess.Popen(
            [sys.executable, "-m", "ralph", "-a", "1", PROMPT],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(lambda: b"~ API retry 1" in log.read_bytes(), timeout=120, what="a retry")
        [pid] = [child for child in children(ralph.pid) if os.getpgid(child) == child]
        ralph.send_signal(signal.SIGTERM)
        wait_for(lambda: gone(pid), timeout=10, what=f"{agent} to stop")
        assert ralph.wait(timeout=60) == 130
    finally:
        if ralph.poll() is None:
            ralph.kill()
            ralph.wait()
    text = log.read_text()
    assert "Iteration 1 done: " in text
    assert text.split("Iteration 1 done: ")[1].splitlines()[0].endswith(" · interrupted"), text
    assert "ignored SIGINT" not in text  # the first step of the ladder was enough


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("agent", BACKENDS)
def test_each_backend_stops_when_its_own_process_alone_is_signalled(
    agent: str,
    sig: signal.Signals,
    binary: Path,
    project: Path,
    closed_port: str,
    tmp_path: Path,
    wait_for: WaitFor,
) -> None:
    """Docker's init passes ralph's signal to the agent's process, not to its group: an agent
    that only stops when its whole group is signalled (gemini relaunching itself as a child,
    the parent ignoring SIGINT and SIGTERM) would wait for SIGKILL. Run as ralph runs it."""
    backend = agents.get(agent, endpoint(agent, closed_port))
    home = tmp_path / "run-home"  # the run's HOME, as ralph's sandbox makes it
    home.mkdir()
    api = endpoint(agent, closed_port)
    env = {**os.environ, **api, **backend.setup(home, api)}
    argv, stdin = backend.afk(str(binary), PROMPT.encode(), [])
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen(
            argv,
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    assert child.stdin is not None
    child.stdin.write(stdin)
    child.stdin.close()
    try:
        wait_for(
            lambda: retried(agent, out.read_bytes(), err.read_bytes()),
            timeout=120,
            what=f"{agent} to retry",
        )
        child.send_signal(sig)
        child.wait(timeout=10)
        wait_for(lambda: gone(child.pid), timeout=10, what=f"what {agent} started to stop")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()

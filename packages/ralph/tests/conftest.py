"""Fixtures for ralph's tests: a git project, the fake agents, and ralph as a real program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
AGENTS = Path(__file__).parent / "agents"
STREAMS = Path(__file__).parent / "fixtures" / "stream"

# Every wait shrunk so the suite stays fast; each test can override.
FAST = {
    "RALPH_RESULT_GRACE": "0.5",
    "RALPH_STOP_GRACE": "0.5",
    "RALPH_LIMIT_MARGIN": "0",
    "RALPH_BACKOFF_BASE": "0.05",
    "RALPH_BACKOFF_TRIES": "2",
    "RALPH_DING_POLL": "0.02",
    "RALPH_SANDBOX": "none",
    "RALPH_AUTO_PUSH": "true",
}

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Git = Callable[..., str]
Script = Callable[..., str]
Spawn = Callable[..., "subprocess.Popen[str]"]
WaitFor = Callable[..., None]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def script(**iterations: list[list[object]]) -> str:
    """A fake-agent prompt: actions per run number (`_1=[...]`) or `default=[...]`."""
    return json.dumps({key.lstrip("_"): steps for key, steps in iterations.items()})


@pytest.fixture(autouse=True)
def no_ralph_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own RALPH_* settings (network, timeouts, sounds) never reach a test."""
    for name in list(os.environ):
        if name.startswith("RALPH_"):
            monkeypatch.delenv(name)


@pytest.fixture(name="git")
def git_fixture() -> Git:
    """git(cwd, *args) -> stdout, failing on a non-zero exit."""
    return git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository on main with one commit of `a.txt`."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture(name="script")
def script_fixture() -> Script:
    """script(_1=[actions], default=[actions]) -> a fake-agent prompt."""
    return script


@pytest.fixture
def fake_agent() -> Path:
    """The scripted stream-json agent (tests/agents/fake_agent.py)."""
    return AGENTS / "fake_agent.py"


@pytest.fixture
def project(make_repo: Callable[..., Path]) -> Path:
    """A git repository with one commit, as the project ralph runs in."""
    return make_repo("project")


@pytest.fixture
def remote(tmp_path: Path, project: Path) -> Path:
    """A bare repository set as the project's `origin`, with main pushed and tracked."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(project, "remote", "add", "origin", str(bare))
    git(project, "push", "-q", "-u", "origin", "main")
    return bare


@pytest.fixture
def ralph_env(fake_agent: Path) -> dict[str, str]:
    """ralph's environment: the fake agent on the host, short timeouts, no colours."""
    return {**os.environ, **FAST, "RALPH_COMMAND": str(fake_agent)}


@pytest.fixture
def ralph(project: Path, ralph_env: dict[str, str]) -> Run:
    """Run the real `ralph` program in `project`: ralph(*args, env=..., timeout=...)."""

    def run(
        *args: str, env: dict[str, str] | None = None, timeout: float = 60, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_ralph(cwd or project, {**ralph_env, **(env or {})}, *args, timeout=timeout)

    return run


@pytest.fixture
def spawn_ralph(background: Callable[..., subprocess.Popen[str]]) -> Spawn:
    """Start ralph in the background; whatever a failing test left running is killed after it."""

    def spawn(project: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
        return background([sys.executable, "-m", "ralph", *args], cwd=project, env=env)

    return spawn


# The tracker as the loop's tests see it (how a loop hands its claims back).
def pn(project: Path, *args: str) -> object:
    """`pn ARGS --json` in `project` as a person (`human`), its answer parsed."""
    done = subprocess.run(
        [str(BIN / "pn"), *args, "--json"],
        cwd=project,
        env={**os.environ, "PN_ACTOR": "human"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture
def task(project: Path) -> str:
    """A task in `project`'s tracker, for the loop to claim."""
    created = pn(project, "create", "the loop's task", "-t", "task")
    assert isinstance(created, dict)
    return str(created["id"])


@pytest.fixture
def env(ralph_env: dict[str, str]) -> dict[str, str]:
    """ralph's environment with pn on the PATH, for an agent that claims with it."""
    return {**ralph_env, "PATH": f"{BIN}:{os.environ['PATH']}"}


def status(project: Path, issue: str) -> tuple[str, str | None]:
    """An issue's status and assignee, as `pn show` tells them."""
    shown = pn(project, "show", issue)
    assert isinstance(shown, dict)
    return shown["status"], shown["assignee"]


def loop_containers(loop_id: str) -> list[str]:
    """The ids of the containers, running or not, labelled with loop `loop_id`."""
    from ralph.sandbox.container import LABEL_LOOP

    return subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={LABEL_LOOP}={loop_id}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


@pytest.fixture
def loop_id(request: pytest.FixtureRequest) -> Iterator[str]:
    """A loop id unique to this test; the test fails if a container carrying it remains."""
    module = request.node.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    ident = f"{module}-{request.node.name[:40]}-{os.getpid()}"
    ident = ident.replace("[", "-").replace("]", "")
    yield ident
    left = loop_containers(ident)
    if left:
        subprocess.run(["docker", "rm", "-f", *left], capture_output=True, check=False)
    assert left == [], f"containers left behind: {left}"


# The fake agents in the test image (the root conftest's agent_image).
IMAGE_AGENT = "/opt/springfield-test/fake_agent.py"
IMAGE_TTY_AGENT = "/opt/springfield-test/tty_agent.py"


def workspace_of(project: Path, loop_id: str) -> Path:
    """Where loop `loop_id` of `project` keeps its agent's repository while it runs (the
    test's own state folder: the isolated HOME's)."""
    from ralph import workspace

    return workspace.folder(project, os.environ) / workspace.stem(loop_id) / "repo"


def stashed(project: Path, path: str) -> str:
    """`path` as the newest stash of `project` holds it (an untracked file: its third parent)."""
    for spec in (f"stash@{{0}}:{path}", f"stash@{{0}}^3:{path}"):
        done = subprocess.run(
            ["git", "show", spec], cwd=project, capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            return done.stdout
    raise AssertionError(f"no {path} in the newest stash of {project}")


@pytest.fixture
def docker_env(agent_image: str, ralph_env: dict[str, str]) -> dict[str, str]:
    """ralph's environment for the Docker sandbox on the test image, with the fake agent."""
    env = {**ralph_env, "RALPH_SANDBOX": "docker", "RALPH_TEMPLATE": agent_image}
    env["RALPH_COMMAND"] = IMAGE_AGENT
    return env


def run_ralph(
    project: Path, env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m ralph ARGS` in `project` with exactly `env`, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "ralph", *args],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def children(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


@pytest.fixture
def no_leaks() -> Iterator[None]:
    """Fails the test when it leaves file descriptors open or child processes behind."""
    before = open_fds()
    yield
    assert children(os.getpid()) == []
    leaked = open_fds() - before
    assert not leaked, f"leaked fds: {sorted(leaked)}"

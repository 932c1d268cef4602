"""End-to-end fixtures: the sandbox image, a project with a bare remote, the scripted model.

The root conftest.py already isolates HOME and git and provides `docker_engine`, `base_image`
and `claude_bin`; this file only adds what the cross-package tests need on top.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# --import-mode=importlib puts nothing on sys.path; the harness is imported as tests.e2e_harness.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario, parse_scenario

from tests.e2e_harness import agents
from tests.e2e_harness.processes import working_in
from tests.e2e_harness.project import SANDBOX_IMAGE, Project, make_project
from tests.e2e_harness.scenarios import FAKE_TOKEN


@pytest.fixture(scope="session")
def sandbox_image(base_image: str, claude_bin: Path) -> str:
    """`sgf sandbox build` of the python stack's image (the e2e projects are python projects),
    once per session; sgf itself skips the build when the image is fresh."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    argv = ["sgf", "sandbox", "build", "--stack", "python", "--image", SANDBOX_IMAGE]
    done = subprocess.run(
        [*argv, "--base", base_image, "--claude-binary", str(claude_bin)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"sgf sandbox build failed:\n{done.stdout}\n{done.stderr}"
    return SANDBOX_IMAGE


@pytest.fixture
def codex_image(sandbox_image: str, codex_bin: Path, tmp_path: Path) -> str:
    """The sandbox image with the pinned codex in it."""
    return agents.build_image(sandbox_image, "codex", tmp_path, codex_bin)


@pytest.fixture
def opencode_image(sandbox_image: str, opencode_bin: Path, tmp_path: Path) -> str:
    """The sandbox image with the pinned opencode in it."""
    return agents.build_image(sandbox_image, "opencode", tmp_path, opencode_bin)


@pytest.fixture
def gemini_image(project: Project, base_image: str, claude_bin: Path) -> str:
    """gemini-cli is a JS bundle for node >= 20, which Debian bookworm lacks: this image is
    `sgf sandbox build`'s, for a project whose config names gemini, with the bundle and its
    own pinned node, and the version label ralph checks."""
    image = agents.sgf_image(project, f"{SANDBOX_IMAGE}-gemini", "gemini", base_image, claude_bin)
    agents.assert_image_carries(project, image, "gemini")
    return image


@pytest.fixture
def e2e_env(isolated_home: Path) -> dict[str, str]:
    """The test's isolated environment with the workspace's console scripts first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture
def project(tmp_path: Path, e2e_env: dict[str, str], sandbox_image: str) -> Iterator[Project]:
    """An initialised project with a bare remote; proves no container or process is left."""
    made = make_project(tmp_path, e2e_env)
    yield made
    leftovers = made.containers()
    if leftovers:
        subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True, check=False)
    assert leftovers == [], f"containers left behind: {leftovers}"
    assert working_in(made.root) == [], "processes left running in the project"


@pytest.fixture
def model(project: Project) -> Iterator[Callable[..., ModelServer]]:
    """Start the scripted model for this project: `model(scenario("build-loop"))`."""
    started: list[ModelServer] = []

    def start(played: Scenario | dict[str, object], *, key: str | None = None) -> ModelServer:
        parsed = played if isinstance(played, Scenario) else parse_scenario(played)
        record = project.root.parent / "model-requests.jsonl"
        server = ModelServer(parsed, record=record, key=key)  # key: only it is accepted
        started.append(server.start())
        project.env["ANTHROPIC_BASE_URL"] = server.url
        project.env["CLAUDE_CODE_OAUTH_TOKEN"] = FAKE_TOKEN
        return server

    yield start
    for server in started:
        server.stop()
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", server.port)) != 0, "model server still up"

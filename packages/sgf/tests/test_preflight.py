"""Missing prerequisites are clear errors before anything launches."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sgf import preflight
from sgf.config import SandboxKind
from sgf.errors import PreflightError, ProgramMissing

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Image = Callable[..., str]  # the `labelled` fixture (conftest.py)


def dead_engine(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`env` pointed at a Docker socket nobody listens on."""
    return {**env, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}


@pytest.fixture
def env(tmp_path: Path, isolated_home: Path) -> dict[str, str]:
    ralph = tmp_path / "bin" / "ralph"
    ralph.parent.mkdir()
    ralph.write_text("#!/bin/sh\nexit 0\n")
    ralph.chmod(0o755)
    return {
        "PATH": f"{ralph.parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(isolated_home),
    }


@pytest.mark.docker
def test_all_present_returns_ralph(tmp_path: Path, env: dict[str, str], labelled: Image) -> None:
    env["ANTHROPIC_API_KEY"] = "sk-test"
    image = labelled()
    assert preflight.check(tmp_path, template=image, sandbox=None, env=env).endswith("/ralph")


def test_every_gap_is_named_at_once(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(PreflightError) as e:
        preflight.check(tmp_path, template="img", sandbox=None, env=dead_engine(env, tmp_path))
    message = str(e.value)
    assert "Docker engine is not reachable" in message
    assert "no Claude Code credentials" in message


def test_a_missing_docker_command_is_named_as_such(tmp_path: Path, env: dict[str, str]) -> None:
    env["PATH"] = str(tmp_path / "bin")
    env["CLAUDE_CODE_OAUTH_TOKEN"] = "t"
    with pytest.raises(PreflightError) as e:
        preflight.check(tmp_path, template="img", sandbox=None, env=env)
    assert str(e.value) == (
        "cannot launch:\n  - the `docker` command is not installed (not on PATH); install "
        'Docker, or set sandbox = "none" in .sgf/config.toml to run agents on this machine'
    )


@pytest.mark.docker
def test_missing_image_says_how_to_build_it(
    tmp_path: Path, env: dict[str, str], docker_engine: bool
) -> None:
    env["ANTHROPIC_API_KEY"] = "k"
    missing = "springfield-no-such-image:1"
    with pytest.raises(
        PreflightError, match=rf"image {missing} is missing; run `sgf sandbox build`"
    ):
        preflight.check(tmp_path, template=missing, sandbox=None, env=env)


@pytest.mark.docker
def test_a_stage_on_codex_needs_codex_in_the_image_and_its_key(
    tmp_path: Path, env: dict[str, str], labelled: Image
) -> None:
    plain = labelled()
    with pytest.raises(PreflightError) as e:
        preflight.check(tmp_path, template=plain, sandbox=None, env=env, agent="codex")
    message = str(e.value)
    assert f"the sandbox image {plain} has no codex" in message
    assert "no codex credentials: set OPENAI_API_KEY" in message
    assert "Claude Code" not in message
    with_codex = labelled(**{"springfield.agent.codex": "0.169.0"})
    env["OPENAI_API_KEY"] = "sk-test"
    assert preflight.check(tmp_path, template=with_codex, sandbox=None, env=env, agent="codex")


def test_login_file_counts_as_credentials(tmp_path: Path, env: dict[str, str]) -> None:
    creds = Path(env["HOME"]) / ".claude" / ".credentials.json"
    creds.parent.mkdir()
    creds.write_text("{}")
    assert preflight.has_credentials(env)
    assert not preflight.has_credentials({"HOME": str(tmp_path)})


def test_sandbox_none_skips_docker_checks(tmp_path: Path, env: dict[str, str]) -> None:
    env["PATH"] = str(tmp_path / "bin")  # no docker at all
    env["ANTHROPIC_API_KEY"] = "k"
    ralph = preflight.check(tmp_path, template="img", sandbox=SandboxKind.NONE, env=env)
    assert ralph == str(tmp_path / "bin" / "ralph")
    with pytest.raises(PreflightError, match="`docker` command is not installed"):
        preflight.check(tmp_path, template="img", sandbox=None, env=env)


def test_skip_preflight_skips_all_but_ralph(tmp_path: Path, env: dict[str, str]) -> None:
    env["SGF_SKIP_PREFLIGHT"] = "1"
    preflight.check(tmp_path, template="img", sandbox=None, env=env)
    env["PATH"] = "/nonexistent"
    with pytest.raises(ProgramMissing, match="ralph not found"):
        preflight.check(tmp_path, template="img", sandbox=None, env=env)


@pytest.mark.process
def test_cli_refuses_to_launch_without_docker(
    project: Path, sgf: Run, fake_ralph: Any, tmp_path: Path
) -> None:
    env = dead_engine(fake_ralph.env(), tmp_path)
    done = sgf(project, "build", env={**env, "SGF_SKIP_PREFLIGHT": ""})
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot launch:\n  - the Docker engine is not reachable")
    assert not fake_ralph.record.exists()
    assert not (project / ".sgf/run").exists() or not list((project / ".sgf/run").iterdir())


def build_with_image_labels(
    project: Path, sgf: Run, fake_ralph: Any, image: str
) -> subprocess.CompletedProcess[str]:
    """`sgf build -a` with preflight on, the project's sandbox image being `image`."""
    config = project / ".sgf" / "config.toml"
    kept = [line for line in config.read_text().splitlines() if "docker_template" not in line]
    config.write_text("\n".join([*kept, f'docker_template = "{image}"', ""]))
    subprocess.run(["git", "commit", "-qam", "use the image"], cwd=project, check=True)
    env = {**fake_ralph.env(), "SGF_SKIP_PREFLIGHT": "", "ANTHROPIC_API_KEY": "sk-test"}
    done = sgf(project, "build", "-a", env=env)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.docker
def test_build_warns_when_the_sandbox_image_is_stale(
    project: Path, sgf: Run, fake_ralph: Any, labelled: Image
) -> None:
    from sgf.image import sandboximage

    labels = {
        sandboximage.HASH_LABEL: "0" * 32,
        sandboximage.BASE_LABEL: "b",
        sandboximage.CLAUDE_LABEL: "1",
    }
    image = labelled(**labels)
    done = build_with_image_labels(project, sgf, fake_ralph, image)
    expected = f"sgf: warning: the sandbox image {image} is stale"
    assert expected in done.stderr
    assert fake_ralph.record.exists()


@pytest.mark.docker
def test_build_warns_when_the_images_pn_differs_from_the_hosts(
    project: Path, sgf: Run, fake_ralph: Any, labelled: Image
) -> None:
    from sgf.image import sandboximage

    image = labelled(**{sandboximage.HASH_LABEL: "0" * 32, sandboximage.PN_LABEL: "0.0.1"})
    done = build_with_image_labels(project, sgf, fake_ralph, image)
    host = sandboximage.host_pn_version()
    expected = (
        f"sgf: warning: the sandbox image {image} has pn 0.0.1 but this machine has pn {host}"
    )
    assert expected in done.stderr

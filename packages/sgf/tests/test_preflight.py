"""Missing prerequisites are clear errors before anything launches."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sgf import config as sgf_config
from sgf import preflight
from sgf.config import SandboxKind
from sgf.errors import PreflightError, ProgramMissing

Run = Callable[..., "subprocess.CompletedProcess[str]"]


def fake_docker(bin_dir: Path, *, info: int, inspect: int) -> None:
    """A `docker` that answers `info` and `image inspect` with the given exit codes."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "docker"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in info) exit {info};; image) echo "[]"; exit {inspect};; esac\nexit 3\n'
    )
    script.chmod(0o755)


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


def test_all_present_returns_ralph(tmp_path: Path, env: dict[str, str]) -> None:
    fake_docker(tmp_path / "bin", info=0, inspect=0)
    env["ANTHROPIC_API_KEY"] = "sk-test"
    assert preflight.check(tmp_path, template="img", sandbox=None, env=env).endswith("/ralph")


def test_every_gap_is_named_at_once(tmp_path: Path, env: dict[str, str]) -> None:
    fake_docker(tmp_path / "bin", info=1, inspect=0)
    with pytest.raises(PreflightError) as e:
        preflight.check(tmp_path, template="img", sandbox=None, env=env)
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


def test_missing_image_says_how_to_build_it(tmp_path: Path, env: dict[str, str]) -> None:
    fake_docker(tmp_path / "bin", info=0, inspect=1)
    env["ANTHROPIC_API_KEY"] = "k"
    with pytest.raises(PreflightError, match=r"image img:1 is missing; run `sgf sandbox build`"):
        preflight.check(tmp_path, template="img:1", sandbox=None, env=env)


def test_a_stage_on_codex_needs_codex_in_the_image_and_its_key(
    tmp_path: Path, env: dict[str, str]
) -> None:
    fake_docker(tmp_path / "bin", info=0, inspect=0)
    with pytest.raises(PreflightError) as e:
        preflight.check(tmp_path, template="img", sandbox=None, env=env, agent="codex")
    message = str(e.value)
    assert "the sandbox image img has no codex" in message
    assert "no codex credentials: set OPENAI_API_KEY" in message
    assert "Claude Code" not in message
    labelled = tmp_path / "bin" / "docker"
    labelled.write_text(
        '#!/bin/sh\ncase "$1" in info) exit 0;; '
        'image) echo \'{"springfield.agent.codex": "0.169.0"}\';; esac\n'
    )
    env["OPENAI_API_KEY"] = "sk-test"
    assert preflight.check(tmp_path, template="img", sandbox=None, env=env, agent="codex")


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


def test_cli_refuses_to_launch_without_docker(
    project: Path, sgf: Run, fake_ralph: Any, tmp_path: Path
) -> None:
    fake_docker(tmp_path / "fakebin", info=1, inspect=1)
    env = fake_ralph.env()
    del env["SGF_SKIP_PREFLIGHT"]
    path = f"{tmp_path / 'fakebin'}{os.pathsep}{os.environ['PATH']}"
    done = sgf(project, "build", env={**env, "SGF_SKIP_PREFLIGHT": "", "PATH": path})
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot launch:\n  - the Docker engine is not reachable")
    assert not fake_ralph.record.exists()
    assert not (project / ".sgf/run").exists() or not list((project / ".sgf/run").iterdir())


def build_with_image_labels(
    project: Path, sgf: Run, fake_ralph: Any, bin_dir: Path, labels: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`sgf build -a` with preflight on, against a `docker` whose image carries `labels`."""
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f"#!/bin/sh\necho '{json.dumps(labels)}'\nexit 0\n")
    (bin_dir / "docker").chmod(0o755)
    env = {**fake_ralph.env(), "SGF_SKIP_PREFLIGHT": "", "ANTHROPIC_API_KEY": "sk-test"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    done = sgf(project, "build", "-a", env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_build_warns_when_the_sandbox_image_is_stale(
    project: Path, sgf: Run, fake_ralph: Any, tmp_path: Path
) -> None:
    from sgf import sandboximage

    labels = {
        sandboximage.HASH_LABEL: "0" * 32,
        sandboximage.BASE_LABEL: "b",
        sandboximage.CLAUDE_LABEL: "1",
    }
    done = build_with_image_labels(project, sgf, fake_ralph, tmp_path / "fakebin", labels)
    image = sgf_config.load(project).docker_template
    expected = f"sgf: warning: the sandbox image {image} is stale"
    assert expected in done.stderr
    assert fake_ralph.record.exists()


def test_build_warns_when_the_images_pn_differs_from_the_hosts(
    project: Path, sgf: Run, fake_ralph: Any, tmp_path: Path
) -> None:
    from sgf import sandboximage

    labels = {sandboximage.HASH_LABEL: "0" * 32, sandboximage.PN_LABEL: "0.0.1"}
    done = build_with_image_labels(project, sgf, fake_ralph, tmp_path / "fakebin", labels)
    image = sgf_config.load(project).docker_template
    host = sandboximage.host_pn_version()
    expected = (
        f"sgf: warning: the sandbox image {image} has pn 0.0.1 but this machine has pn {host}"
    )
    assert expected in done.stderr

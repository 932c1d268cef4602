"""`sgf doctor`: one line per finding with its fix, exit 1 on a problem; run as the
real console script against a real Docker engine (or a dead DOCKER_HOST)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ralph.shared import pids

from sgf import claude
from sgf.image import sandboximage

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

SGF = Path(sys.executable).parent / "sgf"
Image = Callable[..., str]  # the `labelled` fixture (conftest.py)


@pytest.fixture
def shop(project_template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(project_template, root, symlinks=True)
    return root


def doctor(root: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [str(SGF), "doctor", "--json", *args], cwd=root, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    found = {f["check"]: f for f in json.loads(done.stdout)["findings"]}
    return done.returncode, found


def use_image(root: Path, image: str) -> None:
    path = root / ".sgf" / "config.toml"
    text = "".join(
        line for line in path.read_text().splitlines(keepends=True) if "docker_template" not in line
    )
    path.write_text(text + f'docker_template = "{image}"\n')


def test_docker_unreachable_is_a_problem_with_its_fix(
    shop: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**tool_env, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    code, found = doctor(shop, env)
    assert code == 1
    assert found["docker"]["level"] == "problem"
    assert "not reachable" in found["docker"]["message"]
    assert 'sandbox = "none"' in found["docker"]["fix"]
    assert "image" not in found  # nothing asked of an engine that is not there
    text = subprocess.run(
        [str(SGF), "doctor"], cwd=shop, env=env, capture_output=True, text=True, check=False
    )
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert len(lines) == len(found)  # one line per finding, its fix on it
    [line] = [x for x in lines if " docker " in x]
    assert line.startswith("problem")
    assert "start Docker" in line


@pytest.mark.docker
def test_a_missing_image_is_a_problem(
    shop: Path, tool_env: dict[str, str], docker_engine: bool
) -> None:
    use_image(shop, f"springfield-doctor-test:missing-{uuid.uuid4().hex[:8]}")
    code, found = doctor(shop, {**tool_env, "ANTHROPIC_API_KEY": "k"})
    assert code == 1
    assert found["docker"]["level"] == "ok"
    assert found["image"]["level"] == "problem"
    assert "is missing" in found["image"]["message"]
    assert found["image"]["fix"] == "run `sgf sandbox build`"


@pytest.mark.docker
def test_an_image_older_than_the_installed_pn_is_a_problem(
    shop: Path, tool_env: dict[str, str], labelled: Image
) -> None:
    old = labelled(**{sandboximage.PN_LABEL: "0.0.1", sandboximage.CLAUDE_LABEL: claude.VERSION})
    use_image(shop, old)
    code, found = doctor(shop, {**tool_env, "ANTHROPIC_API_KEY": "k"})
    assert code == 1
    image = found["image"]
    assert image["level"] == "problem"
    assert f"has pn 0.0.1, this machine has pn {sandboximage.host_pn_version()}" in image["message"]
    assert image["fix"] == "run `sgf sandbox build`"


@pytest.mark.docker
def test_a_ready_project_has_no_problem(
    shop: Path, tool_env: dict[str, str], labelled: Image, base_image: str
) -> None:
    pn = sandboximage.host_pn_version() or ""
    use_image(
        shop, labelled(**{sandboximage.PN_LABEL: pn, sandboximage.CLAUDE_LABEL: claude.VERSION})
    )
    env = {**tool_env, "ANTHROPIC_API_KEY": "k", "SPRINGFIELD_BASE_IMAGE": base_image}
    code, found = doctor(shop, env)
    assert {k: f["level"] for k, f in found.items() if k != "disk"} == {
        "ralph": "ok", "docker": "ok", "base_image": "ok", "image": "ok", "network": "ok",
        "credentials": "ok", "pensa": "ok", "pid_files": "ok",
    }  # fmt: skip
    assert code == 0


def use_base(root: Path, base: str) -> None:
    path = root / ".sgf" / "config.toml"
    path.write_text(path.read_text() + f'base = "{base}"\n')


@pytest.mark.docker
def test_the_base_checked_is_the_projects_not_the_default(
    shop: Path, tool_env: dict[str, str], labelled: Image
) -> None:
    """A project built from another base is not warned about debian:bookworm-slim."""
    pn = sandboximage.host_pn_version() or ""
    base = labelled()
    use_base(shop, base)
    use_image(
        shop, labelled(**{sandboximage.PN_LABEL: pn, sandboximage.CLAUDE_LABEL: claude.VERSION})
    )
    code, found = doctor(shop, {**tool_env, "ANTHROPIC_API_KEY": "k"})
    assert found["base_image"] == {
        "check": "base_image", "level": "ok", "message": f"the base image {base} is here",
        "fix": None,
    }  # fmt: skip
    assert code == 0


@pytest.mark.docker
def test_a_missing_base_waits_for_a_rebuild_when_the_image_is_built(
    shop: Path, tool_env: dict[str, str], labelled: Image
) -> None:
    pn = sandboximage.host_pn_version() or ""
    gone = f"springfield-doctor-test:gone-{uuid.uuid4().hex[:8]}"
    built = {sandboximage.PN_LABEL: pn, sandboximage.CLAUDE_LABEL: claude.VERSION}
    use_image(shop, labelled(**built, **{sandboximage.BASE_LABEL: gone}))
    code, found = doctor(shop, {**tool_env, "ANTHROPIC_API_KEY": "k"})
    base = found["base_image"]
    assert base["level"] == "ok"  # the image's own label names the base it came from
    assert base["message"].startswith(f"the base image {gone} is not here; for a rebuild, ")
    assert code == 0


@pytest.mark.docker
@pytest.mark.parametrize(
    ("base", "said"),
    [
        ("springfield-base:doctor-gone", "would make it again, but debootstrap is"),
        ("registry.invalid:5000/none:1", "`sgf sandbox base` makes"),
    ],
)
def test_a_missing_base_the_build_cannot_get_alone_is_a_warning(
    shop: Path,
    tool_env: dict[str, str],
    tmp_path: Path,
    base: str,
    said: str,
    docker_engine: bool,
) -> None:
    use_base(shop, base)
    use_image(shop, f"springfield-doctor-test:missing-{uuid.uuid4().hex[:8]}")
    env = {**tool_env, "ANTHROPIC_API_KEY": "k", "SPRINGFIELD_CACHE": str(tmp_path / "empty")}
    env["PATH"] = os.pathsep.join(  # a machine without debootstrap
        p for p in env["PATH"].split(os.pathsep) if not Path(p, "debootstrap").exists()
    )
    _, found = doctor(shop, env)
    assert found["base_image"]["level"] == "warning"
    assert found["base_image"]["message"] == f"the base image {base} is not here"
    assert said in found["base_image"]["fix"]


def test_no_credentials_and_missing_hooks_are_problems(
    shop: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    (shop / ".git" / "hooks" / "pre-commit").unlink()
    env = {**tool_env, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    code, found = doctor(shop, env)
    assert code == 1
    assert found["credentials"]["level"] == "problem"
    assert "claude setup-token" in found["credentials"]["fix"]
    assert "`--offline` needs none" in found["credentials"]["fix"]  # a newcomer's way in
    assert found["pensa"]["level"] == "problem"
    assert "pn init" in found["pensa"]["message"]


@pytest.mark.docker
@pytest.mark.claude
def test_a_build_whose_named_base_cannot_be_pulled_names_the_cause_and_how_to_make_one(
    tool_env: dict[str, str], claude_bin: Path, tmp_path: Path, docker_engine: bool
) -> None:
    image = f"springfield-doctor-test:{uuid.uuid4().hex[:12]}"
    done = subprocess.run(
        [str(SGF), "sandbox", "build", "--image", image, "--base", "registry.invalid:5000/no:1",
         "--claude-binary", str(claude_bin)],
        cwd=tmp_path, env={**tool_env, "TMPDIR": str(tmp_path)}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith("error: cannot get the image registry.invalid:5000/no:1: ")
    assert "no such host" in error or "registry.invalid:5000/v2" in error  # the engine's words
    assert "`sgf sandbox base` makes springfield-base:bookworm" in error
    assert "`--base springfield-base:bookworm`" in error  # a named base is never swapped
    inspected = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
    assert inspected.returncode != 0  # nothing was built


def dead_docker(tool_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**tool_env, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}


def test_a_damaged_tracker_is_said_in_pns_words_with_pns_fix(
    shop: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    (shop / ".pensa" / "db.sqlite").write_bytes(b"\x00garbage, not SQLite" * 300)
    code, found = doctor(shop, dead_docker(tool_env, tmp_path))
    assert code == 1
    pensa = found["pensa"]
    assert pensa["level"] == "problem"
    assert pensa["message"].startswith(f"{shop / '.pensa' / 'db.sqlite'} is damaged (not a SQLite")
    assert pensa["fix"] == "`pn doctor --fix`"
    assert "Expecting value" not in pensa["message"]


def test_pn_that_cannot_run_its_doctor_is_quoted_not_a_json_error(
    shop: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    db = shop / ".pensa" / "db.sqlite"
    db.unlink(missing_ok=True)
    db.symlink_to(tmp_path / "elsewhere.sqlite")  # pn refuses to follow a planted link
    code, found = doctor(shop, dead_docker(tool_env, tmp_path))
    assert code == 1
    pensa = found["pensa"]
    assert pensa["message"].startswith("`pn doctor` could not run: ")
    assert "is a symbolic link" in pensa["message"]
    assert "Expecting value" not in pensa["message"]
    assert pensa["fix"] == "run `pn doctor` to see it"


def test_a_missing_docker_command_is_named_as_such(
    shop: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    only_git = tmp_path / "bin"
    only_git.mkdir()
    git_path = shutil.which("git")
    assert git_path is not None
    (only_git / "git").symlink_to(git_path)
    env = {**tool_env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{only_git}"}
    code, found = doctor(shop, env)
    assert code == 1
    assert found["docker"]["message"] == "the `docker` command is not installed (not on PATH)"
    assert "install Docker" in found["docker"]["fix"]
    assert "image" not in found


def test_a_stale_pid_file_is_a_warning_and_a_running_loop_is_not(
    shop: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    run = shop / ".sgf" / "run"
    run.mkdir(parents=True, exist_ok=True)
    me = os.getpid()
    started = pids.start_time(me)
    assert started is not None
    (run / "build-20260101-000000.pid").write_text(f"{me} {started}\n")  # alive: this test
    (run / "build-20250101-000000.pid").write_text(f"{me} {started + 1}\n")  # a reused PID
    (run / "spec-20250101-000000.pid").write_text("garbage\n")
    env = {**dead_docker(tool_env, tmp_path), "ANTHROPIC_API_KEY": "k"}
    _, found = doctor(shop, env)
    stale = found["pid_files"]
    assert stale["level"] == "warning"
    assert stale["message"] == (
        "stale PID files .sgf/run/build-20250101-000000.pid, .sgf/run/spec-20250101-000000.pid: "
        "the sgf that ran those loops is gone (it crashed)"
    )
    assert stale["fix"].startswith("the next loop you start recovers it")
    for path in run.glob("*-2025*.pid"):
        path.unlink()
    _, found = doctor(shop, env)
    assert found["pid_files"]["level"] == "ok"


def configure_agents(root: Path, text: str) -> None:
    path = root / ".sgf" / "config.toml"
    path.write_text(path.read_text() + text)


def test_keys_and_binaries_of_the_agents_the_stages_run_on_this_machine(
    shop: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    configure_agents(shop, 'sandbox = "none"\nagent = "codex"\n[stages.spec]\nagent = "gemini"\n')
    code, found = doctor(shop, tool_env)
    assert code == 1
    assert "credentials" not in found  # no stage runs claude
    assert found["codex_key"]["level"] == "problem"
    assert found["codex_key"]["message"] == (
        "OPENAI_API_KEY is not set, and codex needs it (codex runs the build, verify, test-plan, "
        "test, issues-log, issues-plan, review stages)"
    )
    assert found["gemini_key"]["message"] == (
        "GEMINI_API_KEY is not set, and gemini needs it (gemini runs the spec stage)"
    )
    assert found["codex"]["message"] == (
        "codex is not on PATH (codex runs the build, verify, test-plan, test, issues-log, "
        'issues-plan, review stages on this machine: sandbox = "none")'
    )
    assert found["gemini"]["level"] == "problem"
    bin_dir = tmp_path / "agents"
    bin_dir.mkdir()
    for name in ("codex", "gemini"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    env = {
        **tool_env,
        "PATH": f"{bin_dir}{os.pathsep}{tool_env['PATH']}",
        "OPENAI_API_KEY": "k",
        "GEMINI_API_KEY": "k",
    }
    code, found = doctor(shop, env)
    levels = {k: found[k]["level"] for k in ("codex_key", "gemini_key", "codex", "gemini")}
    assert set(levels.values()) == {"ok"}


@pytest.mark.parametrize(
    ("config", "level", "says"),
    [
        (
            'allow = ["docs.python.org"]\n',
            "ok",
            "allow-list: the model through ralph's key proxy, pypi.org, files.pythonhosted.org, "
            "docs.python.org; keys stay on the host",
        ),
        (
            'network = "open"\n',
            "warning",
            "network = 'open': agents reach whatever the container can (keys still stay on the "
            "host)",
        ),
        (
            'sandbox = "none"\n',
            "warning",
            'sandbox = "none": no allow-list and no key proxy; agents have this machine\'s '
            "network, files and keys",
        ),
    ],
)
def test_doctor_says_what_the_agents_can_reach(
    shop: Path, tool_env: dict[str, str], config: str, level: str, says: str
) -> None:
    """The allow-list names its hosts; an opt-out is a warning that says what it gives up."""
    configure_agents(shop, config)
    env = {**tool_env, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    _, found = doctor(shop, env)
    assert (found["network"]["level"], found["network"]["message"]) == (level, says)


@pytest.mark.docker
def test_an_agent_a_stage_runs_that_the_image_lacks_is_a_problem(
    shop: Path, tool_env: dict[str, str], labelled: Image
) -> None:
    pn = sandboximage.host_pn_version() or ""
    image = labelled(
        **{
            sandboximage.PN_LABEL: pn,
            sandboximage.CLAUDE_LABEL: claude.VERSION,
            "springfield.agent.codex": "0.1",
        }
    )
    use_image(shop, image)
    configure_agents(shop, '[stages.build]\nagent = "codex"\n[stages.review]\nagent = "opencode"\n')
    env = {**tool_env, "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    code, found = doctor(shop, env)
    assert code == 1
    assert found["codex"] == {
        "check": "codex", "level": "ok", "message": f"the sandbox image {image} carries codex",
        "fix": None,
    }  # fmt: skip
    assert found["opencode"]["level"] == "problem"
    assert found["opencode"]["message"] == (
        f"the sandbox image {image} has no opencode (opencode runs the review stage)"
    )
    assert found["opencode"]["fix"].startswith("run `sgf sandbox build`")
    assert found["opencode_key"]["level"] == "ok"  # the same key as codex
    assert found["credentials"]["level"] == "ok"  # claude runs the other stages

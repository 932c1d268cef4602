"""The README's "Your first project" on a machine with Docker and no registry for images.

The block runs as written, in order, with the real tools and the real engine; only `sgf spec`
and `sgf build` (which need a model: their own end-to-end tests run them) are stood in for.
Docker Hub does not answer from the machines this suite runs on, so `sgf sandbox build` finds
no `debian:bookworm-slim`, makes (or finds) `springfield-base:bookworm` from Debian's mirror,
and remembers it; `sgf doctor` must then be clean, and stay clean after the sandbox image, or
a base of sgf's own, is removed and the plain command run again.

Every image a test builds is named for its project (`springfield-sandbox-python:<dir>-<hash of
its path>`) or carries a uuid, and is removed at the end; `springfield-base:bookworm` (made by
`make prereqs`, as `sgf sandbox base` makes it) is only ever used, never replaced.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e_harness.readme import block_with, run_shell

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(1800)]

NO_MODEL = 'sgf() { case "$1" in spec|build) echo "needs a model: sgf $*";; '
NO_MODEL += '*) command sgf "$@";; esac; }\n'
BUILD_TIMEOUT = 1500  # a cold build fetches the stack's packages from Debian's mirror


def config(root: Path) -> dict[str, object]:
    with (root / ".sgf" / "config.toml").open("rb") as f:
        return tomllib.load(f)


def image_exists(image: str) -> bool:
    found = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
    return found.returncode == 0


def doctor(root: Path, env: dict[str, str]) -> dict[str, tuple[str, str]]:
    done = subprocess.run(
        ["sgf", "doctor", "--json"], cwd=root, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    findings = json.loads(done.stdout)["findings"]
    return {f["check"]: (f["level"], f["message"]) for f in findings}


def assert_clean(root: Path, env: dict[str, str]) -> None:
    """`sgf doctor` finds nothing to warn about, let alone a problem."""
    found = doctor(root, env)
    assert {check: level for check, (level, _) in found.items()} == dict.fromkeys(found, "ok"), (
        found
    )
    assert {"docker", "base_image", "image", "credentials", "pensa"} <= set(found)


def git_status(root: Path) -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True
    )
    return done.stdout


@pytest.fixture
def newcomer(
    tmp_path: Path, e2e_env: dict[str, str], claude_bin: Path, base_image: str
) -> Iterator[dict[str, str]]:
    """A newcomer's shell: the tools on PATH, a Claude Code key (doctor checks one is set; no
    model is called), and the sandbox images the test's projects get removed afterwards."""
    env = {**e2e_env, "ANTHROPIC_API_KEY": "sk-ant-placeholder-never-sent", "NO_COLOR": "1"}
    yield env
    for project in tmp_path.glob("*/.sgf/config.toml"):
        image = str(config(project.parent.parent)["docker_template"])
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True, check=False)
        assert not image_exists(image)


def test_the_readme_commands_succeed_in_order_and_doctor_is_clean_afterwards(
    tmp_path: Path, newcomer: dict[str, str]
) -> None:
    block = block_with("sgf init --stack python")
    done = run_shell(NO_MODEL + block, cwd=tmp_path, env=newcomer, timeout=BUILD_TIMEOUT)
    root = tmp_path / "my-project"
    assert "needs a model: sgf spec" in done.stdout
    assert "needs a model: sgf build -a 20" in done.stdout
    settings = config(root)
    if "debian:bookworm-slim cannot be pulled" in done.stderr:  # no registry, as here
        assert settings["base"] == "springfield-base:bookworm"
        assert "the project's base image is now springfield-base:bookworm" in done.stderr
    else:  # a machine that reaches Docker Hub builds from the default and records nothing
        assert "base" not in settings
    image = str(settings["docker_template"])
    assert image_exists(image)
    assert git_status(root) == ""  # the base was recorded before the commit, as the README says
    assert_clean(root, newcomer)

    # The image goes (a `docker rmi`, a prune): the plain command builds it again from the
    # remembered base, without trying the registry, and changes nothing committed.
    subprocess.run(["docker", "rmi", image], capture_output=True, check=True)
    again = run_shell("sgf sandbox build", cwd=root, env=newcomer, timeout=BUILD_TIMEOUT)
    assert "cannot be pulled" not in again.stderr
    assert f"{image} built" in again.stdout
    assert git_status(root) == ""
    assert_clean(root, newcomer)


def test_a_removed_base_of_sgfs_own_is_made_again_by_the_plain_command(
    tmp_path: Path, newcomer: dict[str, str]
) -> None:
    base = f"springfield-base:e2e-{uuid.uuid4().hex[:12]}"
    root = tmp_path / "greeter"
    try:
        setup = f"git init -q {root.name} && cd {root.name} && sgf init --stack python\n"
        setup += f"sgf sandbox build --base {base}\n"
        setup += 'git add -A && git commit -qm "chore: sgf init"\n'
        made = run_shell(setup, cwd=tmp_path, env=newcomer, timeout=BUILD_TIMEOUT)
        assert f"importing the Debian root file system as {base}" in made.stderr
        assert config(root)["base"] == base
        image = str(config(root)["docker_template"])
        assert_clean(root, newcomer)

        subprocess.run(["docker", "rmi", image, base], capture_output=True, check=True)
        again = run_shell("sgf sandbox build", cwd=root, env=newcomer, timeout=BUILD_TIMEOUT)
        assert f"importing the Debian root file system as {base}" in again.stderr
        assert f"{image} built" in again.stdout
        assert git_status(root) == ""
        assert_clean(root, newcomer)
    finally:
        subprocess.run(["docker", "rmi", "-f", base], capture_output=True, check=False)
        assert not image_exists(base)

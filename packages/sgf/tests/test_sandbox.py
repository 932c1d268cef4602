"""The sandbox image: content hash, staleness, and a real build (once per session)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import pytest

from sgf import claude, sandbox
from sgf.errors import SgfError

Run = Callable[..., "subprocess.CompletedProcess[str]"]
WORKSPACE = Path(__file__).resolve().parents[3]
PENSA = WORKSPACE / "packages" / "pensa"
TEST_IMAGE = "springfield-sandbox:sgf-test"


def copy_pensa(dest: Path) -> Path:
    shutil.copytree(PENSA, dest, ignore=shutil.ignore_patterns("__pycache__", "tests", ".*"))
    return dest


def test_pensa_source_is_found_from_the_editable_install() -> None:
    assert sandbox.pensa_source() == PENSA


def test_explicit_pensa_source_must_be_a_project(tmp_path: Path) -> None:
    with pytest.raises(SgfError, match=r"has no pyproject\.toml"):
        sandbox.pensa_source(tmp_path)
    assert sandbox.pensa_source(PENSA) == PENSA


def test_content_hash_is_stable_and_follows_every_input(tmp_path: Path) -> None:
    src = copy_pensa(tmp_path / "pensa")
    first = sandbox.content_hash(base="b", claude_version="1", pensa_src=src)
    assert first == sandbox.content_hash(base="b", claude_version="1", pensa_src=src)
    assert first != sandbox.content_hash(base="c", claude_version="1", pensa_src=src)
    assert first != sandbox.content_hash(base="b", claude_version="2", pensa_src=src)
    (src / "src" / "pensa" / "__init__.py").write_text("# changed\n")
    assert first != sandbox.content_hash(base="b", claude_version="1", pensa_src=src)


def fake_docker_with_labels(bin_dir: Path, labels: dict[str, str] | None) -> dict[str, str]:
    bin_dir.mkdir()
    script = bin_dir / "docker"
    body = "exit 1" if labels is None else f"echo '{json.dumps(labels)}'"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"}


def test_staleness_warns_only_for_our_images_with_changed_inputs(tmp_path: Path) -> None:
    current = sandbox.content_hash(base="b", claude_version="1", pensa_src=PENSA)
    ours = {sandbox.HASH_LABEL: current, sandbox.BASE_LABEL: "b", sandbox.CLAUDE_LABEL: "1"}
    env = fake_docker_with_labels(tmp_path / "a", ours)
    assert sandbox.staleness(tmp_path, "img", env=env) == []
    env = fake_docker_with_labels(tmp_path / "b", {**ours, sandbox.HASH_LABEL: "old"})
    (warning,) = sandbox.staleness(tmp_path, "img", env=env)
    assert "img is stale" in warning
    assert "sgf sandbox build" in warning
    env = fake_docker_with_labels(tmp_path / "c", {"maintainer": "someone"})
    assert sandbox.staleness(tmp_path, "img", env=env) == []
    env = fake_docker_with_labels(tmp_path / "d", None)
    assert sandbox.staleness(tmp_path, "img", env=env) == []


def test_claude_binary_is_reused_from_the_cache(tmp_path: Path) -> None:
    env = {"SPRINGFIELD_CACHE": str(tmp_path), "PATH": "/nonexistent"}
    path = tmp_path / "claude-code-9.9.9" / "node_modules" / claude.package() / "claude"
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    assert claude.binary("9.9.9", env=env) == path
    with pytest.raises(SgfError, match="npm not found"):
        claude.binary("9.9.8", env=env)


def test_cache_dir_follows_springfield_cache_then_xdg_then_home() -> None:
    assert claude.cache_dir({"SPRINGFIELD_CACHE": "/c"}) == Path("/c")
    assert claude.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/springfield")
    assert claude.cache_dir({"HOME": "/h"}) == Path("/h/.cache/springfield")


def _real_cache() -> dict[str, str]:
    """Where make test's scripts/ensure-claude.sh caches claude (the real home, not a test's)."""
    env = dict(os.environ)
    env.setdefault("SPRINGFIELD_CACHE", str(claude.cache_dir(env)))
    return env


class Built(NamedTuple):
    image: str
    pensa_src: Path  # a snapshot: the workspace's pensa may change while the suite runs


def prune_old_test_images(keep: str) -> None:
    """Remove test images of earlier inputs that are over an hour old (never `keep`).

    Tags carry the content hash so concurrent sessions with different inputs (engineers
    editing pensa while a suite runs) never overwrite each other's image.
    """
    listed = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}} {{.CreatedAt}}",
         "springfield-sandbox"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    cutoff = time.time() - 3600
    for line in listed.splitlines():
        tag, created = line.split(" ", 1)
        if not tag.startswith(TEST_IMAGE + "-") or tag == keep:
            continue
        when = datetime.strptime(" ".join(created.split()[:2]), "%Y-%m-%d %H:%M:%S")
        if when.replace(tzinfo=UTC).timestamp() < cutoff:
            subprocess.run(["docker", "rmi", tag], capture_output=True, check=False)


@pytest.fixture(scope="session")
def sandbox_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The sandbox image built once per session from the real inputs (reused when current)."""
    src = copy_pensa(tmp_path_factory.mktemp("pensa-snapshot") / "pensa")
    digest = sandbox.content_hash(base=base_image, claude_version=claude.VERSION, pensa_src=src)
    image = f"{TEST_IMAGE}-{digest[:12]}"
    argv = [str(Path(sys.executable).parent / "sgf"), "sandbox", "build", "--image", image,
            "--base", base_image, "--pensa-source", str(src)]  # fmt: skip
    binary = os.environ.get("SPRINGFIELD_CLAUDE")
    if binary:
        argv += ["--claude-binary", binary]
    env = {**_real_cache(), "CLAUDE_CODE_VERSION": claude.VERSION}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    prune_old_test_images(keep=image)
    return Built(image, src)


def docker_run(image: str, *command: str) -> str:
    done = subprocess.run(
        ["docker", "run", "--rm", image, *command], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.docker
def test_sandbox_image_has_claude_pn_precommit_and_git(sandbox_image: Built) -> None:
    image = sandbox_image.image
    assert docker_run(image, "claude", "--version").startswith(claude.VERSION)
    assert "claim-next" in docker_run(image, "pn", "--help")
    assert "pre-commit" in docker_run(image, "pre-commit", "--version")
    assert "git version" in docker_run(image, "git", "--version")


@pytest.mark.docker
def test_sandbox_image_is_labelled_and_a_rebuild_is_skipped(
    sandbox_image: Built, base_image: str
) -> None:
    image, src = sandbox_image
    labels = json.loads(
        subprocess.run(
            ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", image],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    expected = sandbox.content_hash(base=base_image, claude_version=claude.VERSION, pensa_src=PENSA)
    assert labels[sandbox.HASH_LABEL] == expected
    assert labels[sandbox.BASE_LABEL] == base_image
    again = subprocess.run(
        [str(Path(sys.executable).parent / "sgf"), "sandbox", "build", "--image", image,
         "--base", base_image, "--pensa-source", str(src), "--claude-binary", sys.executable],
        env=_real_cache(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"{image} up to date ({sandbox.HASH_LABEL}={expected})" in again.stdout

"""Installing the pinned agent CLIs: npm runs once per version, a failed install never takes
the cache's place, and a bundled install carries its own launcher into the image."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from sgf import agents
from sgf.errors import ProgramMissing, SgfError


@pytest.fixture
def cache(tmp_path: Path) -> dict[str, str]:
    return {"SPRINGFIELD_CACHE": str(tmp_path / "cache"), "PATH": os.environ["PATH"]}


def test_a_cached_install_is_used_without_npm(cache: dict[str, str]) -> None:
    version, _, script, node = agents.BUNDLED["gemini"]
    install = Path(cache["SPRINGFIELD_CACHE"]) / f"gemini-{version}"
    for inside in (script, node):
        (install / inside).parent.mkdir(parents=True, exist_ok=True)
        (install / inside).write_text("")
    no_npm = {**cache, "PATH": "/nonexistent"}
    assert agents.binary("gemini", env=no_npm) == (version, install)


def test_without_npm_a_missing_agent_is_one_line(cache: dict[str, str]) -> None:
    with pytest.raises(ProgramMissing, match="npm"):
        agents.binary("codex", env={**cache, "PATH": "/nonexistent"})


@pytest.mark.process
def test_an_install_without_the_binary_is_refused_and_leaves_no_cache(
    cache: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("npm") is None:
        pytest.fail("npm is a prerequisite (scripts/ensure-agents.sh)")
    empty = tmp_path / "empty-package"
    empty.mkdir()
    (empty / "package.json").write_text(json.dumps({"name": "empty-package", "version": "1.0.0"}))
    monkeypatch.setitem(agents.PINNED, "fake", ("1", str(empty), "bin/fake"))
    with pytest.raises(SgfError, match="no fake came with it"):
        agents.binary("fake", env=cache)
    assert not (Path(cache["SPRINGFIELD_CACHE"]) / "fake-1").exists()


def test_a_bundled_install_goes_into_the_image_with_a_launcher(tmp_path: Path) -> None:
    _, _, script, node = agents.BUNDLED["gemini"]
    install = tmp_path / "gemini"
    (install / script).parent.mkdir(parents=True)
    (install / script).write_text("console.log('gemini')\n")
    (install / node).parent.mkdir(parents=True)
    (install / node).write_text("")
    (install / "node_modules" / ".bin").mkdir()
    (install / "node_modules" / ".bin" / "gemini").symlink_to(install / script)
    dest = tmp_path / "context" / "gemini"
    agents.place_install("gemini", install, dest)
    launch = dest / "launch"
    here = f"{agents.IMAGE_DIR}/gemini"
    assert launch.read_text() == f'#!/bin/sh\nexec "{here}/{node}" "{here}/{script}" "$@"\n'
    assert launch.stat().st_mode & stat.S_IXUSR
    assert (dest / "node_modules" / ".bin" / "gemini").is_symlink()  # copied as it is
    assert (dest / script).read_text() == "console.log('gemini')\n"


def test_other_machines_have_no_pinned_build(
    cache: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("platform.machine", lambda: "aarch64")
    with pytest.raises(SgfError, match="no pinned codex build for aarch64"):
        agents.binary("codex", env=cache)

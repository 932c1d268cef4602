"""The install commands of README "Install" and docs/install.md, run as written:
`uv tool install` of sgf with pensa and ralph puts all three on PATH, and pensa alone gives a
`pn init` that works in any repository.

uv installs into directories of the test's own (UV_TOOL_DIR, UV_TOOL_BIN_DIR), and the commands
run with only those directories and the OS on PATH: nothing of the workspace's venv is seen.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.e2e_harness.readme import block_with, run_shell

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, str]:
    uv = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    assert Path(uv).is_file(), "uv is not installed (make env installs it into .tools/bin)"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(uv, bin_dir / "uv")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(
        PATH=os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"]),
        UV_TOOL_DIR=str(tmp_path / "tools"),
        UV_TOOL_BIN_DIR=str(bin_dir),
        PYTHONDONTWRITEBYTECODE="1",  # as on a machine where only the install can compile
    )
    return env


def compiled(tools: dict[str, str], tool: str) -> bool:
    """Whether the tool's environment holds pensa's bytecode (`--compile-bytecode`)."""
    venv = Path(tools["UV_TOOL_DIR"]) / tool
    return any(venv.glob("lib/python3*/site-packages/pensa/__pycache__/store.*.pyc"))


def sh(script: str, *, cwd: Path, env: dict[str, str]) -> str:
    return run_shell(script, cwd=cwd, env=env, timeout=600).stdout


def test_the_readme_install_command_puts_three_tools_on_path(
    tools: dict[str, str], tmp_path: Path
) -> None:
    block = block_with("--with-executables-from pensa,ralph")
    printed = sh(block, cwd=ROOT, env=tools)
    assert re.fullmatch(r"sgf \S+\npn \S+\nralph \S+\n", printed), printed
    for tool in ("sgf", "pn", "ralph"):
        found = Path(tools["UV_TOOL_BIN_DIR"]) / tool
        assert found.exists(), f"{tool} not on PATH"
    project = tmp_path / "project"
    project.mkdir()
    sh("git init -q && sgf init --stack python", cwd=project, env=tools)
    # docs/install.md's model-free command, as written, works from the installed tools
    served = sh(block_with("ralph.testing.model_server --help"), cwd=project, env=tools)
    assert "--scenario" in served
    assert (project / ".sgf" / "config.toml").is_file()
    assert compiled(tools, "sgf")


def test_pensa_alone_installs_and_inits_any_repository(
    tools: dict[str, str], tmp_path: Path
) -> None:
    block = block_with("uv tool install --compile-bytecode ./packages/pensa")
    install, use = block.split("\n", 1)
    sh(install, cwd=ROOT, env=tools)
    (tmp_path / "some-repo").mkdir()
    sh("git init -q some-repo", cwd=tmp_path, env=tools)
    sh(use, cwd=tmp_path, env=tools)
    repo = tmp_path / "some-repo"
    assert (repo / ".pensa").is_dir()
    assert "merge=pensa" in (repo / ".gitattributes").read_text()
    assert not (Path(tools["UV_TOOL_BIN_DIR"]) / "sgf").exists()
    assert compiled(tools, "pensa")

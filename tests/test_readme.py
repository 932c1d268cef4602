"""The manual's shell blocks run: the blocks that can run offline run for real in a
throw-away repository. That every `pn`, `sgf`, `ralph` and `make` command in them parses against
the real command-line definitions is scripts/check_docs.py's to say (tests/test_check_docs.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e_harness.readme import block_with, page
from tests.e2e_harness.readme import run_shell as run_block

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("line", "program"), [("bash_source", "sgf"), ("zsh_source", "sgf"), ("fish_source", "sgf")]
)
def test_the_completion_lines_print_a_script(line: str, program: str) -> None:
    for tool in ("pn", "ralph", "sgf"):
        variable = f"_{tool.upper()}_COMPLETE"
        done = subprocess.run(
            [str(BIN / tool)],
            env={**os.environ, variable: line},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert tool in done.stdout, done.stdout
        assert len(done.stdout) > 100, done.stdout
    assert f"_SGF_COMPLETE={line} {program}" in page("docs/install.md")


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "NO_COLOR": "1",
    }  # HOME and git's identity are the root conftest's isolated ones


def test_the_first_project_block_runs(tmp_path: Path, shell_env: dict[str, str]) -> None:
    """Run as written; the steps that need Docker and a model are the e2e tests' to run
    (tests/test_e2e_first_project.py runs this block with Docker and no registry)."""
    needs_docker = 'sgf() { case "$1" in sandbox|doctor|spec|build) echo "e2e: sgf $*";; '
    needs_docker += '*) command sgf "$@";; esac; }\n'
    done = run_block(
        needs_docker + block_with("sgf init --stack python"), cwd=tmp_path, env=shell_env
    )
    project = tmp_path / "my-project"
    assert (project / ".sgf" / "config.toml").is_file()
    assert (project / ".pensa").is_dir()
    assert "e2e: sgf build -a 20" in done.stdout
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True)
    assert log.stdout == "chore: sgf init\n"


def test_the_pensa_block_runs(tmp_path: Path, shell_env: dict[str, str]) -> None:
    """The pn walk-through line by line; its example ids stand for the issues it creates, in
    order (the bug, then its fix), and are replaced by the ids pn really made."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    block = block_with("pn create")
    placeholders = list(dict.fromkeys(re.findall(r"pn-[0-9a-f]{8}", block)))
    created: list[str] = []
    for line in block.splitlines():
        for placeholder, real in zip(placeholders, created, strict=False):
            line = line.replace(placeholder, real)
        done = run_block(line, cwd=tmp_path, env=shell_env)
        if line.startswith("pn create"):
            created.append(re.findall(r"pn-[0-9a-f]{8}", done.stdout)[0])
    assert len(created) == len(placeholders) == 2
    shown = run_block(f"pn show {created[0]} --json", cwd=tmp_path, env=shell_env).stdout
    assert re.search(r'"status": ?"closed"', shown), shown  # its last fix closed the bug

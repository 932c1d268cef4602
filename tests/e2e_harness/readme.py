"""The manual's shell blocks (README.md, then docs/*.md), and running one as a newcomer would
(tests/test_readme.py, tests/test_install.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README = PAGES[0].read_text(encoding="utf-8")


def page(name: str) -> str:
    """One page of the manual, by its path in the repository (`docs/install.md`)."""
    return (ROOT / name).read_text(encoding="utf-8")


def shell_blocks() -> list[str]:
    """Every ```sh block of the README, then of each docs/ page, in order."""
    return [
        block
        for path in PAGES
        for block in re.findall(
            r"^```sh\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL
        )
    ]


def block_with(text: str) -> str:
    """The one shell block of the manual that contains `text`."""
    (found,) = [block for block in shell_blocks() if text in block]
    return found


def run_shell(
    script: str, *, cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run `script` with `bash -euo pipefail`; fail the test with its output unless it exits 0."""
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done

"""The README's shell blocks, and running one as a newcomer would (tests/test_readme.py,
tests/test_install.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def shell_blocks() -> list[str]:
    """Every ```sh block of the README, in order."""
    return re.findall(r"^```sh\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)


def block_with(text: str) -> str:
    """The one shell block that contains `text`."""
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

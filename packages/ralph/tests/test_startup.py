"""ralph's start-up stays light."""

from __future__ import annotations

import pytest

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process


def test_cli_start_up_imports_neither_docker_nor_rich() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ralph", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert "docker" not in modules
    assert "rich" not in modules

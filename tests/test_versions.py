"""`--version` on all three tools prints the installed package's version."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires, version
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.process
@pytest.mark.parametrize(
    ("program", "package"), [("pn", "pensa"), ("ralph", "ralph"), ("sgf", "sgf")]
)
def test_version_prints_the_package_version(program: str, package: str) -> None:
    done = subprocess.run(
        [str(BIN / program), "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{program} {version(package)}\n"


@pytest.mark.parametrize("package", ["pensa", "ralph", "sgf"])
def test_the_version_has_one_source(package: str) -> None:
    """pyproject.toml reads the version from `__version__`; it states none of its own."""
    pyproject = (Path(__file__).parents[1] / "packages" / package / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert "\nversion =" not in pyproject
    module = __import__(package)
    assert version(package) == module.__version__


@pytest.mark.parametrize(
    ("package", "lower"), [("ralph", "pensa"), ("sgf", "pensa"), ("sgf", "ralph")]
)
def test_a_tool_requires_the_very_version_of_each_tool_below_it(package: str, lower: str) -> None:
    """The three are released together, and a tool imports the published modules of those
    below it (pensa.shared, ralph.shared): it requires the version it was built beside."""
    assert f"{lower}=={version(lower)}" in (requires(package) or [])

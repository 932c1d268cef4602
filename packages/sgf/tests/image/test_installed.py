"""An installed pensa (no clone) is written back as a source tree that builds the same pn."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

WORKSPACE = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def installed_pensa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding pensa installed from its wheel (no dependencies, no source)."""
    tmp = tmp_path_factory.mktemp("installed")
    run = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "wheel")]
    subprocess.run([*run, str(WORKSPACE / "packages" / "pensa")], check=True, timeout=300)
    (wheel,) = (tmp / "wheel").glob("pensa-*.whl")
    site = tmp / "site"
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site)]
    subprocess.run([*install, str(wheel)], check=True, timeout=300)
    return site


def test_installed_pensa_is_materialised_and_builds_the_same_wheel(
    installed_pensa: Path, tmp_path: Path
) -> None:
    out = tmp_path / "src"
    script = (
        "import sys; from pathlib import Path; from sgf.image import installed; "
        "print(installed.materialise(Path(sys.argv[1])))"
    )
    env = {**os.environ, "PYTHONPATH": str(installed_pensa)}
    subprocess.run([sys.executable, "-c", script, str(out)], check=True, env=env, timeout=60)
    pyproject = (out / "pyproject.toml").read_text()
    assert 'pn = "pensa.program:main"' in pyproject
    assert '"sqlite-utils>=4.0"' in pyproject
    assert (out / "src" / "pensa" / "cli" / "base.py").is_file()
    assert not list(out.rglob("__pycache__"))
    run = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "w")]
    subprocess.run([*run, str(out)], check=True, timeout=300)
    (wheel,) = (tmp_path / "w").glob("pensa-0.1.0-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    original = {
        p.relative_to(WORKSPACE / "packages" / "pensa" / "src").as_posix()
        for p in (WORKSPACE / "packages" / "pensa" / "src" / "pensa").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert original <= names

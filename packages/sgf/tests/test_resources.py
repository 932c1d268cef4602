"""Templates are found through importlib.resources, in the dev install and in a built wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sgf import resources, scaffold, stacks, stages

WORKSPACE = Path(__file__).resolve().parents[3]


def test_every_prompt_and_stack_template_is_readable() -> None:
    for stage in stages.PROMPTS:
        lines = resources.read_text("prompts", f"{stage}.md").splitlines()
        assert next(line for line in lines if not line.startswith("{%")).startswith("# ")
    for part in scaffold.PROMPT_PARTS:
        assert "{% macro" in resources.read_text("prompts", f"{part}.md")
    for name in stacks.names():
        assert "Backpressure" in stacks.get(name).backpressure()
    assert resources.names("sandbox") == ["Dockerfile", "run-silent"]


@pytest.mark.process
def test_a_built_wheel_carries_the_templates_and_renders_them(tmp_path: Path) -> None:
    uv = shutil.which("uv") or str(WORKSPACE / ".tools" / "bin" / "uv")
    if not Path(uv).is_file():
        pytest.skip("uv is not installed (make env puts it in .tools/bin)")
    subprocess.run(
        [uv, "build", "--package", "sgf", "--wheel", "-o", str(tmp_path / "dist")],
        cwd=WORKSPACE,
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("sgf-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        zf.extractall(tmp_path / "site")
    assert "sgf/templates/prompts/build.md" in names
    assert "sgf/templates/prompts/_shared.md" in names
    assert "sgf/templates/sandbox/Dockerfile" in names
    assert "sgf/templates/scenarios/build.json" in names  # what `--offline` hands ralph
    assert not any(n.endswith("/templates") for n in names)  # a copy, not a dangling link
    probe = (
        "import sgf, pathlib, tempfile\n"
        "from sgf import resources\n"
        "from sgf.loop import prompts\n"
        "root = pathlib.Path(tempfile.mkdtemp())\n"
        "(root / '.sgf/prompts').mkdir(parents=True)\n"
        "for name in ('_shared.md', 'build.md'):\n"
        "    (root / '.sgf/prompts' / name).write_text(resources.read_text('prompts', name))\n"
        "out = prompts.assemble(root, 'build', {'spec': 'auth', 'stage': 'build', 'stack': 'go'})\n"
        "print(sgf.__file__)\n"
        "assert resources.path('scenarios', 'spec.json').is_file()\n"
        "print(out.read_text())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    first, rest = done.stdout.split("\n", 1)
    assert first.startswith(str(tmp_path / "site"))
    assert "pn claim-next -t task -t chore --spec auth --json" in rest

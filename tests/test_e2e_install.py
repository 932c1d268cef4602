"""The wheels in a fresh venv, no clone in sight, run a real loop.

The three wheels are built, installed into a virtual environment outside the repository, and
only that environment's executables are on PATH. Two python projects each build their own
sandbox image (the second build leaves the first's alone), and one `sgf build -a --offline 3`
with the real claude binary runs to completion on the build scenario the sgf wheel ships.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]


def run(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture
def installed(tmp_path: Path, claude_bin: Path, base_image: str) -> dict[str, str]:
    """An environment whose PATH holds only a fresh venv with the wheels, claude and the OS."""
    dist = tmp_path / "dist"
    uv = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    make_dist = [uv, "build", "--all-packages", "--quiet", "--out-dir", str(dist)]
    run(make_dist, cwd=ROOT, env=dict(os.environ))  # what `make dist` runs
    built = sorted(p.name.split("-")[0] for p in dist.iterdir() if p.suffix in (".whl", ".gz"))
    assert built == ["pensa", "pensa", "ralph", "ralph", "sgf", "sgf"]  # a wheel and an sdist
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=dict(os.environ))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    run([*pip, *map(str, sorted(dist.glob("*.whl")))], cwd=tmp_path, env=dict(os.environ))
    path = os.pathsep.join([str(venv / "bin"), str(claude_bin.parent), "/usr/bin", "/bin"])
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PATH=path, SPRINGFIELD_BASE_IMAGE=base_image)
    return env


def new_project(parent: Path, name: str, env: dict[str, str]) -> tuple[Path, str]:
    root, remote = parent / name, parent / f"{name}.git"
    root.mkdir()
    run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], cwd=parent, env=env)
    run(["git", "init", "-q", "-b", "main"], cwd=root, env=env)
    run(["git", "remote", "add", "origin", str(remote)], cwd=root, env=env)
    run(["sgf", "init", "--stack", "python"], cwd=root, env=env)
    with (root / ".sgf" / "config.toml").open("a") as config:
        config.write('network = "host"\n')
    run(["git", "add", "-A"], cwd=root, env=env)
    run(["git", "commit", "-q", "-m", "chore: sgf init"], cwd=root, env=env)
    run(["git", "push", "-q", "-u", "origin", "main"], cwd=root, env=env)
    image = tomllib.loads((root / ".sgf" / "config.toml").read_text())["docker_template"]
    assert isinstance(image, str)
    return root, image


def image_id(image: str) -> str:
    argv = ["docker", "image", "inspect", "--format", "{{.Id}}", image]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def test_installed_wheels_build_two_project_images_and_run_a_loop(
    installed: dict[str, str], tmp_path: Path, claude_bin: Path
) -> None:
    env = installed
    for tool, package in (("pn", "pensa"), ("ralph", "ralph"), ("sgf", "sgf")):
        assert run([tool, "--version"], cwd=tmp_path, env=env).startswith(f"{tool} 0.")
        where = run(
            ["python", "-c", f"import {package}; print({package}.__file__)"], cwd=tmp_path, env=env
        )
        assert where.startswith(str(tmp_path / "venv")), where  # not the workspace checkout
    images = []
    try:
        one, first = new_project(tmp_path, "one", env)
        images.append(first)
        build = ["sgf", "sandbox", "build", "--claude-binary", str(claude_bin)]
        run(build, cwd=one, env=env, timeout=900)
        built_first = image_id(first)
        two, second = new_project(tmp_path, "two", env)
        images.append(second)
        assert second != first
        run(build, cwd=two, env=env, timeout=900)
        assert image_id(first) == built_first  # the second build left the first image alone
        labels = run(
            ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", first],
            cwd=tmp_path,
            env=env,
        )
        assert '"springfield.pn-version":"0.' in labels

        seed = ["pn", "create", "Write the greet function", "-t", "task", "--json"]
        run(seed, cwd=one, env=env)
        run(["pn", "export"], cwd=one, env=env)
        run(["git", "add", "-A"], cwd=one, env=env)
        run(["git", "commit", "-q", "-m", "chore: seed"], cwd=one, env=env)
        # no credential and no model server of the test's: the installed tools bring both
        offline = {k: v for k, v in env.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        # exit 0 is "complete" (2 would be iterations exhausted): run() asserts it
        said = run(["sgf", "build", "-a", "--offline", "3"], cwd=one, env=offline, timeout=600)
        assert f"playing {tmp_path / 'venv'}" in said  # the scenario in the installed sgf
        listed = run(["pn", "list", "--all", "--json"], cwd=one, env=env)
        assert '"status": "closed"' in listed or '"status":"closed"' in listed
        assert (one / "greet.py").is_file()
    finally:
        for image in images:  # untag only: the layers are shared with the session's image
            subprocess.run(["docker", "image", "rm", image], capture_output=True, check=False)

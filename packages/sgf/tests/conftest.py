"""Fixtures for sgf's tests: real git repositories, sgf and pn as real programs, a fake ralph."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent
SGF = BIN / "sgf"

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Spawn = Callable[..., "subprocess.Popen[str]"]
Image = Callable[..., str]


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` (pn on PATH for the hooks), failing on a non-zero exit; return stdout."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout.strip()


Git = Callable[..., str]


def pn(project: Path, env: dict[str, str], *args: str) -> Any:
    """Run the real `pn ARGS --json` in `project`, failing the test on a non-zero exit."""
    done = subprocess.run(
        ["pn", *args, "--json"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def alive(pid: int) -> bool:
    """Whether process `pid` still exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(name="git")
def git_fixture() -> Git:
    """git(cwd, *args) -> stdout, failing the test on a non-zero exit."""
    return git


@pytest.fixture
def tool_env(isolated_home: Path) -> dict[str, str]:
    """The environment with the workspace's console scripts (sgf, pn, ralph) first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    return env


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    """An empty git repository with one commit."""
    return make_repo("project")


@pytest.fixture
def sgf(tool_env: dict[str, str]) -> Run:
    """sgf(cwd, *args, env=..., input=...) runs the real console script."""

    def run(cwd: Path, *args: str, env: dict[str, str] | None = None, **kw: Any) -> Any:
        kw.setdefault("timeout", 120)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(
            [str(SGF), *args],
            cwd=cwd,
            env={**tool_env, **(env or {})},
            capture_output=True,
            text=True,
            check=False,
            **kw,
        )

    return run


@pytest.fixture
def spawn_sgf(tool_env: dict[str, str], background: Callable[..., subprocess.Popen[str]]) -> Spawn:
    """spawn_sgf(cwd, *args, env=...) starts sgf in the background; a failing test's leftover
    sgf is killed after it."""

    def spawn(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return background([str(SGF), *args], cwd=cwd, env={**tool_env, **(env or {})})

    return spawn


@pytest.fixture(scope="session")
def project_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repository after `sgf init --stack python` with the scaffold committed, made once.

    Session fixtures run outside the per-test isolation, so this one builds its own HOME.
    """
    base = tmp_path_factory.mktemp("project-template")
    home = base / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    path = base / "project"
    path.mkdir()
    (path / "README.md").write_text("# project\n")
    for argv in (
        ["git", "init", "-q"],
        [str(SGF), "init", "--stack", "python"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "sgf init"],
    ):
        done = subprocess.run(argv, cwd=path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
    return path


@pytest.fixture
def project(project_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of a repository after `sgf init --stack python`, scaffold committed."""
    path = tmp_path / "project"
    shutil.copytree(project_template, path, symlinks=True)
    return path


# A recording stand-in for ralph, a real file so linters and readers see it as code.
FAKE_RALPH = Path(__file__).parent / "fakes" / "fake_ralph.py"


class FakeRalph:
    """The fake ralph's path and what it recorded."""

    def __init__(self, path: Path, record: Path) -> None:
        self.path = path
        self.record = record

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "SGF_RALPH": str(self.path),
            "FAKE_RALPH_RECORD": str(self.record),
            "SGF_SKIP_PREFLIGHT": "1",
            **extra,
        }

    def calls(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.record.read_text())
        return data


@pytest.fixture
def fake_ralph(tmp_path: Path) -> FakeRalph:
    """A recording fake ralph (point SGF_RALPH at it with `fake_ralph.env()`)."""
    path = tmp_path / "bin" / "fake-ralph"
    path.parent.mkdir()
    # this interpreter, not `env python3`: the fake runs with the test's PATH and no venv
    path.write_text(FAKE_RALPH.read_text().replace("/usr/bin/env python3", sys.executable, 1))
    path.chmod(0o755)
    return FakeRalph(path, tmp_path / "ralph-record.json")


@pytest.fixture
def dead_pid() -> int:
    """The PID of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def labelled(base_image: str) -> Iterator[Image]:
    """labelled(**labels): a throw-away image FROM the base (named uniquely), with the given
    labels; removed after the test, which proves none is left."""
    import uuid

    made: list[str] = []

    def make(**labels: str) -> str:
        tag = f"springfield-labelled-test:{uuid.uuid4().hex[:12]}"
        flags = [x for k, v in labels.items() for x in ("--label", f"{k}={v}")]
        subprocess.run(
            ["docker", "build", "-q", "-t", tag, *flags, "-"],
            input=f"FROM {base_image}\n".encode(), capture_output=True, check=True,
        )  # fmt: skip
        made.append(tag)
        return tag

    yield make
    for tag in made:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
    left = [tag for tag in made if _image_exists(tag)]
    assert left == [], f"images left behind: {left}"


def _image_exists(tag: str) -> bool:
    probe = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    return probe.returncode == 0

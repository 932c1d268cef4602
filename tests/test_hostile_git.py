"""A hostile agent in the real Docker sandbox cannot make the host's git run its commands
through configuration git finds outside `.git/config` (README "Security model"): a nested
repository's own config, a submodule's under `.git/modules/<name>`, a planted `commondir`,
a `.git` of the agent's making swapped in for the real one.

After each attack the developer works as usual on the host: plain git, `pn list`, `sgf status`
and the next loop. The agent's trap records the mount namespace it runs in; it must run in the
container (the attack is armed) and never in the host's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests import loops_harness
from tests.loops_harness import Loops

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

AGENT = Path(__file__).parent / "agents" / "hostile_git.py"
HOST = os.readlink("/proc/self/ns/mnt")


@pytest.fixture
def loops(tmp_path: Path, base_image: str) -> Loops:
    """A project after `sgf init` whose loops run the hostile agent in Docker."""
    made = loops_harness.make(tmp_path, os.environ)
    agent = made.root / "tools" / "hostile_git.py"
    agent.parent.mkdir()
    shutil.copy(AGENT, agent)
    agent.chmod(0o755)
    made.env["RALPH_COMMAND"] = str(agent)
    made.env["RALPH_SANDBOX"] = "docker"
    made.git("add", "tools")
    made.git("commit", "-qm", "chore: the agent")
    return made


def attack(loops: Loops, name: str, base_image: str) -> str:
    """Run one loop in Docker whose agent carries out `name`; return what it printed."""
    (loops.root / "tools" / "attack").write_text(name + "\n")
    loops.git("add", "tools/attack")
    loops.git("commit", "-qm", f"chore: attack {name}")
    done = loop(loops, base_image)
    return done.stdout + done.stderr


def loop(loops: Loops, base_image: str) -> subprocess.CompletedProcess[str]:
    return loops.sgf(
        "build", "-a", "--no-push", "--sandbox", "docker", "--template", base_image, "1"
    )


def marks(loops: Loops) -> list[str]:
    path = loops.root / ".git" / "hostile-marks"
    return path.read_text().split() if path.exists() else []


def developer_works_on_the_host(loops: Loops, *extra: list[str]) -> None:
    """What a developer does next, with plain git (no -c): none of it may run the trap."""
    for argv in (
        ["git", "status"],
        ["git", "diff"],
        ["git", "diff", "HEAD~1"],
        ["git", "log", "-p", "-3"],
        ["git", "switch", "-c", "look"],
        ["git", "switch", "main"],
        *extra,
    ):
        loops.run(*argv, check=False)
    (loops.root / "notes.txt").write_text("the developer's notes\n")
    loops.run("git", "add", "notes.txt")
    loops.run("git", "commit", "-qm", "docs: notes")
    (loops.root / "notes.txt").write_text("more notes\n")
    loops.run("git", "commit", "-qam", "docs: more notes")
    loops.run("pn", "list")
    loops.run("sgf", "status")


def test_a_nested_repositorys_config_never_runs_on_the_host(loops: Loops, base_image: str) -> None:
    said = attack(loops, "worktree-submodule", base_image)
    assert "add sub' rc=0" in said, said  # the gitlink is committed
    assert marks(loops), said  # armed: the trap ran inside the container
    assert "protected paths (sub)" in said, said  # the gitlink commit is quarantined
    developer_works_on_the_host(loops)
    # The nested repository the agent left stays, untracked: sgf will not launch over it
    # until the developer has looked at it and removed it.
    refused = loop(loops, base_image)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "?? sub/" in refused.stderr
    shutil.rmtree(loops.root / "sub")
    done = loop(loops, base_image)
    assert done.returncode == 0, done.stdout + done.stderr
    assert HOST not in marks(loops)


def test_a_submodules_config_under_git_modules_cannot_be_written(
    loops: Loops, base_image: str, tmp_path: Path
) -> None:
    library = tmp_path / "library"
    loops.run("git", "init", "-q", str(library))
    loops.run("git", "-C", str(library), "commit", "-q", "--allow-empty", "-m", "lib")
    file_ok = ("-c", "protocol.file.allow=always")
    loops.run("git", *file_ok, "submodule", "add", "-q", str(library), "lib")
    loops.run("git", "commit", "-qm", "chore: a submodule of the developer's")
    config = (loops.root / ".git" / "modules" / "lib" / "config").read_bytes()
    said = attack(loops, "modules-config", base_image)
    assert "Read-only file system" in said, said
    assert (loops.root / ".git" / "modules" / "lib" / "config").read_bytes() == config
    developer_works_on_the_host(
        loops,
        ["git", "add", "-A"],
        ["git", "-C", "lib", "status"],
        ["git", "submodule", "status"],
        ["git", *file_ok, "submodule", "update", "--init"],
    )
    done = loop(loops, base_image)
    assert done.returncode == 0, done.stdout + done.stderr
    assert HOST not in marks(loops)


def test_no_commondir_can_be_planted_not_even_while_the_agent_runs(
    loops: Loops, base_image: str
) -> None:
    """The developer's `git status` during the iteration is the window: ralph only looks
    after it. The read-only self-pointing commondir leaves no moment to plant one."""
    (loops.root / "tools" / "attack").write_text("commondir\n")
    loops.git("add", "tools/attack")
    loops.git("commit", "-qm", "chore: attack commondir")
    ready, go = loops.root / ".git" / "hostile-ready", loops.root / ".git" / "hostile-go"
    argv = ["sgf", "build", "-a", "--no-push", "--sandbox", "docker", "--template", base_image]
    running = subprocess.Popen(
        [*argv, "1"], cwd=loops.root, env=loops.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not ready.exists() and running.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), "the agent never got to the point of waiting"
        loops.run("git", "status", check=False)  # mid-iteration, plain git
        loops.run("git", "diff", check=False)
        assert HOST not in marks(loops)
    finally:
        go.touch()
        said, _ = running.communicate(timeout=120)
    assert running.returncode == 0, said
    assert f"echo {loops.root}/.git/evil > .git/commondir rc=" in said, said
    assert "Read-only file system" in said, said
    assert (loops.root / ".git" / "commondir").read_text() == ".\n"
    developer_works_on_the_host(loops)
    done = loop(loops, base_image)
    assert done.returncode == 0, done.stdout + done.stderr
    assert HOST not in marks(loops)


def test_the_git_directory_cannot_be_swapped_for_one_with_the_agents_config(
    loops: Loops, base_image: str
) -> None:
    said = attack(loops, "replace-git-dir", base_image)
    assert "mv .git-new .git || { rm -rf .git-new; false; } rc=1" in said, said
    assert "Device or resource busy" in said, said
    developer_works_on_the_host(loops)
    done = loop(loops, base_image)
    assert done.returncode == 0, done.stdout + done.stderr
    assert HOST not in marks(loops)

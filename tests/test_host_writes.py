"""sgf with the fake agent in real Docker: the sandbox mode is the project's, and links an
agent commits where sgf writes never reach the human's tree, nor are written through
(docs/security.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomli_w

from tests.loops_harness import Loops

pytestmark = pytest.mark.docker

BIN = Path(sys.executable).parent
AGENT = Path(__file__).resolve().parents[1] / "packages/ralph/tests/agents/fake_agent.py"
PRECIOUS = "precious, outside the project\n"
OUTSIDE_DOCKER = "sgf: warning: --sandbox none: agents run on this machine"


@pytest.fixture
def project(tmp_path: Path, base_image: str) -> Iterator[Loops]:
    """`sgf init` with Docker (the base image), the fake agent, `RALPH_SANDBOX=none` in the
    shell (a stray setting the project must win over), no remote."""
    root = tmp_path / "project"
    root.mkdir()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "RALPH_SANDBOX": "none",
        "RALPH_RESULT_GRACE": "2",
        "RALPH_STOP_GRACE": "1",
        "SGF_SKIP_PREFLIGHT": "1",
        "NO_COLOR": "1",
        "RALPH_COMMAND": str(root / "tools" / "fake_agent.py"),
    }
    loops = Loops(root, env)
    loops.git("init", "-q", "-b", "main")
    (root / "README.md").write_text("# project\n")
    loops.run("sgf", "init", "--stack", "python")
    path = root / ".sgf" / "config.toml"
    config = tomllib.loads(path.read_text())
    config.update(docker_template=base_image, auto_push=False, review="off")
    path.write_text(tomli_w.dumps(config))
    (root / "tools").mkdir()
    shutil.copy(AGENT, root / "tools" / "fake_agent.py")
    loops.git("add", "-A")
    loops.git("commit", "-qm", "chore: sgf init")
    yield loops
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=springfield.project={root}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    if left:
        subprocess.run(["docker", "rm", "-f", *left], capture_output=True, check=False)
    assert left == [], f"containers left behind: {left}"


def agent_does(loops: Loops, *steps: list[object]) -> None:
    """Make the build prompt a fake-agent script that ends its loop after `steps`."""
    done = [["write", ".ralph-complete", "$RALPH_LOOP_ID"], ["result"]]
    script = json.dumps({"default": [*steps, *done]})
    (loops.root / ".sgf" / "prompts" / "build.md").write_text(script + "\n")
    loops.git("commit", "-qam", "test: the agent's script")


def test_a_stray_ralph_sandbox_none_does_not_take_the_loop_out_of_docker(
    project: Loops,
) -> None:
    agent_does(project, ["try_write", ".sgf/probe.md"])
    done = project.sgf("build", "-a", "1", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("network: allow-list"), done.stdout  # in a container
    assert "wrote .sgf/probe.md" in done.stdout  # its own copy, in its workspace
    assert not (project.root / ".sgf" / "probe.md").exists()
    assert OUTSIDE_DOCKER not in done.stderr


def test_sandbox_none_on_the_command_line_runs_on_the_host_and_says_so_once(
    project: Loops,
) -> None:
    agent_does(project, ["try_write", ".sgf/probe.md"])
    done = project.sgf("build", "-a", "1", "--sandbox", "none", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote .sgf/probe.md" in done.stdout
    warned = [line for line in done.stderr.splitlines() if line.startswith(OUTSIDE_DOCKER)]
    assert len(warned) == 1, done.stderr


def test_init_never_writes_through_a_temporary_name_the_agent_linked(
    project: Loops, tmp_path: Path
) -> None:
    """`sgf init` again after a loop: the agent removed AGENTS.md and linked the temporary
    name an older sgf wrote it through to a file of the user's, inside the repository."""
    victim = project.root / "docs" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text(PRECIOUS)
    project.git("add", "docs")
    project.git("commit", "-qm", "docs: a file of the user's")
    link = "rm AGENTS.md && ln -s docs/victim.txt .AGENTS.md.sgf-tmp"
    agent_does(project, ["sh", f"{link} && git add -A && git commit -qnm tidy"])
    done = project.sgf("build", "-a", "1", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sh rc=0" in done.stdout
    assert (project.root / ".AGENTS.md.sgf-tmp").is_symlink()  # landed: it stays inside
    again = project.sgf("init", "--stack", "python")
    assert victim.read_text() == PRECIOUS
    assert again.returncode == 0, again.stdout + again.stderr
    agents = project.root / "AGENTS.md"
    assert agents.is_file()
    assert not agents.is_symlink()


def test_a_committed_link_out_of_the_repository_never_lands(project: Loops, tmp_path: Path) -> None:
    """Merged into `.gitignore` and committed, the file's contents would leave with a push."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=do-not-commit\n")
    link = f"rm .gitignore && ln -s {secret} .gitignore"
    agent_does(project, ["sh", f"{link} && git add -A && git commit -qnm tidy"])
    done = project.sgf("build", "-a", "1", timeout=180)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ".gitignore (a link out of the repository)" in done.stderr
    assert not (project.root / ".gitignore").is_symlink()
    again = project.sgf("init", "--stack", "python")
    assert again.returncode == 0, again.stdout + again.stderr
    assert secret.read_text() == "TOKEN=do-not-commit\n"


def test_init_refuses_a_gitignore_linked_to_a_file_of_the_users(
    project: Loops, tmp_path: Path
) -> None:
    """A link made on the host (by an agent under `--sandbox none`, by anyone)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=do-not-commit\n")
    (project.root / ".gitignore").unlink()
    (project.root / ".gitignore").symlink_to(secret)
    again = project.sgf("init", "--stack", "python")
    assert again.returncode == 1, again.stdout + again.stderr
    assert again.stderr.strip().splitlines() == [
        f"error: refusing to write {project.root / '.gitignore'}: it is a symbolic link (sgf "
        "never writes through a link, which an agent may have planted); look at it, remove "
        "it, run again"
    ]
    assert (project.root / ".gitignore").is_symlink()
    assert secret.read_text() == "TOKEN=do-not-commit\n"

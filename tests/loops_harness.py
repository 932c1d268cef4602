"""A project for many-loops tests: real sgf, ralph and pn, the builder fake agent
on the host (`--sandbox none`), no Docker, no model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e_harness.tracker import committed_issues

BIN = Path(sys.executable).parent
BUILDER = Path(__file__).resolve().parent / "agents" / "builder.py"
FAST = {
    "RALPH_RESULT_GRACE": "2",
    "RALPH_STOP_GRACE": "1",
    "RALPH_SANDBOX": "none",
    "SGF_SKIP_PREFLIGHT": "1",
    "NO_COLOR": "1",
}


@dataclass
class Loops:
    """A project after `sgf init`, with `sandbox = "none"` and the builder agent."""

    root: Path
    env: dict[str, str]

    def run(
        self, *argv: str, cwd: Path | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv),
            cwd=cwd or self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{argv} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def git(self, *args: str, cwd: Path | None = None) -> str:
        return self.run("git", *args, cwd=cwd).stdout.strip()

    def json_of(self, *argv: str) -> Any:
        """Run a program that prints JSON and decode it."""
        return json.loads(self.run(*argv).stdout)

    def pn(self, *args: str) -> Any:
        return json.loads(self.run("pn", *args, "--json").stdout)

    def sgf(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return self.run("sgf", *args, check=False, timeout=timeout)

    def seed(self, count: int) -> list[str]:
        """Create `count` ready tasks and commit them."""
        ids = [str(self.pn("create", f"task {n}", "-t", "task")["id"]) for n in range(count)]
        self.run("pn", "export", "--stage")
        self.git("commit", "-qm", f"chore: {count} tasks")
        return ids

    def issues(self) -> dict[str, dict[str, Any]]:
        return {str(i["id"]): i for i in self.pn("list", "--all")}

    def committed_issues(self, ref: str = "HEAD") -> dict[str, dict[str, Any]]:
        """The issues `ref`'s `.pensa/` holds."""
        return committed_issues(self.git, ref)

    def commits(self) -> list[tuple[str, str, list[str]]]:
        """(subject, author-date order, files) of every commit on main, oldest first."""
        log = self.git("log", "--reverse", "--format=%x00%s", "--name-only", "main")
        out = []
        for chunk in log.split("\0")[1:]:
            subject, *files = [line for line in chunk.splitlines() if line]
            out.append((subject, "", files))
        return out

    def worktrees(self) -> list[str]:
        listed = self.git("worktree", "list", "--porcelain").splitlines()
        return [line.split(" ", 1)[1] for line in listed if line.startswith("worktree ")]

    def loop_branches(self) -> list[str]:
        return self.git("branch", "--list", "sgf/*", "--format=%(refname:short)").split()


def make(tmp: Path, environ: Mapping[str, str], **config: str) -> Loops:
    """`sgf init --stack python` in a fresh repository, `sandbox = "none"` plus `config`."""
    root = tmp / "project"
    root.mkdir()
    env = {**environ, **FAST, "PATH": f"{BIN}{os.pathsep}{environ['PATH']}"}
    env["RALPH_COMMAND"] = str(BUILDER)
    loops = Loops(root, env)
    loops.git("init", "-q", "-b", "main")
    (root / "README.md").write_text("# project\n")
    loops.run("sgf", "init", "--stack", "python")
    path = root / ".sgf" / "config.toml"
    # Reviews need a builder that plays reviewers: a test that wants them turns them on.
    chosen = {"sandbox": "none", "review": "off", **config}
    extra = "".join(f'{k} = "{v}"\n' for k, v in chosen.items())
    path.write_text(path.read_text() + extra)
    loops.git("add", "-A")
    loops.git("commit", "-qm", "chore: sgf init")
    return loops

"""A real project for end-to-end runs: git repo, bare remote, `sgf init`, real console scripts."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

# The python stack's sandbox image for this checkout's suite, built once a session by
# tests/conftest.py. Tagged by checkout, so suites of two clones of different code on one
# machine never overwrite each other's image with their own pensa.
SANDBOX_IMAGE = (
    "springfield-sandbox-python:test-"
    + hashlib.sha256(str(Path(__file__).resolve().parents[2]).encode()).hexdigest()[:12]
)


@dataclass
class Project:
    """The project under test; every program runs with `env` and cwd `root`."""

    root: Path
    remote: Path
    env: dict[str, str] = field(default_factory=dict)

    def run(
        self,
        *argv: str,
        timeout: float = 60,
        check: bool = True,
        extra_env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv),
            cwd=self.root,
            env={**self.env, **(extra_env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} exited {done.returncode}\n"
                f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
            )
        return done

    def git(self, *args: str) -> str:
        return self.run("git", *args).stdout.strip()

    def pn(self, *args: str) -> Any:
        """Run `pn ... --json` and decode its stdout."""
        return json.loads(self.run("pn", *args, "--json").stdout)

    def create_task(self, title: str, *, kind: str = "task", deps: Sequence[str] = ()) -> str:
        argv = ["create", title, "-t", kind]
        for dep in deps:
            argv += ["--dep", dep]
        issue = self.pn(*argv)
        return str(issue["id"])

    def commit_all(self, message: str) -> None:
        """Export pensa, commit everything and push it (as a user seeding tasks would)."""
        self.run("pn", "export")
        self.git("add", "-A")
        self.run("git", "commit", "-q", "-m", message)
        self.git("push", "-q", "origin", "HEAD")

    def sgf(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return self.run("sgf", *args, timeout=timeout, check=False)

    def set_config(self, **values: object) -> None:
        """Change keys of `.sgf/config.toml` (e.g. network="host")."""
        path = self.root / ".sgf" / "config.toml"
        config = tomllib.loads(path.read_text())
        config.update(values)
        path.write_text(tomli_w.dumps(config))

    def remote_log(self) -> list[str]:
        """Subjects of the remote's main branch, newest first."""
        out = self.run("git", "--git-dir", str(self.remote), "log", "--format=%s", "main")
        return out.stdout.splitlines()

    def issues(self) -> dict[str, dict[str, Any]]:
        """Every issue by id, whatever its status."""
        return {str(issue["id"]): issue for issue in self.pn("list", "--all")}

    def commits_touching(self, pattern: str) -> list[tuple[str, list[str]]]:
        """(subject, files) of every commit whose subject matches `pattern`, oldest first."""
        log = self.git("log", "--reverse", "--format=%x00%s", "--name-only")
        commits = []
        for chunk in log.split("\0")[1:]:
            subject, *files = [line for line in chunk.splitlines() if line]
            if re.search(pattern, subject):
                commits.append((subject, files))
        return commits

    def containers(self) -> list[str]:
        """Ids of any container, running or not, that carries this project's label."""
        out = self.run(
            "docker", "ps", "-aq", "--filter", f"label=springfield.project={self.root}"
        ).stdout
        return out.split()

    def pid_files(self) -> list[Path]:
        return sorted((self.root / ".sgf" / "run").glob("*.pid"))

    def logs(self) -> list[Path]:
        return sorted((self.root / ".sgf" / "logs").glob("*.log"))

    def sent_back(self) -> list[dict[str, Any]]:
        """Every time a stop checklist sent an agent back, from the run records' iterations."""
        fired: list[dict[str, Any]] = []
        for path in sorted((self.root / ".sgf" / "runs").glob("*.jsonl")):
            for line in path.read_text().splitlines():
                event = json.loads(line)
                if event.get("event") == "iteration":
                    fired += event.get("guardrails") or []
        return [g for g in fired if g.get("hook") == "stop" and not g.get("released")]

    def foreign_files(self) -> list[Path]:
        """Files in the project not owned by the user running the tests. Under root, ralph
        hands the shared database's own files to the sandbox's stand-in user (ralph's
        sandbox/view.py): those are expected, and root still owns what they hold."""
        uid = os.getuid()
        handed = {self.root / ".pensa" / f"db.sqlite{s}" for s in ("", "-journal", ".lock")}
        return [
            p
            for p in self.root.rglob("*")
            if p.lstat().st_uid != uid and not (uid == 0 and p in handed)
        ]


def make_project(tmp: Path, env: Mapping[str, str]) -> Project:
    """A git repo with a bare `origin`, scaffolded by `sgf init --stack python`, pushed."""
    remote = tmp / "remote.git"
    root = tmp / "project"
    root.mkdir()
    project = Project(root=root, remote=remote, env=dict(env))
    project.run("git", "init", "-q", "--bare", "-b", "main", str(remote))
    project.git("init", "-q", "-b", "main")
    project.git("remote", "add", "origin", str(remote))
    (root / "README.md").write_text("# e2e project\n")
    project.run("sgf", "init", "--stack", "python", timeout=120)
    # One image for the whole session (tests/conftest.py builds it), not one per project.
    project.set_config(network="host", docker_template=SANDBOX_IMAGE)
    # Reviews need reviewer scripts in the scenario: a test that wants them turns them on.
    project.set_config(review="off")
    project.git("add", "-A")
    project.run("git", "commit", "-q", "-m", "chore: sgf init")
    project.git("push", "-q", "-u", "origin", "main")
    return project

"""What the sandbox's repository of its own costs: an iteration that commits 100 changed files
in a 10,000-file repository, through ralph's workspace (the commits cross as a bundle the host
checks, then land on the branch) against the old design's bind mount of the project (the
agent commits in the human's tree; the host reads the new commits for the quarantine), in the
same run, on the same image. Also the workspace's first clone of that repository.

Targets: the crossing adds <= 0.3 s per iteration (median); the first clone <= 2 s. The
next loop starts from the workspace the last one parked: its first iteration is reported too.
A first clone writes every file of the repository: on a disk busy discarding freed blocks it
takes seconds more than on a quiet one.
"""

from __future__ import annotations

import io
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ralph import crossing, loop
from ralph import sandbox as sandboxes
from ralph.models import Config, Prompt, SandboxKind, Timeouts
from ralph.render import Output
from ralph.sandbox.container import sandbox_user

IMAGE = os.environ.get("SPRINGFIELD_BASE_IMAGE", "springfield-base:bookworm")
FILES, CHANGED, RUNS = 10_000, 100, 7
AGENT = f"""#!/bin/sh
cat >/dev/null
i=0
while [ $i -lt {CHANGED} ]; do echo "$$ $i" >> d$((i % 100))/f$i.txt; i=$((i + 1)); done
git add -A && git -c core.hooksPath=/dev/null commit -qm "feat: {CHANGED} files"
echo '{{"type":"result","subtype":"success","num_turns":1,"total_cost_usd":0}}'
"""


class Timed(Output):
    """Output that notes when each banner (iteration start) is printed."""

    def __init__(self) -> None:
        super().__init__(io.StringIO(), io.StringIO(), styled=False)
        self.starts: list[float] = []

    def banner(self, index: int, total: int, loop_id: str) -> None:
        self.starts.append(time.perf_counter())
        super().banner(index, total, loop_id)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def project(root: Path) -> Path:
    """A repository of FILES small files in 100 folders, and the agent, committed."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")
    for n in range(FILES):
        folder = root / f"d{n % 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"file {n}\n")
    (root / "agent.sh").write_text(AGENT)
    (root / "agent.sh").chmod(0o755)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "many files")
    # Files written in the same second as the index are "racily clean" to git, which then
    # hashes all of them again on its next look; a real project's files are older than that.
    time.sleep(1.1)
    git(root, "status", "--porcelain")
    os.sync()  # the 10,000 files on disk: their write-back is no part of what is measured
    return root


def bind_mount(root: Path) -> list[float]:
    """The old design: the project mounted, the agent commits there, the host reads the new
    commits' raw diffs (the quarantine's read) before it pushes."""
    times = []
    uid = f"{os.getuid()}:{os.getgid()}"
    for _ in range(RUNS):
        before = git(root, "rev-parse", "HEAD")
        started = time.perf_counter()
        subprocess.run(
            ["docker", "run", "--rm", "-i", "-v", f"{root}:{root}", "-w", str(root), "--user",
             uid, "-e", "HOME=/tmp", "-e", "GIT_AUTHOR_NAME=b", "-e", "GIT_AUTHOR_EMAIL=b@b",
             "-e", "GIT_COMMITTER_NAME=b", "-e", "GIT_COMMITTER_EMAIL=b@b", "-e",
             "GIT_CONFIG_COUNT=1", "-e", "GIT_CONFIG_KEY_0=safe.directory", "-e",
             "GIT_CONFIG_VALUE_0=*", IMAGE, "./agent.sh"],
            input=b"go", capture_output=True, check=True,
        )  # fmt: skip
        git(root, "log", "--raw", "-m", "--no-renames", "--no-abbrev", "HEAD", "--not", before)
        times.append(time.perf_counter() - started)
    return times


def workspace(root: Path, *, runs: int = RUNS + 1, name: str = "a") -> list[float]:
    """ralph as it runs now: per iteration, from its banner to the next one."""
    config = Config(
        project=root,
        prompt=Prompt("go"),
        iterations=runs,
        afk=True,
        loop_id=f"bench-crossing-{name}-{os.getpid()}",
        template=IMAGE,
        auto_push=False,
        command=str(root / "agent.sh"),
        sandbox=SandboxKind.DOCKER,
        network="open",
        timeouts=Timeouts(),
    )
    out = Timed()
    env = {**os.environ, "RALPH_WORKSPACES": str(root.parent / "workspaces")}
    code = loop.run(config, out, env=env, max_iterations=runs)
    ended = time.perf_counter()
    assert code == 2, out.stdout.getvalue() + out.stderr.getvalue()  # type: ignore[attr-defined]
    bounds = [*out.starts, ended]
    return [b - a for a, b in itertools.pairwise(bounds)]


def first_clones(root: Path) -> list[float]:
    """The workspace's first clone alone: fresh workspaces prepared in a container (the
    container's start included), after the loops, on a disk done with the project's writes."""
    times = []
    for n in range(3):
        config = Config(
            project=root,
            prompt=Prompt("go"),
            loop_id=f"bench-clone-{n}-{os.getpid()}",
            template=IMAGE,
            sandbox=SandboxKind.DOCKER,
            network="open",
        )
        env = {**os.environ, "RALPH_WORKSPACES": str(root.parent / "clones")}
        uid, gid = sandbox_user(os.getuid(), os.getgid())
        with tempfile.TemporaryDirectory(prefix="bench-clone-") as state:
            home = crossing.open_(config, env, uid=uid, gid=gid)
            assert home is not None
            box = sandboxes.make(config, env=env, state=Path(state), place=home.place)
            try:
                home.aim()
                started = time.perf_counter()
                assert box.step("prepare").ok
                times.append(time.perf_counter() - started)
            finally:
                box.close()
    return times


def main() -> int:
    found = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True)
    if found.returncode != 0:
        print(f"crossing benchmark: skipped (no image {IMAGE})")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-crossing-") as tmp:
        old = statistics.median(bind_mount(project(Path(tmp) / "mounted")))
        crossed = project(Path(tmp) / "crossed")
        laps = workspace(crossed)
        again = workspace(crossed, runs=2, name="b")  # in the workspace the first one parked
        clone = statistics.median(first_clones(crossed))
    first, steady = laps[0], statistics.median(laps[1:])
    added, parked = steady - old, again[0] - steady
    rows = [
        (f"bind mount: iteration, {CHANGED} of {FILES:,} files (median of {RUNS})",
         f"{old:.3f} s", "", True),
        (f"workspace: iteration, {CHANGED} of {FILES:,} files (median of {RUNS})",
         f"{steady:.3f} s", "", True),
        ("the crossing's overhead per iteration", f"{added:+.3f} s", "<= 0.300 s", added <= 0.3),
        ("workspace: first iteration, its first clone included", f"{first:.3f} s", "", True),
        ("workspace: first clone, in its container (median of 3)", f"{clone:.3f} s",
         "<= 2.000 s", clone <= 2.0),
        ("the next loop, in the parked workspace (first iteration - median)", f"{parked:+.3f} s",
         "", True),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    print(f"{'crossing benchmark'.ljust(width)}  {'measured':>12}  {'target':>12}  ok")
    for name, value, target, ok in rows:
        print(f"{name.ljust(width)}  {value:>12}  {target:>12}  {'yes' if ok else 'NO'}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

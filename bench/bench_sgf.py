"""sgf overhead benchmark: prints a table of median whole-process wall times.

What a developer waits for before ralph starts: `sgf --help`, `sgf status --json` (three `pn`
calls), `sgf init` in a fresh repository (including pre-commit hook installation), and a
stage launch with a ralph that exits at once (assembly, recovery scan, PID file, tee, history),
next to that no-op ralph run directly and `python -c "import click"` as the floor.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "11"))


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sgf-") as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = b@example.com\n")
        env = {
            **os.environ,
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "SGF_SKIP_PREFLIGHT": "1",
        }
        ralph = base / "ralph"
        ralph.write_text("#!/bin/sh\necho ok\n")
        ralph.chmod(0o755)
        env["SGF_RALPH"] = str(ralph)
        project = base / "project"
        project.mkdir()
        for argv in (["git", "init", "-q"], [str(BIN / "sgf"), "init", "--stack", "python"],
                     ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):  # fmt: skip
            subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
        counter = iter(range(10**6))

        def fresh_init() -> float:
            repo = base / f"init-{next(counter)}"
            repo.mkdir()
            subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
            return timed([str(BIN / "sgf"), "init", "--stack", "go"], repo, env)

        def launch() -> float:
            took = timed([str(BIN / "sgf"), "verify", "1"], project, env)
            time.sleep(1.0)  # loop ids have whole seconds: the next launch needs a new one
            return took

        cases: list[tuple[str, Callable[[], float]]] = [
            ("python -c 'import click' (floor)",
             lambda: timed([sys.executable, "-c", "import click"], project, env)),
            ("no-op ralph alone", lambda: timed([str(ralph), "1", "p"], project, env)),
            ("sgf --help", lambda: timed([str(BIN / "sgf"), "--help"], project, env)),
            ("sgf status --json",
             lambda: timed([str(BIN / "sgf"), "status", "--json"], project, env)),
            ("sgf verify 1 (no-op ralph)", launch),
            ("sgf init --stack go (fresh repo)", fresh_init),
        ]  # fmt: skip
        samples: dict[str, list[float]] = {name: [] for name, _ in cases}
        for _ in range(ROUNDS):
            for name, case in cases:
                samples[name].append(case())
    floor = statistics.median(samples[cases[0][0]])
    print(f"sgf overhead, median of {ROUNDS} runs")
    print(f"{'case':<36} {'median s':>9} {'x floor':>8}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<36} {median:>9.3f} {median / floor:>8.1f}")


if __name__ == "__main__":
    main()

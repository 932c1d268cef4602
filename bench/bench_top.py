"""`sgf top` with ten loops running: the CPU it uses, against the target < 5 % of a core.

Ten stand-in loops across two projects (each a sleeping process named in a PID file, with a
run record and a log that grows every half second, as a busy agent's does), a pensa database
in each project, and the real dashboard (Textual's headless driver, refreshing once a second,
`--all`) for BENCH_SECONDS (default 30). The CPU time of this process (UI, collector thread
and the pn runs it starts) is printed per second of wall time. The exit code is always 0:
this prints measurements, it is not a test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ralph.shared import pids
from sgf.loop import loopindex, runs
from sgf.top.app import TopApp
from sgf.top.collect import Collector

WRITER = """
import sys, time
while True:
    time.sleep(0.5)
    for path in sys.argv[1:]:
        with open(path, "a") as f:
            f.write(f"-> Bash(make test) at {time.time():.1f}\\n")
"""
SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))
BIN = Path(sys.executable).parent


def project(root: Path, env: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([str(BIN / "pn"), "init"], cwd=root, env=env, capture_output=True, check=True)
    for n in range(20):
        subprocess.run(
            [str(BIN / "pn"), "create", f"task {n}", "-t", "task"],
            cwd=root,
            env=env,
            capture_output=True,
            check=True,
        )
    return root


def loop(root: Path, n: int) -> tuple[subprocess.Popen[bytes], str]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    loop_id = f"build-s{n}-20260301T1000{n:02d}"
    path = runs.pid_path(root, loop_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{child.pid} {pids.start_time(child.pid)}\n")
    record = runs.record_path(root, loop_id)
    record.parent.mkdir(parents=True, exist_ok=True)
    events = [{"event": "start", "at": "2026-03-01T10:00:00Z", "iterations": 20}]
    for i in range(1, 8):
        events.append({"event": "iteration_start", "index": i, "total": 20})
        events.append({"event": "iteration", "index": i, "cost": 0.1 * i, "tokens": 5000})
    record.write_text("".join(json.dumps(e) + "\n" for e in events))
    runs.log_path(root, loop_id).parent.mkdir(parents=True, exist_ok=True)
    return child, loop_id


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "XDG_RUNTIME_DIR": str(base / "rt"), "PATH": f"{BIN}:/usr/bin:/bin"}
        roots = [project(base / name, env) for name in ("shop", "blog")]
        count = int(os.environ.get("BENCH_LOOPS", "10"))
        loops = [(root, *loop(root, n)) for n in range(count) for root in [roots[n % 2]]]
        # every log grows twice a second, written by another process (not measured)
        logs = [str(runs.log_path(root, loop_id)) for root, _, loop_id in loops]
        writer = subprocess.Popen([sys.executable, "-c", WRITER, *logs])
        listed = contextlib.ExitStack()
        for root, child, loop_id in loops:  # as sgf lists them: how --all finds "blog"
            listed.enter_context(
                loopindex.registered(root, loop_id, child.pid, started_at="t", env=env)
            )
        app = TopApp(Collector(roots[0], all_projects=True, env=env), scope="bench", env=env)

        async def drive() -> tuple[float, float]:
            async with app.run_test(size=(160, 40)) as pilot:
                while len(app.rows) < len(loops) or not app.snap:
                    await pilot.pause(0.1)
                before = time.process_time(), _children(), time.monotonic()
                await pilot.pause(SECONDS)
                after = time.process_time(), _children(), time.monotonic()
            cpu = (after[0] - before[0]) + (after[1] - before[1])
            return cpu, after[2] - before[2]

        try:
            cpu, wall = asyncio.run(drive())
        finally:
            writer.kill()
            writer.wait()
            listed.close()
            for _, child, _ in loops:
                child.kill()
                child.wait()
        share = 100 * cpu / wall
        print(f"{'case':<40} {'cpu s':>8} {'wall s':>8} {'% core':>8} {'target':>8}")
        print(f"{'sgf top --all, 10 loops, 2 projects':<40} {cpu:8.2f} {wall:8.1f} "
              f"{share:8.1f} {'< 5.0':>8}")  # fmt: skip


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()

"""ralph's own overhead: per-iteration cost in Docker beyond `docker run --rm IMAGE true`, and
stream formatting throughput. Prints a table; exits 1 when a target is missed.

Targets: median iteration overhead <= 0.5 s over 20 iterations; >= 20,000 events/s.
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

from ralph import loop
from ralph.models import Config, Prompt, SandboxKind, Timeouts
from ralph.render import Output
from ralph.stream import Parser

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "packages" / "ralph" / "tests" / "fixtures" / "stream" / "tools.jsonl"
IMAGE = os.environ.get("SPRINGFIELD_BASE_IMAGE", "springfield-base:bookworm")
RUNS = 20
QUICK_AGENT = """#!/bin/sh
cat >/dev/null
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}'
echo '{"type":"result","subtype":"success","num_turns":1,"total_cost_usd":0}'
"""


class Timed(Output):
    """Output that notes when each banner (iteration start) is printed."""

    def __init__(self) -> None:
        super().__init__(io.StringIO(), io.StringIO(), styled=False)
        self.starts: list[float] = []

    def banner(self, index: int, total: int, loop_id: str) -> None:
        self.starts.append(time.perf_counter())
        super().banner(index, total, loop_id)


def docker_run_baseline() -> list[float]:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(["docker", "run", "--rm", IMAGE, "true"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def ralph_iterations(project: Path) -> list[float]:
    agent = project / "agent.sh"
    agent.write_text(QUICK_AGENT)
    agent.chmod(0o755)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    # the agent works in a clone of the project's commits: the script must be one of them
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run(["git", "add", "agent.sh"], cwd=project, check=True)
    subprocess.run(["git", *identity, "commit", "-qm", "agent"], cwd=project, check=True)
    config = Config(
        project=project,
        prompt=Prompt("go"),
        iterations=RUNS,
        afk=True,
        loop_id=f"bench-{os.getpid()}",
        template=IMAGE,
        auto_push=False,
        command=str(agent),
        sandbox=SandboxKind.DOCKER,
        timeouts=Timeouts(),
    )
    out = Timed()
    code = loop.run(config, out, env=dict(os.environ), max_iterations=RUNS)
    ended = time.perf_counter()
    assert code == 2, out
    bounds = [*out.starts, ended]
    return [b - a for a, b in itertools.pairwise(bounds)]


def formatting_rate() -> tuple[int, float]:
    lines = RECORDING.read_bytes().splitlines(keepends=True)
    data = b"".join(lines * (40_000 // len(lines) + 1))
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    out = Output(io.StringIO(), io.StringIO(), styled=False)
    root = Path("/tmp/springfield-stream-wvaosej_/work")
    started = time.perf_counter()
    count = 0
    for event in Parser().events(chunks):
        out.event(event, root=root)
        count += 1
    return count, time.perf_counter() - started


def main() -> int:
    rows: list[tuple[str, str, str, bool]] = []
    docker_ok = subprocess.run(
        ["docker", "image", "inspect", IMAGE], capture_output=True
    ).returncode
    if docker_ok == 0:
        with tempfile.TemporaryDirectory(prefix="bench-ralph-") as tmp:
            baseline = statistics.median(docker_run_baseline())
            iterations = ralph_iterations(Path(tmp))
        median = statistics.median(iterations)
        overhead = median - baseline
        rows.append(("docker run --rm IMAGE true (median of 20)", f"{baseline:.3f} s", "", True))
        rows.append(("ralph iteration, instant agent (median of 20)", f"{median:.3f} s", "", True))
        rows.append(
            ("ralph overhead per iteration", f"{overhead:+.3f} s", "<= 0.500 s", overhead <= 0.5)
        )
    else:
        rows.append(("docker overhead", "skipped", f"no image {IMAGE}", True))
    count, seconds = formatting_rate()
    rate = count / seconds
    rows.append(
        ("stream parse + format", f"{rate:,.0f} events/s", ">= 20,000 events/s", rate >= 20_000)
    )
    width = max(len(r[0]) for r in rows)
    print(f"{'ralph benchmark'.ljust(width)}  {'measured':>18}  {'target':>20}  ok")
    for name, value, target, ok in rows:
        print(f"{name.ljust(width)}  {value:>18}  {target:>20}  {'yes' if ok else 'NO'}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Claim latency benchmark: what publishing a claim through git adds to claim-next.

`pn claim-next` in a clone of a bare remote (on the local filesystem, so the figure is git's
own work and not a network's), with claims local and with `PN_CLAIMS=git` (fetch, commit the
claim on the fetched tip, push), uncontended; then with a second clone that published a claim
first, so the first task the database offers is already held on the remote. Prints medians
and the added latency.

Then the compare-and-swap under load: three clones of one bare remote, each with 8, then 16
`pn claim-next --json` processes started at once (a barrier file), with as many ready tasks
as claimers. Prints p50, p99 and the maximum latency, the double claims (a task handed to
two claimers) and the failed claims (a non-zero exit): both must be 0. The exit code is
always 0.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

BIN = Path(sys.executable).parent
PN = str(BIN / "pn")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "15"))
LOAD_ROUNDS = int(os.environ.get("BENCH_GIT_CLAIM_ROUNDS", "4"))
CLONES = 3
STARTER = """
import os, subprocess, sys, time
barrier = sys.argv[1]
while not os.path.exists(barrier):
    time.sleep(0.0005)
start = time.perf_counter()
done = subprocess.run(sys.argv[2:], capture_output=True, text=True)
print(f"{time.perf_counter() - start:.6f}")
print(done.returncode)
print(done.stdout.strip() or "null")
"""


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return done.stdout


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    run(argv, cwd, env)
    return time.perf_counter() - start


def clone(remote: Path, path: Path, env: dict[str, str]) -> Path:
    run(["git", "clone", "-q", str(remote), str(path)], path.parent, env)
    run([PN, "init"], path, env)
    return path


def isolated(base: Path) -> dict[str, str]:
    """An environment with its own git identity and home, and no PN_* of the caller."""
    home = base / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = b@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PN_")}
    return {
        **env,
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def seeded(base: Path, env: dict[str, str], tasks: int) -> Path:
    """A repository holding a pensa project with `tasks` ready tasks, committed."""
    seed = base / "seed"
    seed.mkdir()
    run(["git", "init", "-q"], seed, env)
    run([PN, "init"], seed, env)
    for n in range(tasks):
        run([PN, "q", f"task {n}", "-t", "task"], seed, env)
    run([PN, "export", "--stage"], seed, env)
    run(["git", "add", "-A"], seed, env)
    run(["git", "commit", "-qm", "tasks"], seed, env)
    return seed


def serial() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-claims-") as tmp:
        base = Path(tmp)
        env = {**isolated(base), "PN_CLAIM_BACKOFF": "0"}
        seed = seeded(base, env, 4 * ROUNDS + 4)
        remote = base / "remote.git"
        run(["git", "clone", "-q", "--bare", str(seed), str(remote)], base, env)
        one = clone(remote, base / "one", env)
        other = clone(remote, base / "other", env)
        claim = [PN, "claim-next", "--json"]
        local = {**env, "PN_ACTOR": "local"}
        published = {**env, "PN_ACTOR": "one", "PN_CLAIMS": "git"}
        rival = {**env, "PN_ACTOR": "other", "PN_CLAIMS": "git"}
        samples: dict[str, list[float]] = {"local": [], "git": [], "git, behind a rival": []}
        for _ in range(ROUNDS):
            samples["local"].append(timed(claim, one, local))
            samples["git"].append(timed(claim, one, published))
            run(claim, other, rival)  # `other` publishes first: `one`'s first pick is held
            samples["git, behind a rival"].append(timed(claim, one, published))
    floor = statistics.median(samples["local"])
    print(f"pn claim-next latency, median of {ROUNDS} runs (bare remote on local disk)")
    print(f"{'claims':<20} {'median':>9} {'added':>9}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<20} {median * 1000:>7.1f}ms {(median - floor) * 1000:>+7.1f}ms")


class Outcome(NamedTuple):
    """One claimer's answer: its latency, exit code and the task it got (None: nothing)."""

    seconds: float
    code: int
    task: str | None


def one_round(seed: Path, base: Path, env: dict[str, str], per_clone: int) -> list[Outcome]:
    """Three fresh clones of a fresh remote, `per_clone` claimers in each, started at once."""
    remote = base / "remote.git"
    run(["git", "clone", "-q", "--bare", str(seed), str(remote)], base, env)
    clones = [clone(remote, base / f"clone-{n}", env) for n in range(CLONES)]
    barrier = base / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STARTER, str(barrier), PN, "claim-next", "--json"],
            cwd=where,
            env={**env, "PN_CLAIMS": "git", "PN_ACTOR": f"{where.name}-{n}"},
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(per_clone)
        for where in clones
    ]
    time.sleep(1.0)  # every starter is polling the barrier
    barrier.touch()
    outcomes = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        seconds, code, payload = out.splitlines()[:3]
        issue = json.loads(payload) if code == "0" else None
        outcomes.append(Outcome(float(seconds), int(code), issue["id"] if issue else None))
    return outcomes


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def under_load() -> None:
    print(
        f"\npn claim-next with PN_CLAIMS=git, {CLONES} clones of one bare remote, claimers "
        f"started at once, as many ready tasks as claimers, {LOAD_ROUNDS} rounds"
    )
    print(
        f"{'claimers':>9} {'claims':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'double':>7} {'failed':>7}  result"
    )
    for per_clone in (8, 16):
        outcomes: list[Outcome] = []
        doubles = 0
        with tempfile.TemporaryDirectory(prefix="bench-git-claims-") as tmp:
            base = Path(tmp)
            env = isolated(base)
            seed = seeded(base, env, CLONES * per_clone)
            for n in range(LOAD_ROUNDS):
                round_dir = base / f"round-{n}"
                round_dir.mkdir()
                got = one_round(seed, round_dir, env, per_clone)
                tasks = [o.task for o in got if o.task]
                doubles += len(tasks) - len(set(tasks))
                outcomes += got
        times = [o.seconds for o in outcomes]
        failed = sum(o.code != 0 for o in outcomes)
        verdict = "pass" if doubles == 0 and failed == 0 else "FAIL"
        print(
            f"{f'{CLONES}x{per_clone}':>9} {len(outcomes):>7} "
            f"{statistics.median(times) * 1000:>8.0f} {percentile(times, 0.99) * 1000:>8.0f} "
            f"{max(times) * 1000:>8.0f} {doubles:>7} {failed:>7}  {verdict}"
        )


def main() -> None:
    serial()
    under_load()


if __name__ == "__main__":
    main()

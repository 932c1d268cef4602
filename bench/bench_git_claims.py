"""Claim latency benchmark (issue 14): what publishing a claim through git adds to claim-next.

`pn claim-next` in a clone of a bare remote (on the local filesystem, so the figure is git's
own work and not a network's), with claims local and with `PN_CLAIMS=git` (commit the JSONL,
push), uncontended; then with a second clone that pushed first, so each claim is rejected
once, fetched, rebased and claimed again. Prints medians and the added latency.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
PN = str(BIN / "pn")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "15"))


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


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-claims-") as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        (home / ".gitconfig").write_text(
            "[user]\n\tname = Bench\n\temail = b@example.com\n[init]\n\tdefaultBranch = main\n"
        )
        env = {
            **os.environ,
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PN_CLAIM_BACKOFF": "0",
        }
        env.pop("PN_DIR", None)
        seed = base / "seed"
        seed.mkdir()
        run(["git", "init", "-q"], seed, env)
        run([PN, "init"], seed, env)
        for n in range(4 * ROUNDS + 4):
            run([PN, "q", f"task {n}", "-t", "task"], seed, env)
        run([PN, "export", "--stage"], seed, env)
        run(["git", "add", "-A"], seed, env)
        run(["git", "commit", "-qm", "tasks"], seed, env)
        remote = base / "remote.git"
        run(["git", "clone", "-q", "--bare", str(seed), str(remote)], base, env)
        one = clone(remote, base / "one", env)
        other = clone(remote, base / "other", env)
        claim = [PN, "claim-next", "--json"]
        local = {**env, "PN_ACTOR": "local"}
        published = {**env, "PN_ACTOR": "one", "PN_CLAIMS": "git"}
        rival = {**env, "PN_ACTOR": "other", "PN_CLAIMS": "git"}
        samples: dict[str, list[float]] = {"local": [], "git": [], "git, lost a race": []}
        for _ in range(ROUNDS):
            samples["local"].append(timed(claim, one, local))
            samples["git"].append(timed(claim, one, published))
            run(claim, other, rival)  # `other` pushes first: `one`'s next push is rejected
            samples["git, lost a race"].append(timed(claim, one, published))
    floor = statistics.median(samples["local"])
    print(f"pn claim-next latency, median of {ROUNDS} runs (bare remote on local disk)")
    print(f"{'claims':<20} {'median':>9} {'added':>9}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<20} {median * 1000:>7.1f}ms {(median - floor) * 1000:>+7.1f}ms")


if __name__ == "__main__":
    main()

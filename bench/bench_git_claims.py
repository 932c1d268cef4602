"""Git claims benchmark: loops on many machines, one backlog, a bare remote on this disk.

First what publishing a claim on the remote's claims ref adds to `pn claim-next`,
uncontended: claims local, with `PN_CLAIMS=git`, and with `PN_CLAIMS=git` behind a second
clone that published first (so the first task the database offers is already held).

Then the loops: 3, then 5 clones of one bare remote holding 60 ready tasks, each clone
running one build loop the way ralph runs it with `claims = "git"`:

1. the host claims the iteration's task (`pn claim-next -t task --json`, PN_CLAIMS=git);
2. the agent's `pn claim-next` (PN_CLAIMS=held) answers with that task; the agent writes a
   file, closes the task and commits (`git add -A && git commit`, with pensa's export as
   the one hook, as in a loop's workspace);
3. the host pushes the branch with ralph's own push (`ralph.publish.push`: on a rejection one
   fetch, a replay onto the remote's tip, and again, three rounds);
4. with nothing left to claim, the loop ends as ralph ends one: `pn release --held-by`
   publishes its closes and releases on the claims ref, and a push that failed earlier is
   pushed again.

It prints claims per second, the claim latency (p50, p99, max), the tasks worked twice, the
code pushes that failed after their retries, and the unpublished closes (closed in a clone
but not on the remote's branch, or not on the claims ref). Targets: 0 double claims, 0 failed
pushes, 0 unpublished closes, claim p99 <= 2 s on a quiet 2-core machine. The exit code is
always 0.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from ralph import publish
from ralph.integrate import Lane

BIN = Path(sys.executable).parent
PN = str(BIN / "pn")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "15"))
TASKS = int(os.environ.get("BENCH_GIT_CLAIM_TASKS", "60"))
CLONES = tuple(int(n) for n in os.environ.get("BENCH_GIT_CLAIM_CLONES", "3,5").split(","))
BOARD = "refs/pensa/claims"


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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PN_", "RALPH_"))}
    return {
        **env,
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def seeded(base: Path, env: dict[str, str], tasks: int) -> Path:
    """A bare remote holding a pensa project with `tasks` ready tasks."""
    seed = base / "seed"
    seed.mkdir()
    run(["git", "init", "-q"], seed, env)
    run([PN, "init"], seed, env)
    for n in range(tasks):
        run([PN, "q", f"task {n}", "-t", "task"], seed, env)
    run([PN, "export", "--stage"], seed, env)
    run(["git", "add", "-A"], seed, env)
    run(["git", "commit", "-qm", "tasks"], seed, env)
    remote = base / "remote.git"
    run(["git", "clone", "-q", "--bare", str(seed), str(remote)], base, env)
    return remote


def serial() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-claims-") as tmp:
        base = Path(tmp)
        env = {**isolated(base), "PN_CLAIM_BACKOFF": "0"}
        remote = seeded(base, env, 4 * ROUNDS + 4)
        one = clone(remote, base / "one", env)
        other = clone(remote, base / "other", env)
        claim = [PN, "claim-next", "--json"]
        samples: dict[str, list[float]] = {"local": [], "git": [], "git, behind a rival": []}
        for n in range(ROUNDS):
            # a fresh actor each time: an actor's held task would come back (one per agent)
            local = {**env, "PN_ACTOR": f"local-{n}"}
            samples["local"].append(timed(claim, one, local))
            published = {**env, "PN_ACTOR": f"one-{n}", "PN_CLAIMS": "git"}
            samples["git"].append(timed(claim, one, published))
            rival = {**env, "PN_ACTOR": f"other-{n}", "PN_CLAIMS": "git"}
            run(claim, other, rival)  # `other` publishes first: `one`'s first pick is held
            behind = {**env, "PN_ACTOR": f"behind-{n}", "PN_CLAIMS": "git"}
            samples["git, behind a rival"].append(timed(claim, one, behind))
    floor = statistics.median(samples["local"])
    print(f"pn claim-next latency, median of {ROUNDS} runs (bare remote on local disk)")
    print(f"{'claims':<20} {'median':>9} {'added':>9}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<20} {median * 1000:>7.1f}ms {(median - floor) * 1000:>+7.1f}ms")


class Tally:
    """What the loops did, gathered from their threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.claims: list[float] = []  # seconds per host claim (tasks and "nothing" alike)
        self.worked: Counter[str] = Counter()
        self.pushes = 0
        self.rounds: list[int] = []  # rejected rounds per push
        self.failed: list[str] = []
        self.errors: list[str] = []


class Machine(NamedTuple):
    """One clone and its loop's actor."""

    root: Path
    actor: str
    env: dict[str, str]


def pn_json(machine: Machine, extra: dict[str, str], *args: str) -> object:
    return json.loads(run([PN, *args, "--json"], machine.root, {**machine.env, **extra}))


def work(machine: Machine, tally: Tally) -> None:
    """One build loop, as ralph runs it with claims = "git"."""
    lane = Lane(machine.root, "main", machine.actor.split("@")[0], env=machine.env)
    host = {"PN_CLAIMS": "git", "PN_ACTOR": machine.actor}
    agent = {"PN_CLAIMS": "held", "PN_ACTOR": machine.actor}

    def push() -> None:
        waits: list[float] = []

        def wait(seconds: float) -> None:
            waits.append(seconds)
            time.sleep(seconds)

        pushed = publish.push(lane, sleep=wait)
        with tally.lock:
            tally.pushes += 1
            tally.rounds.append(len(waits))
            if pushed.failed:
                tally.failed.append(f"{machine.root.name}: {pushed.detail}")

    try:
        while True:
            start = time.perf_counter()
            task = pn_json(machine, host, "claim-next", "-t", "task")
            with tally.lock:
                tally.claims.append(time.perf_counter() - start)
            if task is None:
                break
            assert isinstance(task, dict)
            held = pn_json(machine, agent, "claim-next", "-t", "task")
            assert isinstance(held, dict), held
            assert held["id"] == task["id"], (task, held)
            (machine.root / "work").mkdir(exist_ok=True)
            (machine.root / "work" / f"{task['id']}.txt").write_text(machine.actor + "\n")
            env = {**machine.env, **agent}
            run([PN, "close", task["id"], "--reason", "built"], machine.root, env)
            run(["git", "add", "-A"], machine.root, env)
            # as in a loop's workspace, whose one hook is pensa's export (inside/workspace.sh)
            run([PN, "export", "--stage"], machine.root, env)
            quiet = ["git", "-c", "core.hooksPath=/dev/null", "commit", "-qm"]
            run([*quiet, f"[{task['id']}] work"], machine.root, env)
            with tally.lock:
                tally.worked[task["id"]] += 1
            push()
        pn_json(machine, host, "release", "--held-by", machine.actor)
        if publish.ahead(lane) > 0:
            push()
    except (subprocess.CalledProcessError, AssertionError) as e:
        detail = e.stderr if isinstance(e, subprocess.CalledProcessError) else str(e)
        with tally.lock:
            tally.errors.append(f"{machine.root.name}: {e} {detail}")


def closed_on(remote: Path, env: dict[str, str]) -> set[str]:
    """The issues the remote's main holds closed."""
    names = run(["git", "ls-tree", "--name-only", "main:.pensa"], remote, env).split()
    out = set()
    for name in names:
        if name.startswith("issues") and name.endswith(".jsonl"):
            for line in run(["git", "show", f"main:.pensa/{name}"], remote, env).splitlines():
                issue = json.loads(line)
                if issue["status"] == "closed":
                    out.add(issue["id"])
    return out


def on_board(remote: Path, env: dict[str, str]) -> set[str]:
    """The issues the claims ref holds closed."""
    out = set()
    for name in run(["git", "ls-tree", "-r", "--name-only", BOARD], remote, env).split():
        entry = json.loads(run(["git", "show", f"{BOARD}:{name}"], remote, env))
        if entry["state"] == "closed":
            out.add(name.rsplit("/", 1)[-1])
    return out


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def loops(clones: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-git-loops-") as tmp:
        base = Path(tmp)
        env = isolated(base)
        remote = seeded(base, env, TASKS)
        machines = [
            Machine(clone(remote, base / f"m{n}", env), f"build-1@m{n}", env) for n in range(clones)
        ]
        tally = Tally()
        threads = [threading.Thread(target=work, args=(m, tally)) for m in machines]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
        done_here: set[str] = set()
        for machine in machines:
            issues = pn_json(machine, {}, "list", "--all")
            assert isinstance(issues, list)
            done_here |= {i["id"] for i in issues if i["status"] == "closed"}
        on_main, closed_board = closed_on(remote, env), on_board(remote, env)
    claimed = sum(tally.worked.values())
    doubles = sum(n - 1 for n in tally.worked.values() if n > 1)
    unpublished = len(done_here - on_main) + len(done_here - closed_board)
    ok = not (doubles or tally.failed or unpublished or tally.errors) and claimed == TASKS
    p99 = percentile(tally.claims, 0.99)
    verdict = "pass" if ok and p99 <= 2.0 else ("FAIL" if not ok else "slow")
    p50 = statistics.median(tally.claims)
    print(
        f"{f'{clones}x{TASKS}':>7} {claimed / wall:>9.2f} {p50 * 1000:>7.0f}"
        f" {p99 * 1000:>7.0f} {max(tally.claims) * 1000:>7.0f} {doubles:>7}"
        f" {len(tally.failed):>4}/{tally.pushes:<4} {max(tally.rounds):>6} {unpublished:>11}"
        f" {wall:>7.1f}s  {verdict}"
    )
    for line in [*tally.failed, *tally.errors][:5]:
        print(f"        {line.strip()[:160]}")


def main() -> None:
    # ralph's own push runs `pn sync` as a loop's does: pn on this process's PATH too
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    serial()
    print(
        '\nbuild loops with claims = "git": clones x tasks on one bare remote, '
        "the host claims, the agent closes and commits, ralph pushes"
    )
    print(
        f"{'clones':>7} {'claims/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'double':>7}"
        f" {'failed/pushes':>9} {'rounds':>6} {'unpublished':>11} {'wall':>8}  result"
    )
    for clones in CLONES:
        loops(clones)


if __name__ == "__main__":
    main()

"""How fast each backend fails loudly and stops, with the real pinned CLIs on the host.

Per agent (claude, codex, opencode, gemini), ralph with its default timeouts and
`--sandbox none`:
- closed port: the endpoint refuses every connection; seconds until the first retry line,
  and until the loop stops (the breaker opens after three iterations). Target: under 120 s.
- SIGTERM: the agent is retrying that endpoint when ralph gets SIGTERM; seconds until the
  agent's process group is gone. Target: under 10 s.

Needs the pinned CLIs (scripts/ensure-agents.sh, and SPRINGFIELD_CLAUDE or `claude` on PATH);
an agent without its CLI is left out. Exits 1 when a target is missed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOOP_TARGET = 120.0
STOP_TARGET = 10.0
DEADLINE = 300.0
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def clis() -> dict[str, Path]:
    """The pinned CLIs this machine has."""
    found: dict[str, Path] = {}
    claude = os.environ.get("SPRINGFIELD_CLAUDE") or shutil.which("claude")
    if claude:
        found["claude"] = Path(claude)
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "ensure-agents.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.splitlines():
        name, _, path = line.partition(" ")
        found[name] = Path(path)
    return found


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def environment(agent: str, binary: Path, home: Path) -> dict[str, str]:
    url = closed_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PN_", "RALPH_", "SGF_"))}
    env |= {
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        **IDENTITY,
        "RALPH_SANDBOX": "none",
        "RALPH_AUTO_PUSH": "false",
        "RALPH_AGENT": agent,
        "RALPH_COMMAND": str(binary),
    }
    if agent == "claude":
        return env | {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-bench", "IS_SANDBOX": "1"}
    if agent == "gemini":
        return env | {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "bench"}
    return env | {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk", "OPENAI_MODEL": "m-1"}


def project(where: Path) -> Path:
    root = where / "project"
    root.mkdir()
    env = os.environ | IDENTITY
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "first"], cwd=root, env=env)
    return root


def start(root: Path, env: dict[str, str], log: Path, iterations: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "ralph", "-a", iterations, "Do the work."],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def until(condition: Callable[[], object], deadline: float) -> float:
    """Seconds until `condition()` held (polled); raises TimeoutError past `deadline`."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > deadline:
            raise TimeoutError
        time.sleep(0.05)
    return time.monotonic() - began


def closed(agent: str, binary: Path, where: Path) -> tuple[float, float]:
    """(seconds to the first retry line, seconds until the loop stopped)."""
    log = where / "closed.out"
    ralph = start(project(where), environment(agent, binary, where), log, "5")
    try:
        first = until(lambda: b"~ API retry 1" in log.read_bytes(), DEADLINE)
        stopped = first + until(lambda: ralph.poll() is not None, DEADLINE)
    finally:
        if ralph.poll() is None:
            ralph.kill()
        ralph.wait()
    return first, stopped


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def sigterm(agent: str, binary: Path, where: Path) -> float:
    """Seconds from ralph's SIGTERM until the retrying agent's process group is gone."""
    log = where / "sigterm.out"
    env = environment(agent, binary, where) | {"RALPH_API_WAIT": "600"}
    ralph = start(project(where), env, log, "1")
    try:
        until(lambda: b"~ API retry 1" in log.read_bytes(), DEADLINE)
        path = Path(f"/proc/{ralph.pid}/task/{ralph.pid}/children")
        [pid] = [int(c) for c in path.read_text().split() if os.getpgid(int(c)) == int(c)]
        ralph.send_signal(signal.SIGTERM)
        return until(lambda: group_gone(pid), DEADLINE)
    finally:
        if ralph.poll() is None:
            ralph.wait(timeout=60)


def main() -> int:
    found = clis()
    if not found:
        print("bench_agent_stops: no agent CLI found; skipped")
        return 0
    print("Each backend at a closed port, ralph's default timeouts (seconds)")
    print(f"{'agent':<9} {'first retry':>11} {'loop stopped':>13} {'SIGTERM stop':>13}")
    missed = False
    for agent in ("claude", "codex", "opencode", "gemini"):
        if agent not in found:
            print(f"{agent:<9} {'(no CLI)':>11}")
            continue
        with (
            tempfile.TemporaryDirectory(prefix=f"bench-stops-{agent}-") as a,
            tempfile.TemporaryDirectory(prefix=f"bench-stops-{agent}-") as b,
        ):
            first, stopped = closed(agent, found[agent], Path(a))
            stop = sigterm(agent, found[agent], Path(b))
        missed |= stopped > LOOP_TARGET or stop > STOP_TARGET
        print(f"{agent:<9} {first:>11.1f} {stopped:>13.1f} {stop:>13.1f}")
    print(f"targets: loop stopped < {LOOP_TARGET:g} s, SIGTERM stop < {STOP_TARGET:g} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

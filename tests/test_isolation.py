"""The suite is isolated from the world: run where an agent's variables point at a live
tracker (inside a loop's container or shell), pensa's and sgf's suites pass and leave that
tracker byte for byte as it was.

The root conftest clears every PN_*, RALPH_* and SGF_* variable by prefix and moves HOME and
the caches into each test's own directory; this test runs the two suites in a child pytest with
those variables set, the way sgf sets them for its agents.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def snapshot(tree: Path) -> dict[str, str]:
    """Every file under `tree` (its git directory included) with its content hash."""
    return {
        str(path.relative_to(tree)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(tree.rglob("*"))
        if path.is_file()
    }


def agent_variables(tracker: Path) -> dict[str, str]:
    """What sgf gives an agent of a loop in `tracker`, plus a stray sandbox mode."""
    return {
        "PN_SHARED_DB": str(tracker / ".pensa" / "db.sqlite"),
        "PN_DIR": str(tracker / ".pensa"),
        "PN_CLAIMS": "held",
        "PN_STUCK_AFTER": "1",
        "PN_ACTOR": "agent-of-a-real-loop",
        "RALPH_SANDBOX": "none",
        "SGF_RALPH": str(tracker / "not-ralph"),
    }


def make_tracker(path: Path, env: dict[str, str]) -> Path:
    path.mkdir()

    def run(*argv: str) -> None:
        subprocess.run(argv, cwd=path, env=env, check=True, capture_output=True)

    run("git", "init", "-q", "-b", "main")
    run("pn", "init")
    run("pn", "create", "a task someone really has", "-t", "task")
    run("git", "add", "-A")
    run("git", "commit", "-q", "-m", "a real tracker")
    return path


# Two whole suites in a child pytest: longer than the suite's default limit per test.
@pytest.mark.timeout(1200)
def test_agent_variables_never_reach_a_real_tracker(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    tracker = make_tracker(tmp_path / "real-project", env)
    before = snapshot(tracker)

    suites = [str(ROOT / "packages" / name / "tests") for name in ("pensa", "sgf")]
    quick = ["-m", "not docker and not claude and not e2e", "-q", "-x", "-p", "no:cacheprovider"]
    # The child reruns tests the suite itself already measures: coverage stays out of it.
    unmeasured = {k: v for k, v in env.items() if not k.startswith("COVERAGE_PROCESS_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *quick, *suites],
        cwd=ROOT,
        env={**unmeasured, **agent_variables(tracker)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )

    tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
    assert done.returncode == 0, f"the suites failed with an agent's variables set:\n{tail}"
    assert snapshot(tracker) == before, "a test wrote into the tracker the variables named"


def test_a_suite_started_with_sigint_ignored_starts_its_console_scripts_able_to_hear_it(
    tmp_path: Path,
) -> None:
    """A script's background job (`nohup .ci/run &`) starts the suite with SIGINT ignored;
    the tests that stop a console script with SIGINT still find it listening."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import signal, subprocess, sys\n"
        "import pytest\n"
        "@pytest.mark.process\n"
        "def test_a_child_hears_sigint():\n"
        "    code = 'import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)'\n"
        "    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n"
        "    assert out.stdout.strip() == 'False'\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
         "-n", "0", str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

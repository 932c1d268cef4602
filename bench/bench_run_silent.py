"""Tool-result bytes the model receives in one build iteration, with and without run-silent.

One end-to-end run per variant: `sgf build -a 1` with the real claude in the real sandbox,
driven by the scripted model, which records every request. The iteration runs a project's
backpressure the way an agent does: lint and a 400-test suite that pass, an edit that breaks
one test (600 lines of output, the failure at the end), the fix, and the suite again. The
bytes are the `tool_result` contents of those Bash calls as the model got them. Needs Docker
and the pinned claude (SPRINGFIELD_CLAUDE); prints a note and exits 0 without them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ralph.testing.model_server import ModelServer  # noqa: E402
from ralph.testing.scenario import parse_scenario  # noqa: E402

from tests.e2e_harness.project import make_project  # noqa: E402
from tests.e2e_harness.scenarios import FAKE_TOKEN, tool_results  # noqa: E402

IMAGE = "springfield-sandbox-python:latest"
BASE = "springfield-base:bookworm"  # scripts/ensure-base-image.sh
SUITE = """import sys
failing = len(sys.argv) > 1 and sys.argv[1] == "fail"
for i in range(400 if sys.argv[1:] != ["lint"] else 60):
    print(f"tests/test_module_{i // 20}.py::test_case_{i} PASSED")
if failing:
    for i in range(200):
        print(f"    frame {i}: in helper_{i}")
    print("E   AssertionError: expected 3, got 4")
    sys.exit(1)
"""
STEPS = [("lint", "lint"), ("tests", "pass"), ("tests", "fail"), ("tests", "pass")]


def scenario(silent: bool) -> dict[str, object]:
    steps: list[dict[str, object]] = []
    for label, mode in STEPS:
        command = f"python3 suite.py {mode}"
        if silent:
            command = f"run-silent {label} -- {command}"
        steps.append({"tool": "Bash", "input": {"command": command}})
    steps.append({"tool": "Bash", "input": {"command": 'echo "$RALPH_LOOP_ID" > .ralph-complete'}})
    steps.append({"text": "Backpressure done."})
    return {"steps": steps}


def measure(silent: bool, env: dict[str, str]) -> tuple[int, int]:
    """(bytes of the backpressure tool results, bytes of all tool results)."""
    with tempfile.TemporaryDirectory(prefix="bench-run-silent-") as tmp:
        project = make_project(Path(tmp), env)
        (project.root / "suite.py").write_text(SUITE)
        project.commit_all("chore: a test suite")
        server = ModelServer(parse_scenario(scenario(silent))).start()
        try:
            project.env.update(ANTHROPIC_BASE_URL=server.url, CLAUDE_CODE_OAUTH_TOKEN=FAKE_TOKEN)
            done = project.sgf("build", "-a", "1")
            if done.returncode != 0:
                raise SystemExit(f"sgf build failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
            results = list(tool_results(server.requests))
        finally:
            server.stop()
    suite = sum(len(text.encode()) for _, command, text in results if "suite.py" in command)
    return suite, sum(len(text.encode()) for _, _, text in results)


def main() -> int:
    claude = os.environ.get("SPRINGFIELD_CLAUDE")
    if not claude or subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        print("bench_run_silent: needs Docker and SPRINGFIELD_CLAUDE; skipped")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-home-") as home:
        bin_dir = str(Path(sys.executable).parent)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PN_", "RALPH_", "SGF_"))}
        env.update(
            HOME=home,
            PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
            GIT_AUTHOR_NAME="bench",
            GIT_AUTHOR_EMAIL="bench@example.com",
            GIT_COMMITTER_NAME="bench",
            GIT_COMMITTER_EMAIL="bench@example.com",
        )
        build = ["sgf", "sandbox", "build", "--stack", "python", "--image", IMAGE]
        base = os.environ.get("SPRINGFIELD_BASE_IMAGE", BASE)
        build += ["--claude-binary", claude] + (["--base", base] if base else [])
        subprocess.run(build, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)
        rows = [("plain commands", *measure(False, env)), ("run-silent", *measure(True, env))]
    print("Tool-result bytes the model received in one build iteration")
    print(f"{'variant':<16} {'backpressure':>13} {'all tools':>10}")
    for name, suite, total in rows:
        print(f"{name:<16} {suite:>13,} {total:>10,}")
    saved = 1 - rows[1][1] / rows[0][1]
    print(f"run-silent sends {saved:.0%} fewer backpressure bytes ({len(STEPS)} runs, 1 failing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

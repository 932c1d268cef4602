"""End to end: `run-silent` in the sandbox image, as the model's tool results show it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import Scenario

from tests.e2e_harness.project import Project
from tests.e2e_harness.scenarios import tool_results

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.claude, pytest.mark.timeout(300)]

Model = Callable[[Scenario | dict[str, object]], ModelServer]
PASSING = "run-silent lint -- python3 -c 'print(\"all good\\n\" * 300)'"
FAILING = (
    "run-silent tests -- python3 -c "
    "'import sys; [print(f\"line {i}\") for i in range(500)]; sys.exit(4)'"
)


def test_run_silent_is_one_line_on_success_and_the_trimmed_output_on_failure(
    project: Project, model: Model
) -> None:
    steps = [
        {"tool": "Bash", "input": {"command": PASSING}},
        {"tool": "Bash", "input": {"command": FAILING}},
        {"tool": "Bash", "input": {"command": 'echo "$RALPH_LOOP_ID" > .ralph-complete'}},
        {"text": "Checked."},
    ]
    server = model({"steps": steps})

    done = project.sgf("build", "-a", "1")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = {command: text for _, command, text in tool_results(server.requests)}
    assert results[PASSING].strip() == "\u2713 lint"
    failed = results[FAILING]
    assert "\u2717 tests (exit 4)" in failed
    assert "line 19\\n... 420 lines left out ...\\nline 440" in failed.replace("\n", "\\n")
    assert "line 100" not in failed
    assert "Exit code 4" in failed

"""After ralph ends: a dead ralph's claims go back at once; advice fits the stop."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sgf.loop import ending, launch
from sgf.stages import Stage

from ..conftest import pn

Run = Callable[..., "subprocess.CompletedProcess[str]"]

# A ralph that claims a task as its loop (ralph's agents' PN_ACTOR is the loop id), writes the
# run record's first line, and dies by SIGKILL: nothing of ralph's own clean-up runs.
DYING_RALPH = """\
#!{python}
import json, os, signal, subprocess, sys
if "--check-options" in sys.argv:
    sys.exit(0)
loop = sys.argv[sys.argv.index("--loop-id") + 1]
subprocess.run(["pn", "claim-next", "--json"], env={{**os.environ, "PN_ACTOR": loop}}, check=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.process
def test_a_ralph_killed_with_sigkill_leaves_no_claim_behind(
    project: Path, sgf: Run, tool_env: dict[str, str], tmp_path: Path
) -> None:
    task = pn(project, tool_env, "create", "the task", "-t", "task")["id"]
    ralph = tmp_path / "dying-ralph"
    ralph.write_text(DYING_RALPH.format(python=sys.executable))
    ralph.chmod(0o755)

    done = sgf(
        project, "build", "-a", "2", env={"SGF_RALPH": str(ralph), "SGF_SKIP_PREFLIGHT": "1"}
    )

    assert done.returncode == 137, done.stdout + done.stderr
    shown = pn(project, tool_env, "show", task)
    assert (shown["status"], shown["assignee"]) == ("open", None)
    [released] = [
        e for e in pn(project, tool_env, "history", task) if e["event_type"] == "released"
    ]
    loop_id = released["actor"]
    assert loop_id.startswith("build-")
    assert released["detail"].endswith(f"loop {loop_id} ended: ralph died (exit 137)")
    assert f"sgf: ralph died holding {task}: released" in done.stderr
    findings = pn(project, tool_env, "doctor")["findings"]
    assert [f for f in findings if f["check"] in ("claim", "stale_claim")] == []


@pytest.mark.process
def test_an_exit_ralph_made_itself_is_left_to_ralph(
    project: Path, tool_env: dict[str, str]
) -> None:
    task = pn(project, tool_env, "create", "held", "-t", "task")["id"]
    pn(project, tool_env, "update", task, "--claim", "--actor", "build-20260101T000000")
    for code in ending.RALPH_CODES:
        assert ending.release_leftovers(project, "build-20260101T000000", code, tool_env) == []
    assert pn(project, tool_env, "show", task)["assignee"] == "build-20260101T000000"


def test_without_pn_nothing_is_released(project: Path, tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path / "empty")}
    assert ending.release_leftovers(project, "build-20260101T000000", 137, env) == []


def test_the_stop_reason_comes_from_the_run_record(project: Path) -> None:
    records = project / ".sgf" / "runs"
    records.mkdir(parents=True)
    lines = ["garbage", json.dumps({"event": "end", "stop_reason": "budget reached: cost"})]
    (records / "build-20260101T000000.jsonl").write_text("\n".join(lines) + "\n")
    assert ending.stop_reason(project, "build-20260101T000000") == "budget reached: cost"
    assert ending.stop_reason(project, "build-20260101T000001") is None


@pytest.mark.parametrize(
    ("code", "reason", "says", "never"),
    [
        (2, "iterations exhausted", "iterations exhausted: work may remain", "budget"),
        (2, None, "iterations exhausted: work may remain", "budget"),
        (
            2,
            "budget reached: cost $0.0030 of --max-cost $0.002",
            "budget reached: cost $0.0030 of --max-cost $0.002; work may remain: raise the budget",
            "iterations exhausted",
        ),
        (
            1,
            "3 iterations in a row failed; the last: the agent exited with status 1",
            "ralph stopped: 3 iterations in a row failed; the last: the agent exited with status 1",
            "work may remain",
        ),
        (1, None, "ralph stopped with an error", "work may remain"),
    ],
)
def test_the_advice_names_what_stopped_the_loop(
    code: int, reason: str | None, says: str, never: str
) -> None:
    advice = launch.meaning(code, Stage.BUILD, reason)
    assert says in advice
    assert never not in advice

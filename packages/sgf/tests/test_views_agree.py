"""Every view of one recorded loop reports the same numbers: ralph's totals line in
the loop's log, `sgf status --json`, piped `sgf status`, piped `sgf status --watch` and
`sgf top` through Textual's pilot. The loop is real: sgf, ralph, pn and the repo's fake agent
on the host; it completes on its second iteration, so the totals hold the completing one.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sgf import figures
from sgf.top import layout
from sgf.top.app import TopApp
from sgf.top.collect import Collector

pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]

AGENT = Path(__file__).resolve().parents[2] / "ralph" / "tests" / "agents" / "fake_agent.py"
SGF = Path(sys.executable).parent / "sgf"
PAID = ["result", {"total_cost_usd": 0.25, "usage": {"input_tokens": 90, "output_tokens": 10}}]


@pytest.fixture
def finished(project_template: Path, tmp_path: Path, tool_env: dict[str, str]) -> Path:
    """A project whose build loop ran two iterations, $0.25 and 100 tokens each, and
    completed on the second."""
    root = tmp_path / "shop"
    shutil.copytree(project_template, root, symlinks=True)
    script = {"1": [PAID], "2": [["write", ".ralph-complete", "$RALPH_LOOP_ID"], PAID]}
    (root / ".sgf" / "prompts" / "build.md").write_text(json.dumps(script) + "\n")
    env = {**tool_env, "SGF_SKIP_PREFLIGHT": "1", "RALPH_COMMAND": str(AGENT)}
    for argv in (["git", "add", "-A"], ["git", "commit", "-qm", "fake agent script"]):
        subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True)
    done = subprocess.run(
        [str(SGF), "build", "-a", "--sandbox", "none", "--no-push", "5"],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def test_every_view_of_one_loop_reports_the_same_numbers(
    finished: Path, tool_env: dict[str, str]
) -> None:
    status = json.loads(
        subprocess.run(
            [str(SGF), "status", "--json"], cwd=finished, env=tool_env,
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    (recent,) = status["recent"]
    loop_id = recent["loop_id"]
    assert (recent["iterations"], recent["cost"], recent["tokens"]) == (2, 0.5, 200)
    assert recent["stop_reason"] == "complete"
    want = {
        "iterations": figures.iterations(2, 5),
        "cost": figures.cost(0.5),
        "tokens": figures.tokens(200),
        "time": figures.duration(recent["seconds"]),
    }
    assert want == {"iterations": "2/5", "cost": "$0.5000", "tokens": "200", "time": want["time"]}

    # ralph's own totals line, in the loop's log
    log = (finished / ".sgf" / "logs" / f"{loop_id}.log").read_text()
    (totals,) = re.findall(r"^totals: .*$", log, flags=re.M)
    assert totals.startswith("totals: 2 iteration(s), ")
    assert f", {want['cost']}, {want['tokens']} tokens, {want['time']}; stopped: complete" in (
        totals
    )

    # piped `sgf status`: one plain row under its header
    text = subprocess.run(
        [str(SGF), "status"], cwd=finished, env=tool_env, capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    lines = text.splitlines()
    at = lines.index("Recent loops:")
    heads = re.split(r"\s{2,}", lines[at + 1])
    row = dict(zip(heads, re.split(r"\s{2,}", lines[at + 2]), strict=False))
    assert {k: row[k] for k in want} == want
    assert row["loop id"] == loop_id

    # piped `sgf status --watch`: the header, then the loop's row
    child = subprocess.Popen(
        [str(SGF), "status", "--watch"], cwd=finished, env=tool_env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    header, first = child.stdout.readline(), child.stdout.readline()
    child.send_signal(signal.SIGINT)
    child.communicate(timeout=120)
    row = dict(
        zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", first.strip()), strict=False)
    )
    assert {k: row[k] for k in want} == want
    assert row["loop id"] == loop_id

    # `sgf top`, through Textual's pilot
    app = TopApp(
        Collector(finished, all_projects=False, env=tool_env),
        scope="shop",
        env=tool_env,
        sgf=[str(SGF)],
    )

    async def drive() -> dict[str, str]:
        async with app.run_test(size=(200, 40)) as pilot:
            for _ in range(200):
                if app.rows:
                    break
                await pilot.pause(0.05)
            table = app.query_one("#loops")
            cells = [str(c) for c in table.get_row_at(0)]  # type: ignore[attr-defined]
            return dict(zip(layout.NAMES, cells, strict=False))

    shown = asyncio.run(drive())
    assert {k: shown[k] for k in want} == want

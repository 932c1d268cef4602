"""`sgf build --parallel N --max-cost/--max-tokens`: one budget for the group, summed by sgf
over the loops' run records; real sgf, the fake ralph spending as it goes, real processes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sgf.loop import runs
from sgf.loop.groupbudget import GroupBudget
from sgf.loop.loopstate import Progress

pytestmark = pytest.mark.timeout(180)


def spent(project: Path, loop_ids: list[str]) -> tuple[float, int]:
    progress = [Progress.from_events(runs.read_record(project, i)) for i in loop_ids]
    return sum(p.cost for p in progress), sum(p.tokens for p in progress)


def launched(stderr: str) -> list[str]:
    return re.findall(r"sgf: \[\d\] (build-\d{8}T\d{6}) \(log", stderr)


def told(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.process
@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        (
            ["--max-cost", "1.5"],
            r"budget reached: group budget \$1\.5000 for 3 loops, \$(\d+\.\d{4}) spent",
        ),
        (
            ["--max-tokens", "6000"],
            r"budget reached: group budget 6000 tokens for 3 loops, (\d+) spent",
        ),
    ],
)
def test_the_groups_total_stops_every_loop_after_its_running_iteration(
    project: Path,
    sgf: Any,
    fake_ralph: Any,
    wait_for: Any,
    tmp_path: Path,
    budget: list[str],
    reason: str,
) -> None:
    """Each fake loop runs two iterations ($0.25 and 1000 tokens each) that end by themselves,
    then one that runs on until sgf asks the group to stop: the budget is met only once
    every loop has run its two, and no loop can end without being asked. So, whatever the
    machine's speed, each loop finishes the iteration it is in (no signal reaches it) and
    stops with exit 2, the group having spent its budget and at most one iteration per loop
    more."""
    events = tmp_path / "events.jsonl"
    env = fake_ralph.env(FAKE_RALPH_SPEND="0.25", FAKE_RALPH_ITERATIONS="2")
    done = sgf(
        project, "build", "-a", "--no-push", "--parallel", "3", *budget,
        "--notify", f"cat >> {events}", "50", env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr  # as ralph's own budgets: exhausted
    loop_ids = launched(done.stderr)
    assert len(loop_ids) == 3
    for loop_id in loop_ids:  # each loop says why it stopped: the group's budget, not its own
        found = re.search(f"{loop_id}: ({reason}); work may remain", done.stderr)
        assert found, done.stderr
        ends = [e for e in runs.read_record(project, loop_id) if e.get("event") == "end"]
        assert [e["stop_reason"] for e in ends] == [found.group(1)]  # ralph's own words
    assert "--max-cost" not in fake_ralph.calls()["argv"]  # the group's, never one loop's
    assert "--max-tokens" not in fake_ralph.calls()["argv"]
    cost, tokens = spent(project, loop_ids)
    assert 1.5 <= cost <= 1.5 + 3 * 0.25, cost
    assert 6000 <= tokens <= 6000 + 3 * 1000, tokens
    outcomes = {o.loop_id: o.outcome for o in runs.history(project)}
    assert [outcomes[i] for i in loop_ids] == ["exhausted"] * 3
    for loop_id in loop_ids:  # each loop's own budget stays its own: kept for `r`
        kept = json.loads((project / runs.RECORDS / f"{loop_id}.launch.json").read_text())
        assert kept["isolation"] == "worktree"
        assert not runs.stop_path(project, loop_id).exists()  # asked once, then gone
    wait_for(lambda: len(told(events)) == 6, what="a budget and an end event per loop")
    budgets = [e["loop_id"] for e in told(events) if e["event"] == "budget"]
    assert sorted(budgets) == sorted(loop_ids)


@pytest.mark.process
def test_the_configs_budget_stays_per_loop(project: Path, sgf: Any, fake_ralph: Any) -> None:
    config = project / ".sgf" / "config.toml"
    config.write_text(config.read_text() + "max_cost = 3.5\n")
    env = fake_ralph.env()
    done = sgf(project, "build", "-a", "--no-push", "--parallel", "2", "--max-cost", "9", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    argv = fake_ralph.calls()["argv"]
    assert argv[argv.index("--max-cost") + 1] == "3.5"


def test_a_group_budget_sums_every_loops_record(tmp_path: Path) -> None:
    for loop_id, costs in (
        ("build-20260301T120000", [0.5, 0.25]),
        ("build-20260301T120001", [0.2]),
    ):
        record = runs.record_path(tmp_path, loop_id)
        record.parent.mkdir(parents=True, exist_ok=True)
        lines = [{"event": "iteration", "cost": c, "tokens": 10} for c in costs]
        record.write_text("".join(json.dumps(line) + "\n" for line in lines) + "garbage\n")
    ids = ["build-20260301T120000", "build-20260301T120001", "build-20260301T120002"]
    assert not GroupBudget(tmp_path, ids, max_cost=1.0).reached()
    assert not GroupBudget(tmp_path, ids).reached()  # no budget: never reached
    reached = GroupBudget(tmp_path, ids, max_cost=0.95)
    assert reached.reached()
    assert reached.reason == "budget reached: group budget $0.9500 for 3 loops, $0.9500 spent"
    tokens = GroupBudget(tmp_path, ids, max_tokens=30)
    assert tokens.reached()
    assert tokens.reason == "budget reached: group budget 30 tokens for 3 loops, 30 spent"

"""`sgf build --parallel N --max-cost/--max-tokens`: one budget for the group, summed by sgf
over the loops' run records; real sgf, the fake ralph spending as it goes, real processes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sgf import runs
from sgf.groupbudget import GroupBudget
from sgf.loopstate import Progress

pytestmark = pytest.mark.timeout(180)


def spent(project: Path, loop_ids: list[str]) -> tuple[float, int]:
    progress = [Progress.from_events(runs.read_record(project, i)) for i in loop_ids]
    return sum(p.cost for p in progress), sum(p.tokens for p in progress)


def launched(stderr: str) -> list[str]:
    return re.findall(r"sgf: \[\d\] (build-\d{8}T\d{6}) \(log", stderr)


@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        (["--max-cost", "1"], r"budget reached: group cost \$(\d+\.\d\d) of \$1\.00 over 3 loops"),
        (["--max-tokens", "6000"], r"budget reached: group tokens (\d+) of 6000 over 3 loops"),
    ],
)
def test_the_groups_total_stops_every_loop_together(
    project: Path, sgf: Any, fake_ralph: Any, budget: list[str], reason: str
) -> None:
    env = fake_ralph.env(FAKE_RALPH_SPEND="0.1", FAKE_RALPH_EVERY="0.2")
    done = sgf(project, "build", "-a", "--no-push", "--parallel", "3", *budget, "50", env=env)
    assert done.returncode == 2, done.stdout + done.stderr  # as ralph's own budgets: exhausted
    loop_ids = launched(done.stderr)
    assert len(loop_ids) == 3
    for loop_id in loop_ids:  # each loop says why it stopped: the group's budget, not its own
        assert re.search(f"{loop_id}: {reason}; work may remain", done.stderr), done.stderr
    assert "--max-cost" not in fake_ralph.calls()["argv"]  # the group's, never one loop's
    assert "--max-tokens" not in fake_ralph.calls()["argv"]
    cost, tokens = spent(project, loop_ids)
    # stopped at the budget: past it by at most what a round of the three loops spends
    # before sgf's next look (every second) and their stop
    if budget[0] == "--max-cost":
        assert 1.0 <= cost <= 1.0 + 3 * 0.1 * 8, cost
    else:
        assert 6000 <= tokens <= 6000 + 3 * 1000 * 8, tokens
    outcomes = {o.loop_id: o.outcome for o in runs.history(project)}
    assert [outcomes[i] for i in loop_ids] == ["exhausted"] * 3
    for loop_id in loop_ids:  # each loop's own budget stays its own: kept for `r`
        kept = json.loads((project / runs.RECORDS / f"{loop_id}.launch.json").read_text())
        assert kept["isolation"] == "worktree"


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
    assert reached.reason == "budget reached: group cost $0.95 of $0.95 over 3 loops"
    tokens = GroupBudget(tmp_path, ids, max_tokens=30)
    assert tokens.reached()
    assert tokens.reason == "budget reached: group tokens 30 of 30 over 3 loops"

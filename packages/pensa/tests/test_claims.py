"""claim-next's stuck tasks and release --held-by, on real SQLite files and real pn."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pensa import claims, stats
from pensa.models import IssueType, Status
from pensa.shared.assignee import HUMAN
from pensa.store import Store
from pensa.tracker import Tracker
from pensa.views import Filters, ready

from .conftest import Clock, Pn

J = Callable[..., Any]
TASK = IssueType.TASK
SPIKE = IssueType.SPIKE


def give_up(tracker: Tracker, store: Store, *, loops: list[str]) -> str | None:
    """Each loop claims the next task (stuck after 3 claims) and releases it; the last id."""
    claimed = None
    for loop in loops:
        issue = claims.claim_next(store, actor=loop, now=tracker.now, stuck_after=3)
        claimed = issue.id if issue else None
        if claimed:
            tracker.release(claimed, actor=loop)
    return claimed


def test_a_task_claimed_three_times_without_a_close_goes_to_a_human(
    tracker: Tracker, store: Store
) -> None:
    stuck = tracker.create("impossible", issue_type=TASK, actor="a").id
    other = tracker.create("doable", issue_type=TASK, actor="a").id
    assert give_up(tracker, store, loops=["build-1", "build-2", "build-1"]) == stuck

    nxt = claims.claim_next(store, actor="build-3", now=tracker.now, stuck_after=3)

    assert nxt is not None
    assert nxt.id == other  # the loop moves on
    issue = tracker.get(stuck)
    assert (issue.status, issue.assignee) == (Status.OPEN, HUMAN)
    [comment] = tracker.comments(stuck)
    assert comment.text.startswith(
        "stuck: claimed 3 times without being closed (by build-1, build-2); taken out of"
    )
    assert f"`pn release {stuck}` hands it back" in comment.text
    assert tracker.history(stuck)[0].event_type == "stuck"


def test_a_stuck_task_is_not_ready_except_for_its_human(tracker: Tracker, store: Store) -> None:
    stuck = tracker.create("impossible", issue_type=TASK, actor="a").id
    give_up(tracker, store, loops=["l1", "l2", "l3"])
    assert claims.claim_next(store, actor="l4", now=tracker.now, stuck_after=3) is None

    assert ready(store, Filters()) == []
    assert [i.id for i in ready(store, Filters(assignee=HUMAN))] == [stuck]
    report = stats.status(store)
    assert (report.ready, report.needs_human) == (0, 1)
    assert report.to_json()["needs_human"] == 1


def test_one_release_hands_it_back_with_a_fresh_count(tracker: Tracker, store: Store) -> None:
    stuck = tracker.create("impossible", issue_type=TASK, actor="a").id
    give_up(tracker, store, loops=["l1", "l2", "l3", "l4"])

    back = tracker.release(stuck, actor="alice")

    assert (back.status, back.assignee) == (Status.OPEN, None)
    assert tracker.history(stuck)[0].event_type == "returned"
    assert [i.id for i in ready(store, Filters())] == [stuck]
    assert give_up(tracker, store, loops=["l5", "l6"]) == stuck  # two claims: not stuck yet
    assert tracker.get(stuck).assignee is None


def test_without_a_threshold_claim_next_never_marks_anything(
    tracker: Tracker, store: Store
) -> None:
    task = tracker.create("t", issue_type=TASK, actor="a").id
    for loop in ("l1", "l2", "l3", "l4"):
        claimed = claims.claim_next(store, actor=loop, now=tracker.now)
        assert claimed is not None
        assert claimed.id == task
        tracker.release(task, actor=loop)


def test_release_held_gives_back_only_what_the_holder_has_in_progress(
    tracker: Tracker,
) -> None:
    # one task and one spike: all one agent may hold at once
    mine = [
        tracker.create(f"m{n}", issue_type=t, actor="a").id for n, t in enumerate((TASK, SPIKE))
    ]
    done = tracker.create("done", issue_type=TASK, actor="a").id
    theirs = tracker.create("theirs", issue_type=TASK, actor="a").id
    tracker.claim(done, actor="build-x")
    tracker.close(done, actor="build-x")
    for issue in mine:
        tracker.claim(issue, actor="build-x")
    tracker.claim(theirs, actor="build-y")

    released = tracker.release_held("build-x", actor="build-x", reason="loop ended: interrupted")

    assert [i.id for i in released] == mine
    assert all((i.status, i.assignee) == (Status.OPEN, None) for i in released)
    assert tracker.get(theirs).assignee == "build-y"
    assert tracker.get(done).status is Status.CLOSED
    detail = tracker.history(mine[0])[0].detail
    assert detail == "assignee: build-x -> none; loop ended: interrupted"
    assert tracker.release_held("build-x", actor="build-x") == []


@pytest.mark.process
def test_a_stuck_task_survives_export_and_import_into_a_fresh_clone(
    repo: Path, pn: Pn, pnj: J, tmp_path: Path
) -> None:
    """The mark lives in fields JSONL carries (assignee, a comment), so another clone sees it."""
    stuck = pnj("create", "impossible", "-t", "task")["id"]
    other = pnj("create", "doable", "-t", "task")["id"]
    for loop in ("l1", "l2", "l3"):
        assert pnj("claim-next", "--stuck-after", "3", env={"PN_ACTOR": loop})["id"] == stuck
        pnj("release", stuck, env={"PN_ACTOR": loop})
    assert pnj("claim-next", "--stuck-after", "3", env={"PN_ACTOR": "l4"})["id"] == other
    pnj("release", other, env={"PN_ACTOR": "l4"})
    assert pn("export").code == 0
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    shutil.rmtree(clone / ".pensa")
    (clone / ".pensa").mkdir()
    for path in (repo / ".pensa").glob("*.jsonl"):
        shutil.copy2(path, clone / ".pensa" / path.name)

    assert pn("import", cwd=clone).code == 0

    assert [i["id"] for i in pnj("ready", cwd=clone)] == [other]
    assert [i["id"] for i in pnj("list", "-a", "human", cwd=clone)] == [stuck]
    assert pnj("status", cwd=clone)["needs_human"] == 1
    shown = pnj("show", stuck, cwd=clone)
    assert [c["text"][:6] for c in shown["comments"]] == ["stuck:"]
    claimed = pnj("claim-next", "--stuck-after", "3", cwd=clone, env={"PN_ACTOR": "l5"})
    assert claimed["id"] == other
    assert pnj("release", stuck, cwd=clone)["assignee"] is None
    assert pnj("status", cwd=clone)["needs_human"] == 0


def test_claims_cut_short_by_a_stop_do_not_count_towards_stuck(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    task = tracker.create("long", issue_type=TASK, actor="a").id
    for loop in ("build-1", "build-2", "build-3", "build-4"):
        attempt_began = clock.now
        assert claims.claim_next(store, actor=loop, now=tracker.now, stuck_after=2) is not None
        [back] = tracker.release_held(
            loop, actor=loop, reason="loop ended: interrupted", cut_short_since=attempt_began
        )
        assert back.id == task
        assert tracker.history(task)[0].event_type == "interrupted"

    issue = claims.claim_next(store, actor="build-5", now=tracker.now, stuck_after=2)
    assert issue is not None
    assert issue.id == task  # four stopped loops, no attempt given up: still the agents'


def test_a_claim_from_an_attempt_that_ended_still_counts_after_a_stop(
    tracker: Tracker, store: Store, clock: Clock
) -> None:
    """The loop stopped in a later attempt: the claim its earlier, finished attempt left
    is a real one."""
    task = tracker.create("hard", issue_type=TASK, actor="a").id
    for loop in ("build-1", "build-2"):
        assert claims.claim_next(store, actor=loop, now=tracker.now, stuck_after=2) is not None
        clock.advance(seconds=60)  # the attempt ends without a close; the next one begins
        [back] = tracker.release_held(loop, actor=loop, cut_short_since=clock.now)
        assert tracker.history(back.id)[0].event_type == "released"

    assert claims.claim_next(store, actor="build-3", now=tracker.now, stuck_after=2) is None
    assert tracker.get(task).assignee == HUMAN


@pytest.mark.process
def test_release_interrupted_since_through_pn(pnj: J, pn: Pn) -> None:
    task = pnj("create", "t", "-t", "task")["id"]
    for loop in ("l1", "l2", "l3"):
        assert pnj("claim-next", "--stuck-after", "2", env={"PN_ACTOR": loop})["id"] == task
        released = pnj("release", "--held-by", loop, "--interrupted-since", "2000-01-01T00:00:00Z")
        assert [i["id"] for i in released] == [task]
    assert pnj("history", task)[0]["event_type"] == "interrupted"

    bad = pn("release", "--held-by", "l1", "--interrupted-since", "yesterday", "--json")
    assert bad.code == 1
    assert json.loads(bad.err)["code"] == "invalid_argument"
    alone = pn("release", task, "--interrupted-since", "2000-01-01T00:00:00Z")
    assert alone.code == 1
    assert "goes with --held-by" in alone.err

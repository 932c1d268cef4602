"""claim-next under real contention: many `pn` processes against one database file."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from pathlib import Path

import pytest

from pensa.models import IssueType
from pensa.store import Store
from pensa.tracker import Tracker

from .conftest import Pn

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

WORKERS = 8
TASKS = 200


def test_eight_processes_claim_two_hundred_tasks_each_exactly_once(repo: Path, pn: Pn) -> None:
    (repo / ".pensa").mkdir()
    with Store.open(repo / ".pensa" / "db.sqlite") as store:
        tracker = Tracker(store)
        created = [
            tracker.create(f"task {n}", issue_type=IssueType.TASK, actor="setup").id
            for n in range(TASKS)
        ]
    claims: list[tuple[str, str]] = []
    failures: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for k in itertools.count():
            actor = f"loop-{n}-{k}"  # a new agent for each task: one claim per agent
            result = pn("claim-next", "--json", env={"PN_ACTOR": actor})
            if result.code != 0 or result.err:
                with lock:
                    failures.append(result.err)
                return
            claimed = result.json()
            if claimed is None:
                return
            assert claimed["assignee"] == actor
            with lock:
                claims.append((claimed["id"], actor))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    counts = Counter(issue_id for issue_id, _ in claims)
    assert sorted(counts) == sorted(created)
    assert set(counts.values()) == {1}
    assert len({actor.rsplit("-", 1)[0] for _, actor in claims}) > 1  # they really competed

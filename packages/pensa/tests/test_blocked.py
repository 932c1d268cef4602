"""`issues.blocked`: the flag the triggers keep agrees with the dependencies after every
kind of write, an import sets it, an old database gains it, and `pn doctor` repairs it."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pensa import doctor
from pensa.blocked import BLOCKED_IDS, STALE, waits_on_open
from pensa.committed.jsonl import export
from pensa.committed.rebuild import rebuild
from pensa.errors import PensaError
from pensa.graph import Graph
from pensa.models import IssueType, Status
from pensa.project import at
from pensa.store import Store
from pensa.tracker import Tracker
from pensa.views import Filters, ready

from .conftest import Clock, database_at_version


def flags(store: Store) -> dict[str, bool]:
    return {str(i): bool(b) for i, b in store.rows("SELECT id, blocked FROM issues")}


def by_the_rule(store: Store) -> dict[str, bool]:
    """What the flags must be, from the dependencies and statuses alone, in Python."""
    status = {str(i): str(s) for i, s in store.rows("SELECT id, status FROM issues")}
    waits: dict[str, bool] = dict.fromkeys(status, False)
    for child, parent in store.rows("SELECT issue_id, depends_on_id FROM deps"):
        if status.get(str(parent), "closed") != "closed":
            waits[str(child)] = True
    return waits


def test_the_rule_compares_statuses_the_way_the_index_needs() -> None:
    """The rule says `status > 'closed'` for "not closed": true only while every other
    status sorts after 'closed' (a new status must keep that or change issues_unclosed)."""
    assert sorted(s.value for s in Status)[0] == Status.CLOSED.value
    assert "status > 'closed'" in waits_on_open("issues.id")
    assert "status > 'closed'" in BLOCKED_IDS


OPS = st.lists(
    st.tuples(
        st.sampled_from(["dep", "undep", "close", "reopen", "claim", "delete", "create"]),
        st.integers(0, 9),
        st.integers(0, 9),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_every_write_keeps_the_flags_as_the_dependencies_say(
    ops: list[tuple[str, int, int]],
) -> None:
    with Store.open(None) as store:
        clock = Clock()
        tracker, graph = Tracker(store, now=clock), Graph(store, now=clock)

        def make(title: str) -> str:
            return tracker.create(title, issue_type=IssueType.TASK, actor="a").id

        ids = [make(f"issue {n}") for n in range(4)]
        for kind, a, b in ops:
            first, second = ids[a % len(ids)], ids[b % len(ids)]
            with contextlib.suppress(PensaError):  # a refused write changes nothing
                if kind == "dep":
                    graph.add(first, second, actor="a")
                elif kind == "undep":
                    graph.remove(first, second, actor="a")
                elif kind == "close":
                    tracker.close(first, actor="a", reason="r", force=True)
                elif kind == "reopen":
                    tracker.reopen(first, actor="a")
                elif kind == "claim":
                    tracker.claim(first, actor=f"agent-{a}")
                elif kind == "delete":
                    tracker.delete(first, actor="a", force=True)
                    ids.remove(first)
                    if not ids:
                        ids.append(make("again"))
                else:
                    ids.append(make(f"issue {len(ids)}"))
            assert flags(store) == by_the_rule(store), (kind, first, second)
        assert store.rows(STALE)[0][0] == 0


def test_a_dependency_that_arrives_before_its_issue_blocks_once_the_issue_does() -> None:
    """A sync adds records with foreign keys deferred: a dependency may name an issue that
    is inserted after it, in the same transaction."""
    with Store.open(None) as store, store.write() as conn:
        columns = "(id, title, issue_type, status, created_at, updated_at)"
        conn.execute("PRAGMA defer_foreign_keys = ON")
        conn.execute(f"INSERT INTO issues {columns} VALUES ('pn-a', 'a', 'task', 'open', 't', 't')")
        conn.execute("INSERT INTO deps (issue_id, depends_on_id) VALUES ('pn-a', 'pn-b')")
        assert flags(store) == {"pn-a": False}
        conn.execute(f"INSERT INTO issues {columns} VALUES ('pn-b', 'b', 'task', 'open', 't', 't')")
        assert flags(store) == {"pn-a": True, "pn-b": False}
        conn.execute("INSERT INTO deps (issue_id, depends_on_id) VALUES ('pn-c', 'pn-b')")
        conn.execute(f"INSERT INTO issues {columns} VALUES ('pn-c', 'c', 'task', 'open', 't', 't')")
        assert flags(store)["pn-c"] is True


def test_an_import_sets_every_flag(tmp_path: Path) -> None:
    (tmp_path / ".pensa").mkdir()
    project = at(str(tmp_path / ".pensa"))
    with Store.open(project.db) as store:
        tracker, graph = Tracker(store, now=Clock()), Graph(store, now=Clock())
        parent, child, free = (
            tracker.create(t, issue_type=IssueType.TASK, actor="a").id for t in ("p", "c", "f")
        )
        graph.add(child, parent, actor="a")
        export(store, project)
    rebuild(project, discard_local=True)
    with Store.open(project.db) as store:
        assert flags(store) == {parent: False, child: True, free: False}
        assert [i.id for i in ready(store, Filters())] == [parent, free]


def test_a_version_9_database_gains_the_flags(tmp_path: Path) -> None:
    columns = "(id, title, issue_type, status, created_at, updated_at)"
    path = database_at_version(
        tmp_path / "db.sqlite",
        9,
        f"INSERT INTO issues {columns} VALUES (?, ?, 'task', ?, 't', 't')",
        [("pn-a", "a", "open"), ("pn-b", "b", "open"), ("pn-c", "c", "closed")],
    )
    conn = sqlite3.connect(path)
    conn.executemany(
        "INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)",
        [("pn-a", "pn-b"), ("pn-b", "pn-c")],
    )
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert flags(store) == {"pn-a": True, "pn-b": False, "pn-c": False}
        assert [i.id for i in ready(store, Filters())] == ["pn-b"]


def test_doctor_finds_a_flag_set_by_hand_and_fix_sets_it_again(tmp_path: Path) -> None:
    """The database is data an agent can write: a flag it clears would hand out a blocked
    task as ready. The doctor compares the flags with the dependencies."""
    with Store.open(tmp_path / "db.sqlite") as store:
        tracker, graph = Tracker(store, now=Clock()), Graph(store, now=Clock())
        parent, child = (tracker.create(t, actor="a", issue_type=IssueType.TASK).id for t in "pc")
        graph.add(child, parent, actor="a")
        store.conn.execute("UPDATE issues SET blocked = 0")
        assert [i.id for i in ready(store, Filters())] == [parent, child]
        now = Clock()()
        found = doctor.run(store, None, now=now, fix=False, actor="a")
        assert [f.check for f in found.findings if f.check == "blocked_flag"] == ["blocked_flag"]
        fixed = doctor.run(store, None, now=now, fix=True, actor="a")
        assert [f.message for f in fixed.fixes] == ["set 1 blocked flags again"]
        assert [i.id for i in ready(store, Filters())] == [parent]

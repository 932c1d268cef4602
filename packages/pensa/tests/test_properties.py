"""Invariants under random operation sequences (hypothesis)."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pensa.committed import jsonl
from pensa.committed.disk import jsonl_files
from pensa.cycles import find_cycles
from pensa.errors import CycleDetected, InvalidArgument
from pensa.graph import Graph
from pensa.models import IssueType, Priority, Status
from pensa.project import at
from pensa.store import Store
from pensa.tracker import Tracker
from pensa.views import Filters, list_issues, list_query, ready, ready_query

from .conftest import Clock

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Op = tuple[str, int, int]
types = st.sampled_from(list(IssueType))
priorities = st.sampled_from(list(Priority))
operations = st.lists(
    st.tuples(st.sampled_from(["dep", "close", "claim"]), st.integers(0, 11), st.integers(0, 11)),
    max_size=40,
)
text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20)


def apply(store: Store, ids: list[str], ops: list[Op], clock: Clock) -> None:
    """Add deps, close and claim issues at random; refused dependency edges are skipped."""
    tracker, graph = Tracker(store, now=clock), Graph(store, now=clock)
    for kind, a, b in ops:
        first = ids[a % len(ids)]
        if kind == "dep":
            with contextlib.suppress(CycleDetected, InvalidArgument):
                graph.add(first, ids[b % len(ids)], actor="a")
        elif kind == "close":
            tracker.close(first, actor="a", reason="r", force=True)
        elif tracker.get(first).status is Status.OPEN:
            tracker.claim(first, actor=f"agent-{a % len(ids)}")  # one claim per agent


def edges(store: Store) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for child, parent in store.rows("SELECT issue_id, depends_on_id FROM deps"):
        out.setdefault(child, []).append(parent)
    return out


@SETTINGS
@given(st.lists(st.tuples(types, priorities), min_size=1, max_size=12), operations)
def test_ready_is_exactly_the_unblocked_open_non_bugs(
    kinds: list[tuple[IssueType, Priority]], ops: list[Op]
) -> None:
    with Store.open(None) as store:
        clock = Clock()
        tracker = Tracker(store, now=clock)
        ids = [
            tracker.create(f"issue {n}", issue_type=t, priority=p, actor="a").id
            for n, (t, p) in enumerate(kinds)
        ]
        apply(store, ids, ops, clock)
        issues = {i.id: i for i in list_issues(store, Filters())}
        deps = edges(store)
        got = ready(store, Filters())
        expected = {
            i.id
            for i in issues.values()
            if i.status is Status.OPEN
            and i.issue_type is not IssueType.BUG
            and all(issues[d].status is Status.CLOSED for d in deps.get(i.id, ()))
        }
        assert {i.id for i in got} == expected
        assert all(i.issue_type is not IssueType.BUG for i in got)
        order = [(i.priority.value, ids.index(i.id)) for i in got]
        assert order == sorted(order)
        assert json.loads(b"".join(ready_query(Filters()).json_utf8(store))) == [
            i.to_json() for i in got
        ]


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=40))
def test_the_dependency_graph_never_admits_a_cycle(pairs: list[tuple[int, int]]) -> None:
    with Store.open(None) as store:
        tracker, graph = Tracker(store), Graph(store)
        ids = [tracker.create(f"n{n}", issue_type=IssueType.TASK, actor="a").id for n in range(10)]
        kept: set[tuple[int, int]] = set()  # the oracle: edges a -> b (a depends on b)

        def reaches(start: int, goal: int) -> bool:
            seen, todo = {start}, [start]
            while todo:
                node = todo.pop()
                for x, y in kept:
                    if x == node and y not in seen:
                        seen.add(y)
                        todo.append(y)
            return goal in seen

        for a, b in pairs:
            would_cycle = a == b or reaches(b, a)
            try:
                graph.add(ids[a], ids[b], actor="a")
                refused = False
            except (CycleDetected, InvalidArgument):
                refused = True
            assert refused == would_cycle
            if not refused:
                kept.add((a, b))
            assert find_cycles(edges(store)) == []


@SETTINGS
@given(
    st.lists(
        st.tuples(
            types,
            priorities,
            text,
            st.none() | text,
            st.lists(st.sampled_from(["b", "a", "ü", "two words", '"q"']), max_size=3),
        ),
        max_size=8,
    ),
    operations,
    st.lists(st.tuples(st.integers(0, 7), text), max_size=5),
)
def test_export_import_export_is_byte_identical(
    kinds: list[tuple[IssueType, Priority, str, str | None, list[str]]],
    ops: list[Op],
    comments: list[tuple[int, str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = at(Path(tmp) / ".pensa")
        project.ensure()
        with Store.open(project.db) as store:
            clock = Clock()
            tracker = Tracker(store, now=clock)
            ids = [
                tracker.create(
                    title if title.strip() else "t",
                    issue_type=t,
                    priority=p,
                    description=d,
                    labels=labels,
                    actor="a",
                ).id
                for t, p, title, d, labels in kinds
            ]
            if ids:
                apply(store, ids, ops, clock)
                for n, body in comments:
                    if body.strip():
                        tracker.add_comment(ids[n % len(ids)], body, actor="a")
            jsonl.export(store, project)
            # The JSON that SQLite builds for `pn list --json` matches the records exactly.
            everything = list_query(Filters())
            records = everything.issues(store)
            assert json.loads(b"".join(everything.json_utf8(store))) == [
                i.to_json() for i in records
            ]
            # SQLite writes each JSONL line exactly as json.dumps would.
            by_id = {i.id: i.to_json() for i in records}
            text = Path(project.issues_jsonl).read_text(encoding="utf-8")
            for line in text.split("\n")[:-1]:  # not splitlines(): U+0085 is not a break
                fields = by_id[json.loads(line)["id"]]
                kept = {k: v for k, v in fields.items() if v not in (None, [])}
                assert line == json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
        first = [Path(p).read_bytes() for p in jsonl_files(project)]
        jsonl.import_(project)
        with Store.open(project.db) as store:
            jsonl.export(store, project)
        assert [Path(p).read_bytes() for p in jsonl_files(project)] == first


ISSUE_ROW = st.tuples(
    st.sampled_from(["bug", "task", "test", "chore"]),
    st.sampled_from(["open", "in_progress", "closed"]),
    st.sampled_from([None, "human", "loop-1"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(ISSUE_ROW, min_size=1, max_size=25),
    links=st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), max_size=40),
)
def test_status_counts_agree_with_a_plain_python_oracle(
    rows: list[tuple[str, str, str | None]], links: list[tuple[int, int]]
) -> None:
    """`pn status` is two grouped counts; an oracle that walks every issue
    and its deps says what ready, blocked, needing a human and the bars must be."""
    from pensa.stats import status

    ids = [f"pn-{n:08x}" for n in range(len(rows))]
    deps = {(ids[a], ids[b]) for a, b in links if a < len(rows) and b < len(rows) and a != b}
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "db.sqlite") as store:
        with store.write() as conn:
            conn.executemany(
                "INSERT INTO issues (id, title, issue_type, status, assignee, created_at, "
                "updated_at) VALUES (?, 't', ?, ?, ?, 'c', 'u')",
                [(i, kind, state, who) for i, (kind, state, who) in zip(ids, rows, strict=True)],
            )
            conn.executemany("INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)", deps)
        report = status(store)
    state = dict(zip(ids, rows, strict=True))

    def blocked(i: str) -> bool:
        return state[i][1] != "closed" and any(
            child == i and state[parent][1] != "closed" for child, parent in deps
        )

    assert report.blocked == sum(blocked(i) for i in ids)
    # ready is what claim-next can take: open, unassigned, nothing open before it
    assert report.ready == sum(
        s == "open" and k != "bug" and who is None and not blocked(i)
        for i, (k, s, who) in state.items()
    )
    assert report.needs_human == sum(s == "open" and who == "human" for k, s, who in rows)
    for kind in ("bug", "task", "test", "chore"):
        mine = [i for i in ids if state[i][0] == kind]
        assert report.bars[kind] == {
            "open": sum(state[i][1] == "open" and not blocked(i) for i in mine),
            "in_progress": sum(state[i][1] == "in_progress" and not blocked(i) for i in mine),
            "blocked": sum(blocked(i) for i in mine),
            "closed": sum(state[i][1] == "closed" for i in mine),
        }
        assert report.by_type[kind] == {
            s: sum(state[i][1] == s for i in mine) for s in ("open", "in_progress", "closed")
        }

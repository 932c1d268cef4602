"""The three-way merge rules (pensa.committed.merge), on plain records: one test per rule."""

from __future__ import annotations

from typing import Any

import pytest

from pensa.committed.merge import merge, merge_file, merge_issue
from pensa.committed.snapshot import Snapshot, parse

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"


def issue(issue_id: str = "pn-1", **fields: Any) -> dict[str, Any]:
    record = {
        "id": issue_id,
        "title": "t",
        "issue_type": "task",
        "status": "open",
        "priority": "p2",
        "created_at": T0,
        "updated_at": T0,
    }
    record.update(fields)
    return record


def snap(*issues: dict[str, Any], **parts: Any) -> Snapshot:
    return Snapshot(
        {i["id"]: i for i in issues},
        parts.get("deps", {}),
        parts.get("comments", {}),
        parts.get("deleted", {}),
    )


def test_a_change_on_one_side_wins() -> None:
    base = issue()
    assert merge_issue(base, issue(title="ours", updated_at=T1), base)["title"] == "ours"
    assert merge_issue(base, base, issue(title="theirs", updated_at=T1))["title"] == "theirs"


def test_different_fields_changed_on_each_side_both_survive() -> None:
    merged = merge_issue(
        issue(), issue(title="new", updated_at=T1), issue(priority="p0", updated_at=T2)
    )
    assert (merged["title"], merged["priority"], merged["updated_at"]) == ("new", "p0", T2)


def test_the_same_field_changed_on_both_sides_takes_the_later_update() -> None:
    ours, theirs = issue(title="early", updated_at=T1), issue(title="late", updated_at=T2)
    assert merge_issue(issue(), ours, theirs)["title"] == "late"
    assert merge_issue(issue(), theirs, ours)["title"] == "late"  # symmetric


def test_a_close_beats_a_later_claim_made_from_a_stale_copy() -> None:
    closed = issue(status="closed", closed_at=T1, close_reason="done", updated_at=T1)
    claimed = issue(status="in_progress", assignee="loop-2", updated_at=T2)
    for ours, theirs in ((closed, claimed), (claimed, closed)):
        merged = merge_issue(issue(), ours, theirs)
        assert merged["status"] == "closed"
        assert (merged["closed_at"], merged["close_reason"]) == (T1, "done")


def test_a_reopen_on_one_side_is_kept() -> None:
    closed = issue(status="closed", closed_at=T0, close_reason="x")
    reopened = issue(status="open", updated_at=T1)
    assert merge_issue(closed, reopened, closed)["status"] == "open"


def test_a_close_made_after_a_reopen_elsewhere_wins_and_a_reopen_after_a_close_does() -> None:
    """The issue was closed; one side reopened it, the other closed it again (as `pn close
    --force` on a closed issue does): the later of the two stands, whichever side is ours."""
    base = issue(status="closed", closed_at=T0, close_reason="first", updated_at=T0)
    reopened = issue(status="open", updated_at=T1)
    closed_again = issue(status="closed", closed_at=T2, close_reason="again", updated_at=T2)
    for ours, theirs in ((reopened, closed_again), (closed_again, reopened)):
        merged = merge_issue(base, ours, theirs)
        assert (merged["status"], merged["closed_at"], merged["close_reason"]) == (
            "closed",
            T2,
            "again",
        )
    early_close = issue(status="closed", closed_at=T1, close_reason="again", updated_at=T1)
    late_reopen = issue(status="open", updated_at=T2)
    for ours, theirs in ((late_reopen, early_close), (early_close, late_reopen)):
        merged = merge_issue(base, ours, theirs)
        assert merged["status"] == "open"
        assert not {"closed_at", "close_reason"} & set(merged)


def test_an_issue_only_one_side_has_is_kept_when_new_or_changed_and_dropped_when_not() -> None:
    synced, edited = issue("pn-1"), issue("pn-1", title="edited", updated_at=T1)
    new = issue("pn-2")
    assert set(merge(snap(synced), snap(synced, new), snap()).issues) == {"pn-2"}
    assert set(merge(snap(synced), snap(edited), snap()).issues) == {"pn-1"}
    assert set(merge(snap(synced), snap(), snap(edited)).issues) == {"pn-1"}


def test_an_issue_leaving_with_a_branch_stays_when_a_side_commented_on_it_or_linked_it() -> None:
    """A comment or an edge the base lacks is uncommitted work on its issue, like an edit."""
    synced, other = issue("pn-1"), issue("pn-2")
    said = {"c1": {"id": "c1", "issue_id": "pn-1", "actor": "a", "text": "t", "created_at": T0}}
    edge = {("pn-2", "pn-1"): {"issue_id": "pn-2", "depends_on_id": "pn-1"}}
    commented = merge(snap(synced), snap(synced, comments=said), snap())
    assert set(commented.issues) == {"pn-1"}
    assert set(commented.comments) == {"c1"}
    linked = merge(snap(synced, other), snap(synced, other, deps=edge), snap(other))
    assert set(linked.issues) == {"pn-1", "pn-2"}
    assert set(linked.deps) == set(edge)
    # already committed with it: the comment leaves with its issue
    assert merge(snap(synced, comments=said), snap(synced, comments=said), snap()).issues == {}


def test_a_tombstone_on_any_side_removes_the_issue_with_its_edges_and_comments() -> None:
    a, b = issue("pn-a"), issue("pn-b", updated_at=T1, title="claimed later")
    dep = {("pn-a", "pn-b"): {"issue_id": "pn-a", "depends_on_id": "pn-b"}}
    comment = {"c1": {"id": "c1", "issue_id": "pn-b", "actor": "x", "text": "t", "created_at": T0}}
    tomb = {"pn-b": {"id": "pn-b", "deleted_at": T1}}
    merged = merge(snap(a, b), snap(a, b, deps=dep, comments=comment), snap(a, deleted=tomb))
    assert set(merged.issues) == {"pn-a"}
    assert merged.deps == {}
    assert merged.comments == {}
    assert set(merged.deleted) == {"pn-b"}


def test_comments_are_a_union_by_id() -> None:
    def comment(cid: str) -> dict[str, Any]:
        return {"id": cid, "issue_id": "pn-1", "actor": "a", "text": cid, "created_at": T0}

    merged = merge(
        snap(issue()),
        snap(issue(), comments={"c1": comment("c1")}),
        snap(issue(), comments={"c2": comment("c2")}),
    )
    assert set(merged.comments) == {"c1", "c2"}


def test_deps_merge_as_a_set_and_a_removal_on_one_side_stays_removed() -> None:
    ids = [issue(f"pn-{n}") for n in "abcd"]

    def edges(*pairs: str) -> dict[tuple[str, str], dict[str, str]]:
        return {
            (f"pn-{p[0]}", f"pn-{p[1]}"): {"issue_id": f"pn-{p[0]}", "depends_on_id": f"pn-{p[1]}"}
            for p in pairs
        }

    merged = merge(
        snap(*ids, deps=edges("ab", "cd")),
        snap(*ids, deps=edges("ab", "cd", "ac")),  # ours adds a->c
        snap(*ids, deps=edges("cd")),  # theirs removes a->b
    )
    assert set(merged.deps) == {("pn-c", "pn-d"), ("pn-a", "pn-c")}


def test_edges_added_on_both_sides_that_close_a_cycle_lose_one_edge() -> None:
    ids = [issue("pn-a"), issue("pn-b")]
    ab = {("pn-a", "pn-b"): {"issue_id": "pn-a", "depends_on_id": "pn-b"}}
    ba = {("pn-b", "pn-a"): {"issue_id": "pn-b", "depends_on_id": "pn-a"}}
    merged = merge(snap(*ids), snap(*ids, deps=ab), snap(*ids, deps=ba))
    assert len(merged.deps) == 1


def test_unknown_fields_survive_a_merge_and_the_canonical_text() -> None:
    base = issue(x_future={"nested": [1, None, {"a": None}]})
    ours = {**base, "title": "mine", "updated_at": T1}
    theirs = {**base, "zz_other": 7}
    merged = merge(snap(base), snap(ours), snap(theirs))
    assert merged.issues["pn-1"]["x_future"] == {"nested": [1, None, {"a": None}]}
    assert merged.issues["pn-1"]["zz_other"] == 7
    text = merged.render()["issues.jsonl"]
    assert text.index('"updated_at"') < text.index('"x_future"') < text.index('"zz_other"')
    assert parse({"issues.jsonl": text.encode()}).issues == merged.issues


@pytest.mark.parametrize("name", ["issues.jsonl", "deps.jsonl", "comments.jsonl", "deleted.jsonl"])
def test_merge_file_of_identical_sides_is_the_canonical_text(name: str) -> None:
    data = {
        "issues.jsonl": snap(issue("pn-2"), issue("pn-1")),
        "deps.jsonl": snap(deps={("a", "b"): {"issue_id": "a", "depends_on_id": "b"}}),
        "comments.jsonl": snap(
            comments={
                "c": {"id": "c", "issue_id": "a", "actor": "x", "text": "y", "created_at": T0}
            }
        ),
        "deleted.jsonl": snap(deleted={"pn-9": {"id": "pn-9", "deleted_at": T0}}),
    }[name]
    assert merge_file(name, Snapshot.empty(), data, data) == data.render()[name]


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"),
    [
        ([], ["a"], ["b"], ["a", "b"]),  # added on both sides: both kept
        (["a", "b"], ["a"], ["a", "b", "c"], ["a", "c"]),  # removal on one side stays removed
        (["a"], [], ["a"], []),
        ([], ["x"], ["x"], ["x"]),
    ],
)
def test_labels_merge_as_a_set_against_the_base(
    base: list[str], ours: list[str], theirs: list[str], merged: list[str]
) -> None:
    def with_labels(labels: list[str], updated: str) -> dict[str, Any]:
        return issue(labels=labels, updated_at=updated) if labels else issue(updated_at=updated)

    # both sides changed something else too, so the field-by-field path runs
    result = merge_issue(
        with_labels(base, T0),
        {**with_labels(ours, T1), "title": "ours"},
        {**with_labels(theirs, T2), "priority": "p1"},
    )
    assert result.get("labels", []) == merged
    assert (result["title"], result["priority"]) == ("ours", "p1")


def test_the_merge_driver_keeps_labels_added_on_both_branches() -> None:
    base = snap(issue())
    ours = snap(issue(labels=["backend"], updated_at=T1))
    theirs = snap(issue(labels=["urgent"], updated_at=T2))
    text = merge_file("issues.jsonl", base, ours, theirs)
    assert '"labels":["backend","urgent"]' in text

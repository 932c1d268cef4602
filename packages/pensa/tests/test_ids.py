"""Ids: `pn-` + the random tail of a UUIDv7 with the same layout as the uuid6 package."""

from __future__ import annotations

import pytest

from pensa import ids
from pensa.errors import InvalidArgument
from pensa.store import Store


def test_uuid7_has_the_rfc_9562_layout_of_the_uuid6_package() -> None:
    import uuid6

    ours, theirs = ids.uuid7(), uuid6.uuid7()
    assert ours.version == theirs.version == 7
    assert ours.variant == theirs.variant
    # Same 48-bit millisecond timestamp field, give or take the calls' distance.
    assert abs((ours.int >> 80) - (theirs.int >> 80)) < 1000


def test_the_short_id_is_the_random_tail() -> None:
    fixed = ids.uuid7(now_ns=1_700_000_000_000_000_000, random=bytes(9) + b"\xab")
    assert ids.short_id(fixed) == "pn-000000ab"
    again = ids.uuid7(now_ns=1_700_000_000_000_000_000, random=b"\xff" * 10)
    assert ids.short_id(again) == "pn-ffffffff"


def test_ids_minted_in_the_same_millisecond_differ() -> None:
    minted = {ids.short_id(ids.uuid7(now_ns=1)) for _ in range(1000)}
    assert len(minted) == 1000
    assert all(ids.looks_like_id(i) for i in minted)


def test_a_collision_is_regenerated_never_reused() -> None:
    seen: list[str] = []

    def taken(candidate: str) -> bool:
        seen.append(candidate)
        return len(seen) < 3

    fresh = ids.new_id(taken)
    assert fresh == seen[-1]
    assert len(seen) == 3


def test_looks_like_id() -> None:
    assert ids.looks_like_id("pn-0123abcd")
    assert not ids.looks_like_id("0123abcd")
    assert not ids.looks_like_id("pn-0123ABCD")
    assert not ids.looks_like_id("pn-0123abc")


def _with_ids(store: Store, *issue_ids: str) -> None:
    with store.write() as conn:
        for issue_id in issue_ids:
            conn.execute(
                "INSERT INTO issues (id, title, issue_type, created_at, updated_at) "
                "VALUES (?, 'x', 'task', 'c', 'u')",
                (issue_id,),
            )


@pytest.mark.parametrize(
    "typed",
    ["pn-1a2b3c4d", "PN-1A2B3C4D", "1a2b3c4d", "1A2B", "pn-1a2b", " 1a2b3 ", "Pn-1a2B3c"],
)
def test_an_id_is_found_by_any_case_with_or_without_pn_and_by_a_unique_prefix(
    store: Store, typed: str
) -> None:
    _with_ids(store, "pn-1a2b3c4d", "pn-ffff0000")
    assert ids.resolve(store.conn, typed) == "pn-1a2b3c4d"


@pytest.mark.parametrize("typed", ["1a2", "pn-1a", "1a2g", "zz-1a2b3c4d", "", "pn-1a2b3c4d0"])
def test_short_or_malformed_prefixes_name_nothing(store: Store, typed: str) -> None:
    _with_ids(store, "pn-1a2b3c4d")
    assert ids.resolve(store.conn, typed) is None


def test_an_ambiguous_prefix_names_the_candidates_in_one_line(store: Store) -> None:
    _with_ids(store, "pn-1a2b0001", "pn-1a2b0002", "pn-1a2c0000")
    with pytest.raises(InvalidArgument) as raised:
        ids.resolve(store.conn, "1a2b")
    message = str(raised.value)
    assert message == "1a2b matches several issues: pn-1a2b0001, pn-1a2b0002; type more digits"
    assert ids.resolve(store.conn, "1a2b0002") == "pn-1a2b0002"
    assert ids.resolve(store.conn, "1a2c") == "pn-1a2c0000"


def test_an_ambiguous_prefix_shows_at_most_five_candidates(store: Store) -> None:
    _with_ids(store, *(f"pn-abcd000{n}" for n in range(8)))
    with pytest.raises(InvalidArgument, match=r"pn-abcd0004, \.\.\.; type more digits"):
        ids.resolve(store.conn, "abcd")


def test_comment_ids_have_their_own_prefix() -> None:
    assert ids.new_id(lambda _: False, prefix=ids.COMMENT_PREFIX).startswith("pc-")


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("pn-00000000", ""),
        ("1a2b", ""),
        ("1a", " (give at least 4 hex digits of the id)"),
        ("login", " (ids look like pn-1a2b3c4d; any unique prefix of 4+ digits works)"),
    ],
)
def test_why_not_found_says_what_would_have_worked(typed: str, hint: str) -> None:
    assert ids.why_not_found(typed) == hint

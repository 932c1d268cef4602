"""Ids: `pn-` + the random tail of a UUIDv7 with the same layout as the uuid6 package."""

from __future__ import annotations

from pensa import ids


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

"""The sync base: written only when the files or their fingerprints differ from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pensa.committed.disk import FILES
from pensa.committed.sync import BLOB_SLICE, record_base
from pensa.store import Store

BIG = bytes(range(256)) * (3 * BLOB_SLICE // 256 + 7)  # several slices, and a short one


def files(**changed: bytes) -> dict[str, bytes]:
    return {
        name: changed.get(name.split(".")[0], BIG if name == "issues.jsonl" else b"x")
        for name in FILES
    }


PRINTS = dict.fromkeys(FILES, "1:2:3")


@pytest.mark.parametrize(
    ("now", "prints", "written"),
    [
        (files(), PRINTS, False),
        (files(issues=BIG[:-1] + b"!"), PRINTS, True),  # the last byte of the last slice
        (files(issues=BIG[:BLOB_SLICE] + b"!" + BIG[BLOB_SLICE + 1 :]), PRINTS, True),
        (files(issues=BIG + b"\n"), PRINTS, True),  # longer
        (files(deleted=b""), PRINTS, True),  # an empty file
        (files(), {**PRINTS, "deps.jsonl": "1:2:4"}, True),  # only touched
    ],
)
def test_the_base_is_written_only_when_something_differs(
    tmp_path: Path, now: dict[str, bytes], prints: dict[str, str], written: bool
) -> None:
    db = tmp_path / "db.sqlite"
    with Store.open(db) as store, store.write() as conn:
        record_base(conn, files(), PRINTS)
    before = db.read_bytes()
    with Store.open(db) as store, store.write() as conn:
        record_base(conn, now, prints)
        stored = dict(conn.execute("SELECT name, content FROM sync_base"))
    assert (db.read_bytes() != before) is written
    assert stored == now


def test_a_missing_row_is_written(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db.sqlite") as store, store.write() as conn:
        record_base(conn, files(), PRINTS)
        conn.execute("DELETE FROM sync_base WHERE name = 'deps.jsonl'")
        record_base(conn, files(), PRINTS)
        assert conn.execute("SELECT count(*) FROM sync_base").fetchone() == (len(FILES),)

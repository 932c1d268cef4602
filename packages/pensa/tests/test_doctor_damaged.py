"""doctor on a database SQLite cannot read: every command says one line that names
`pn doctor --fix`, which rebuilds it from the committed JSONL and keeps the damaged one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pensa import aside
from pensa.project import at

from .conftest import Pn, git

STAMP = "2026-01-02T03:04:05.000000Z"


def committed_tracker(repo: Path, pn: Pn, *, issues: int) -> str:
    """`issues` issues (one closed, with deps and comments) imported from JSONL files that
    are then committed; `pn list --all --json` of it."""
    pensa = repo / ".pensa"
    pensa.mkdir()
    ids = [f"pn-{n:08x}" for n in range(1, issues + 1)]
    records = [
        {
            "id": issue_id,
            "title": f"issue {n} ✓",
            "description": f"{'words ' * 60}{n}",
            "issue_type": "task",
            "status": "closed" if n == 1 else "open",
            "priority": "p1",
            "created_at": STAMP,
            "updated_at": STAMP,
            **({"closed_at": STAMP, "close_reason": "done"} if n == 1 else {}),
        }
        for n, issue_id in enumerate(ids, start=1)
    ]
    deps = [{"issue_id": ids[n], "depends_on_id": ids[n - 1]} for n in range(2, issues, 2)]
    comments = [
        {"id": f"pc-{n:08x}", "issue_id": ids[n], "actor": "a", "text": "b", "created_at": STAMP}
        for n in range(0, issues, 3)
    ]
    for name, rows in (("issues", records), ("deps", deps), ("comments", comments)):
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (pensa / f"{name}.jsonl").write_text(lines, encoding="utf-8")
    assert pn("import").code == 0
    assert pn("export").code == 0  # the files as pensa writes them: what is committed
    git(repo, "add", ".pensa")
    git(repo, "commit", "-q", "-m", "tracker")
    listed = pn("list", "--all", "--json")
    assert listed.code == 0
    assert git(repo, "status", "--porcelain") == ""
    return listed.out


def overwrite_with_garbage(db: Path) -> None:
    db.write_bytes(bytes(range(7, 251)) * 64)


def truncate_to_half(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2)


def replace_with_a_directory(db: Path) -> None:
    db.unlink()
    db.mkdir()
    (db / "inside").write_text("kept\n")


def overwrite_a_page_in_the_middle(db: Path) -> None:
    with db.open("r+b") as f:
        f.seek(db.stat().st_size // 2)
        f.write(bytes(range(256)) * 16)


def remove(db: Path) -> None:
    db.unlink()


Damage = Callable[[Path], None]
UNREADABLE = [overwrite_with_garbage, truncate_to_half, replace_with_a_directory]


def snapshot(path: Path) -> object:
    if path.is_dir():
        return {p.name: p.read_bytes() for p in path.iterdir()}
    return path.read_bytes()


@pytest.mark.process
@pytest.mark.parametrize("damage", UNREADABLE)
def test_every_command_on_a_damaged_database_is_one_line_naming_doctor_fix(
    repo: Path, pn: Pn, damage: Damage
) -> None:
    committed_tracker(repo, pn, issues=5)
    db = repo / ".pensa" / "db.sqlite"
    damage(db)
    before = snapshot(db)
    commands = [
        ("list",),
        ("ready",),
        ("show", "pn-00000002"),
        ("create", "new", "-t", "task"),
        ("claim-next",),
        ("close", "pn-00000002", "--reason", "done"),
    ]
    for command in commands:
        done = pn(*command, "--json")
        assert done.code == 1, command
        error = done.error()
        assert error["code"] == "damaged_database", (command, error)
        assert error["error"].startswith(f"{db} is damaged ("), command
        assert "`pn doctor --fix` rebuilds it" in error["error"]
        assert "`pn doctor` checks" not in error["error"]  # no circle back to doctor alone
        human = pn(*command)
        assert human.err.count("\n") == 1
        assert human.err.startswith("error: ")
    assert snapshot(db) == before  # nothing was changed

    done = pn("doctor", "--json")
    assert done.code == 0  # findings are data
    [finding] = done.json()["findings"]
    assert finding["check"] == "damaged_database"
    assert finding["message"].endswith(
        "`pn doctor --fix` rebuilds it from the committed JSONL and keeps the damaged one beside it"
    )
    assert snapshot(db) == before


@pytest.mark.process
@pytest.mark.parametrize(
    "damage", [*UNREADABLE, overwrite_a_page_in_the_middle, remove], ids=lambda d: d.__name__
)
def test_doctor_fix_rebuilds_from_the_committed_files_and_keeps_the_damaged_one(
    repo: Path, pn: Pn, damage: Damage
) -> None:
    listed = committed_tracker(repo, pn, issues=120)
    db = repo / ".pensa" / "db.sqlite"
    damage(db)
    damaged = snapshot(db) if os.path.lexists(db) else None

    done = pn("doctor", "--fix", "--json")
    assert done.code == 0, done.err
    fixes = done.json()["fixes"]
    if damaged is None:  # a missing database is a fresh clone's first use: imported
        assert fixes == []
    else:
        [fix] = fixes
        assert fix["check"] in ("damaged_database", "integrity")
        assert fix["message"].startswith(
            f"rebuilt {db} from the committed JSONL: 120 issues, 59 deps, 40 comments; "
            "the damaged one is kept as "
        )
        kept = Path(fix["message"].split("kept as ", 1)[1].split(" ", 1)[0])
        assert kept.parent == db.parent
        assert snapshot(kept) == damaged
    # nothing committed is lost, and the copy is never committed by an agent's `git add -A`
    assert pn("list", "--all", "--json").out == listed
    assert pn("export").code == 0
    assert git(repo, "status", "--porcelain") == ""
    findings = pn("doctor", "--json").json()["findings"]
    assert [f["check"] for f in findings] == ["git_setup"]  # (this clone never ran `pn init`)


@pytest.mark.process
@pytest.mark.parametrize("damage", UNREADABLE)
def test_import_rebuilds_a_damaged_database_and_keeps_it_too(
    repo: Path, pn: Pn, damage: Damage
) -> None:
    listed = committed_tracker(repo, pn, issues=5)
    db = repo / ".pensa" / "db.sqlite"
    damage(db)
    damaged = snapshot(db)
    done = pn("import")
    assert done.code == 0, done.err
    said = done.err.strip()
    assert said.startswith(f"pn: the damaged database is kept as {db}.damaged-")
    assert snapshot(Path(said.rsplit(" ", 1)[1])) == damaged
    assert pn("list", "--all", "--json").out == listed


def test_a_second_copy_at_the_same_time_takes_the_next_free_name(tmp_path: Path) -> None:
    project = at(tmp_path / ".pensa")
    project.ensure()
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    kept: list[str | None] = []
    for n in range(2):
        Path(project.db).write_bytes(b"damaged %d" % n)
        Path(project.db + "-journal").write_bytes(b"its journal %d" % n)
        kept.append(aside.move(project, now))
    assert kept == [
        f"{project.dir}/db.sqlite.damaged-20260102T030405Z.tmp",
        f"{project.dir}/db.sqlite.damaged-20260102T030405Z-1.tmp",
    ]
    for n, path in enumerate(kept):
        assert path is not None
        assert Path(path).read_bytes() == b"damaged %d" % n
        assert Path(path + "-journal").read_bytes() == b"its journal %d" % n
    assert not os.path.lexists(project.db)
    assert not os.path.lexists(project.db + "-journal")
    assert aside.move(project, now) is None  # nothing there: nothing moved


@pytest.mark.process
def test_a_damaged_shared_database_is_left_to_its_own_checkout(
    repo: Path, pn: Pn, tmp_path: Path
) -> None:
    committed_tracker(repo, pn, issues=3)
    main = tmp_path / "main" / ".pensa"
    main.mkdir(parents=True)
    shutil.copy(repo / ".pensa" / "db.sqlite", main / "db.sqlite")
    overwrite_with_garbage(main / "db.sqlite")
    env = {"PN_SHARED_DB": str(main / "db.sqlite")}
    done = pn("doctor", "--fix", "--json", env=env)
    assert done.code == 0
    report = done.json()
    assert [f["check"] for f in report["findings"]] == ["damaged_database"] * 2
    assert report["findings"][1]["message"].endswith(
        f"the database this worktree shares: run `pn doctor --fix` in {tmp_path / 'main'}"
    )
    assert report["fixes"] == []
    assert sorted(p.name for p in main.iterdir()) == ["db.sqlite"]


@pytest.mark.process
def test_the_copy_is_ignored_by_the_gitignore_of_every_pensa(repo: Path) -> None:
    from pensa.aside import KEPT
    from pensa.project import GITIGNORE

    (repo / ".gitignore").write_text(GITIGNORE)
    name = KEPT.format(stamp="20260102T030405Z", n="-1")
    for path in (name, f"{name}-journal"):
        (repo / path).write_text("x")
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", path], cwd=repo, check=False, capture_output=True
        )
        assert ignored.returncode == 0, path

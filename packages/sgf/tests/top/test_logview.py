"""Following a loop's log for the log pane, and styling its lines as ralph does."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgf.top.logview import LogFollower, style_of


@pytest.mark.parametrize(
    ("line", "style"),
    [
        ("-> Read(src/app.py)", "cyan"),
        ("   ! file not found", "red"),
        ("warning: usage limit reached; it resets at 15:00", "bold yellow"),
        ("Iteration 3 done: 3m12s · exit 0", "bold green"),
        ("# sgf: ralph -a --loop-id build-1", "dim"),
        ("I'll read the file first.", None),
    ],
)
def test_lines_are_styled_as_ralph_styles_them(line: str, style: str | None) -> None:
    assert style_of(line) == style


def test_the_follower_returns_complete_new_lines_only(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    follower = LogFollower(log)
    assert follower.read() == []  # no log yet
    log.write_bytes(b"one\ntw")
    assert follower.read() == ["one"]
    with log.open("ab") as f:
        f.write(b"o\nthree\n")
    assert follower.read() == ["two", "three"]
    assert follower.read() == []


def test_a_long_log_starts_near_its_end_on_a_line_boundary(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(1000)))
    lines = LogFollower(log, initial=100).read()
    assert lines[-1] == "line 999"
    assert all(line.startswith("line ") for line in lines)
    assert len(lines) < 15


def test_a_truncated_log_is_read_again_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a\nb\nc\n")
    follower = LogFollower(log)
    assert follower.read() == ["a", "b", "c"]
    log.write_text("d\n")
    assert follower.read() == ["d"]


def test_bad_utf8_is_replaced(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_bytes(b"caf\xe9\n")
    assert LogFollower(log).read() == ["caf\ufffd"]

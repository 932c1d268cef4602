"""Human output: aligned plain text when piped, rich tables on a terminal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pensa.models import Issue, IssueType, Priority, Status
from pensa.render import IOV_MAX, Output, ago, segments, status_bars, table, write_all

from .conftest import PN


def make(title: str, assignee: str | None = None, issue_id: str = "pn-0000000a") -> Issue:
    return Issue(
        issue_id,
        title,
        None,
        IssueType.TASK,
        Status.OPEN,
        Priority.P0,
        None,
        None,
        assignee,
        "c",
        "u",
        None,
        None,
        (),
        None,
        None,
        None,
        None,
        None,
        (),
    )


def test_plain_table_aligns_columns_without_trailing_spaces() -> None:
    text = table([("a", "bb", ""), ("ccc", "d", "e")])
    assert text.splitlines() == ["a    bb", "ccc  d   e"]


def test_color_output_uses_rich(capsys: pytest.CaptureFixture[str]) -> None:
    Output(as_json=False, color=True).issues([make("[not markup]", "ann")])
    out = capsys.readouterr().out
    assert "[not markup]" in out
    assert "@ann" in out
    assert "pri" in out


def test_json_wins_over_color(capsys: pytest.CaptureFixture[str]) -> None:
    Output(as_json=True, color=True).issue(None)
    assert capsys.readouterr().out == "null\n"


NOW = datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("stamp", "said"),
    [
        ("2026-03-02T11:59:30.000000Z", "just now"),
        ("2026-03-02T12:00:05.000000Z", "just now"),  # a clock a little ahead
        ("2026-03-02T11:57:00.000000Z", "3 min ago"),
        ("2026-03-02T09:00:00.000000Z", "3 h ago"),
        ("2026-03-01T11:00:00.000000Z", "1 day ago"),
        ("2026-02-20T12:00:00.000000Z", "10 days ago"),
        ("2025-12-24T12:00:00.000000Z", "2025-12-24"),
        ("not a time", "not a time"),
    ],
)
def test_times_read_the_way_people_say_them(stamp: str, said: str) -> None:
    assert ago(stamp, NOW) == said


def test_a_plain_table_with_a_width_cuts_only_the_title() -> None:
    rows = [("id", "title", "assignee"), ("pn-0000000a", "a very long title indeed", "@build-x")]
    assert table(rows, width=40, shrink=1).splitlines() == [
        "id           title              assignee",
        "pn-0000000a  a very long titl…  @build-x",
    ]
    assert table(rows, shrink=1) == table(rows)  # no width (a pipe): nothing is cut


def test_a_title_is_never_cut_below_a_readable_minimum() -> None:
    text = table([("pn-0000000a", "x" * 40, "@" + "y" * 30)], width=20, shrink=1)
    assert "x" * 11 + "…" in text


def test_piped_lists_have_a_header_and_full_titles(capsys: pytest.CaptureFixture[str]) -> None:
    Output(as_json=False, color=False).issues([make("t" * 200, "build-20260226T143000")])
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["id", "pri", "status", "type", "title", "assignee"]
    assert "t" * 200 in row


def test_a_narrow_terminal_shortens_titles_and_never_splits_ids(
    capsys: pytest.CaptureFixture[str],
) -> None:
    loop = "build-20260226T143000-abcdef"
    issues = [make("a title that goes on and on " * 3, loop, f"pn-0000000{n}") for n in range(3)]
    for color in (True, False):
        Output(as_json=False, color=color, width=80).issues(issues)
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert len(lines) == 4, out  # header + one line per issue: nothing wrapped
        assert all(len(line) <= 80 for line in lines)
        assert all(f"@{loop}" in line and "pn-0000000" in line for line in lines[1:])
        assert "…" in out


def on_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run pn with stdout on a pseudo-terminal; return what it printed there."""
    primary, secondary = os.openpty()
    try:
        done = subprocess.run([PN, *args], env=env, stdout=secondary, check=False, timeout=60)
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(primary)
    assert done.returncode == 0
    return b"".join(chunks).decode()


def terminal_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PN_DIR": str(tmp_path / ".pensa"), "PN_ACTOR": "a", "TERM": "xterm"}


@pytest.mark.process
@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)])
def test_a_terminal_gets_colour_unless_no_color(
    tmp_path: Path, no_color: str | None, coloured: bool
) -> None:
    env = terminal_env(tmp_path)
    subprocess.run([PN, "create", "urgent thing", "-t", "task", "-p", "p0"], env=env, check=True)
    if no_color is not None:
        env["NO_COLOR"] = no_color
    out = on_terminal(["list"], env)
    assert "urgent thing" in out
    assert ("\x1b[" in out) is coloured


@pytest.mark.process
@pytest.mark.parametrize("no_color", [None, "1"])
def test_on_a_terminal_tables_fit_its_width(tmp_path: Path, no_color: str | None) -> None:
    env = terminal_env(tmp_path)
    made = subprocess.run(
        [PN, "create", "word " * 30, "-a", "build-20260226T143000", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    env["COLUMNS"] = "70"
    if no_color is not None:
        env["NO_COLOR"] = no_color
    lines = on_terminal(["list"], env).splitlines()
    assert len(lines) == 2  # header and one row: nothing wrapped
    assert json.loads(made.stdout)["id"] in lines[1]
    assert "@build-20260226T143000" in lines[1]
    assert "…" in lines[1]


@pytest.mark.parametrize(
    "counts", [[1, 0, 0, 0], [5, 1, 1, 100], [3, 3, 3, 3], [0, 0, 7, 0], [1, 1, 1, 1]]
)
def test_bar_segments_fill_the_width_and_show_every_non_zero_count(counts: list[int]) -> None:
    sizes = segments(counts, 24)
    assert sum(sizes) == 24
    assert all((size > 0) == (count > 0) for size, count in zip(sizes, counts, strict=True))


def test_status_bars_skip_empty_types_and_say_the_counts() -> None:
    bars = {
        "bug": {"open": 0, "in_progress": 0, "blocked": 0, "closed": 0},
        "task": {"open": 2, "in_progress": 1, "blocked": 1, "closed": 4},
    }
    lines = status_bars(bars).splitlines()
    assert len(lines) == 2  # the task bar and the legend
    assert lines[0].startswith("task  [green]")
    assert lines[0].endswith("2 open · 1 in progress · 1 blocked · 4 closed")


@pytest.mark.process
def test_status_on_a_terminal_draws_bars_and_piped_keeps_the_table(tmp_path: Path) -> None:
    env = terminal_env(tmp_path)
    subprocess.run([PN, "q", "a task"], env=env, check=True, capture_output=True)
    out = on_terminal(["status"], env)
    assert "█" in out
    assert "1 open" in out
    piped = subprocess.run([PN, "status"], env=env, capture_output=True, text=True, check=True)
    assert "█" not in piped.stdout
    assert piped.stdout.splitlines()[0].split() == ["type", "open", "in_progress", "closed"]


class ShortWrites:
    """A writev that takes at most `limit` bytes a call, the way a signal or a full pipe
    cuts a write short, and records what it was given."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.written = b""
        self.calls: list[int] = []

    def __call__(self, fd: int, pieces: Sequence[bytes]) -> int:
        self.calls.append(len(pieces))
        taken = b"".join(pieces)[: self.limit]
        self.written += taken
        return len(taken)


@pytest.mark.parametrize("limit", [1, 3, 7, 1000])
def test_write_all_goes_on_where_a_short_write_stopped(limit: int) -> None:
    pieces = [b"[", b"", b"abc", b",defgh", b"\xc3\xbc", b"]\n"]
    writev = ShortWrites(limit)
    write_all(5, pieces, writev=writev)
    assert writev.written == b"".join(pieces)
    assert pieces == [b"[", b"", b"abc", b",defgh", b"\xc3\xbc", b"]\n"]  # untouched


def test_write_all_hands_the_kernel_at_most_iov_max_pieces_a_call() -> None:
    pieces = [b"x"] * (IOV_MAX * 2 + 1)
    writev = ShortWrites(len(pieces))
    write_all(5, pieces, writev=writev)
    assert writev.written == b"x" * len(pieces)
    assert writev.calls == [IOV_MAX, IOV_MAX, 1]


def test_raw_json_goes_to_the_file_descriptor_as_is(tmp_path: Path) -> None:
    pieces = [b'[{"t":"\xc3\xbc"}', b',{"t":"b"}', b"]"]
    path = tmp_path / "out"
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("before ")  # text already buffered comes first
        saved, sys.stdout = sys.stdout, stream
        try:
            Output(as_json=True, color=False).raw(pieces)
        finally:
            sys.stdout = saved
    assert path.read_bytes() == b'before [{"t":"\xc3\xbc"},{"t":"b"}]\n'


def raw_to(stream: io.TextIOBase) -> None:
    saved, sys.stdout = sys.stdout, stream
    try:
        Output(as_json=True, color=False).raw([b'[{"t":"\xc3\xbc"}', b"]"])
    finally:
        sys.stdout = saved


def test_raw_json_is_text_for_a_stream_without_a_file_descriptor() -> None:
    stream = io.StringIO()
    raw_to(stream)
    assert stream.getvalue() == '[{"t":"ü"}]\n'


def test_raw_json_is_text_in_the_stream_s_encoding_when_it_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "out"
    with open(path, "w", encoding="latin-1") as stream:
        raw_to(stream)
    assert path.read_bytes() == '[{"t":"ü"}]\n'.encode("latin-1")

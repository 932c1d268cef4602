"""parallel.py and proc.run_many: one exit code for many loops, labelled whole lines."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from sgf import proc
from sgf.loop import parallel


@pytest.mark.parametrize(
    ("codes", "expected"),
    [([0, 0], 0), ([0, 2], 2), ([2, 1, 0], 1), ([1, 130], 130), ([0, 3], 3), ([], 0)],
)
def test_one_exit_code_for_all_loops(codes: list[int], expected: int) -> None:
    assert parallel.overall(codes) == expected


@pytest.mark.process
def test_run_many_labels_whole_lines_and_keeps_each_log_apart(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "name = sys.argv[1]\n"
        "sys.stdout.write(name + ' one\\n' + name + ' tw'); sys.stdout.flush()\n"
        "time.sleep(0.05)\n"
        "sys.stdout.write('o\\n' + name + ' tail'); sys.exit(int(sys.argv[2]))\n"
    )
    logs = [io.BytesIO(), io.BytesIO()]
    jobs = [
        proc.Job([sys.executable, "-c", script, name, code], tmp_path, dict(os.environ), log, label)
        for name, code, log, label in (("a", "0", logs[0], b"[1] "), ("b", "2", logs[1], b"[2] "))
    ]
    out = io.BytesIO()
    assert proc.run_many(jobs, out=out) == [0, 2]
    lines = out.getvalue().decode().splitlines()
    assert sorted(lines) == sorted(
        ["[1] a one", "[1] a two", "[1] a tail", "[2] b one", "[2] b two", "[2] b tail"]
    )
    assert logs[0].getvalue() == b"a one\na two\na tail"
    assert logs[1].getvalue() == b"b one\nb two\nb tail"


def test_status_groups_loops_that_share_an_sgf_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgf import render, status
    from sgf.status import Running, Status

    def loop(loop_id: str, pid: int) -> Running:
        return Running(loop_id, "build", None, pid, "t", 5, f".sgf/logs/{loop_id}.log")

    found = status._grouped(
        tmp_path,
        [
            loop("build-20260101T143001", 7),
            loop("issues-plan-20260101T120000", 9),
            loop("build-20260101T143000", 7),
        ],
    )
    assert [(r.loop_id, r.group) for r in found] == [
        ("build-20260101T143000", "build-20260101T143000"),
        ("build-20260101T143001", "build-20260101T143000"),
        ("issues-plan-20260101T120000", None),
    ]
    monkeypatch.setenv("COLUMNS", "240")
    render.status(Status(found, [], [], None, "no pn"), as_json=False)
    shown = capsys.readouterr().out
    assert shown.count("2 at 14:30:00") == 2

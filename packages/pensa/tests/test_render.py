"""Human output: aligned plain text when piped, rich tables on a terminal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pensa.models import Issue, IssueType, Priority, Status
from pensa.render import Output, table

from .conftest import PN


def make(title: str, assignee: str | None = None) -> Issue:
    return Issue(
        "pn-0000000a",
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


@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)])
def test_a_terminal_gets_colour_unless_no_color(
    tmp_path: Path, no_color: str | None, coloured: bool
) -> None:
    env = {**os.environ, "PN_DIR": str(tmp_path / ".pensa"), "PN_ACTOR": "a", "TERM": "xterm"}
    subprocess.run([PN, "create", "urgent thing", "-t", "task", "-p", "p0"], env=env, check=True)
    if no_color is not None:
        env["NO_COLOR"] = no_color
    primary, secondary = os.openpty()
    try:
        done = subprocess.run([PN, "list"], env=env, stdout=secondary, check=False, timeout=60)
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
    out = b"".join(chunks).decode()
    assert done.returncode == 0
    assert "urgent thing" in out
    assert ("\x1b[" in out) is coloured

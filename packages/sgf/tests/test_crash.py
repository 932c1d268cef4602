"""An unexpected exception is one line on stderr naming a crash log with the traceback."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

import sgf.cli as commands
from sgf.cli import main as entry


def test_a_bug_is_one_line_and_a_crash_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*_args: object, **_kwargs: object) -> NoReturn:
        raise ZeroDivisionError("the bug's own words")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(commands.cli, "main", boom)

    assert entry(["--help"]) == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "unexpected error (ZeroDivisionError: the bug's own words)" in err
    (log,) = (tmp_path / "cache" / "springfield" / "crashes").glob("sgf-*.log")
    assert str(log) in err
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "ZeroDivisionError: the bug's own words" in text
    assert "'--help'" in text


def test_a_crash_log_falls_back_to_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgf import crash

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "tmp"))
    try:
        raise ValueError("x")
    except ValueError as e:
        line = crash.report(e, ["sgf"], version="0")
    assert str(tmp_path / "tmp") in line

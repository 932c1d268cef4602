"""An unexpected exception is one line on stderr naming a crash log with the traceback."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

import ralph.cli as commands
from ralph.cli import main as entry


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
    (log,) = (tmp_path / "cache" / "springfield" / "crashes").glob("ralph-*.log")
    assert str(log) in err
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "ZeroDivisionError: the bug's own words" in text
    assert "'--help'" in text


def test_a_crash_log_falls_back_to_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralph import crash

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "tmp"))
    try:
        raise ValueError("x")
    except ValueError as e:
        line = crash.report(e, ["ralph"], version="0")
    assert str(tmp_path / "tmp") in line


def test_a_failed_command_shows_its_last_lines_not_only_the_last() -> None:
    from ralph.errors import CommandFailed

    stderr = "hint: one\nhint: two\nerror: the cause\nfatal: the summary\n"
    message = str(CommandFailed(["git", "push", "origin", "my branch"], 128, stderr))
    assert message.startswith("`git push origin 'my branch'` exited with 128:")
    assert "error: the cause" in message
    assert "fatal: the summary" in message

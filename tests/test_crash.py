"""An unexpected exception in any of the three tools is one line on stderr naming a crash log
with the traceback."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

# (the crash log's prefix, the module holding the click group, the entry point)
TOOLS = [
    ("pn", "pensa.cli.base", "pensa.cli:run"),
    ("ralph", "ralph.cli", "ralph.cli:main"),
    ("sgf", "sgf.cli", "sgf.cli:main"),
]


def entry_point(spec: str) -> Callable[[list[str]], int]:
    module, name = spec.split(":")
    found: Callable[[list[str]], int] = getattr(importlib.import_module(module), name)
    return found


@pytest.mark.parametrize(("tool", "group", "entry"), TOOLS)
def test_a_bug_is_one_line_and_a_crash_log(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tool: str,
    group: str,
    entry: str,
) -> None:
    def boom(*_args: object, **_kwargs: object) -> NoReturn:
        raise ZeroDivisionError("the bug's own words")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(importlib.import_module(group).cli, "main", boom)

    assert entry_point(entry)(["--help"]) == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "unexpected error (ZeroDivisionError: the bug's own words)" in err
    (log,) = (tmp_path / "cache" / "springfield" / "crashes").glob(f"{tool}-*.log")
    assert str(log) in err
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "ZeroDivisionError: the bug's own words" in text
    assert "'--help'" in text


@pytest.mark.parametrize("tool", ["pn", "ralph", "sgf"])
def test_a_crash_log_falls_back_to_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    from pensa.shared import crash

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "tmp"))
    try:
        raise ValueError("x")
    except ValueError as e:
        line = crash.report(e, [tool], version="0")
    assert str(tmp_path / "tmp") in line
    assert any((tmp_path / "tmp").glob(f"{tool}-*.log"))


def test_pn_json_reports_a_bug_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from pensa.cli import base, run

    def boom(*_args: object, **_kwargs: object) -> NoReturn:
        raise KeyError("k")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(base.cli, "main", boom)
    assert run(["list", "--json"]) == 1
    error = json.loads(capsys.readouterr().err)
    assert error["code"] == "internal_error"
    assert "unexpected error (KeyError: 'k')" in error["error"]


def test_a_failed_command_shows_its_last_lines_not_only_the_last() -> None:
    from ralph.errors import CommandFailed

    stderr = "hint: one\nhint: two\nerror: the cause\nfatal: the summary\n"
    message = str(CommandFailed(["git", "push", "origin", "my branch"], 128, stderr))
    assert message.startswith("`git push origin 'my branch'` exited with 128:")
    assert "error: the cause" in message
    assert "fatal: the summary" in message


@pytest.mark.parametrize("package", ["ralph", "sgf"])
def test_a_failed_command_shows_the_command_its_code_and_both_streams(package: str) -> None:
    errors = importlib.import_module(f"{package}.errors")
    stdout = "".join(f"out {n}\n" for n in range(8))
    message = str(errors.CommandFailed(["git", "rebase", "main"], 1, "fatal: conflict\n", stdout))
    assert message.splitlines()[0] == "`git rebase main` exited with 1:"
    assert "    out 7" in message  # the tail of stdout
    assert "    out 2" not in message
    assert "  stderr:\n    fatal: conflict" in message
    assert str(errors.CommandFailed(["true"], 3, "", "")) == "`true` exited with 3: no output"

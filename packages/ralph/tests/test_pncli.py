"""ralph asks pn through its command line and carries on when there is no answer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralph import pncli


@pytest.fixture
def fake_pn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable `pn` first on PATH; each test writes the script it needs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pn"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    (tmp_path / ".pensa").mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return script


@pytest.mark.process
def test_the_list_pn_prints_is_the_answer_and_json_is_asked_for(
    fake_pn: Path, tmp_path: Path
) -> None:
    fake_pn.write_text('#!/bin/sh\nprintf \'["%s", "%s", "%s", {}]\' "$@"\n')
    answer = pncli.listing(["list", "--all"], cwd=tmp_path, env=dict(os.environ))
    assert answer == ["list", "--all", "--json", {}]


def test_no_pn_on_path_is_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert pncli.listing(["list"], cwd=tmp_path, env=dict(os.environ)) is None


def test_a_project_without_pensas_folder_is_not_asked_and_gets_none(
    fake_pn: Path, tmp_path: Path
) -> None:
    fake_pn.write_text("#!/bin/sh\nmkdir -p made && echo '[]'\n")
    project = tmp_path / "project"
    project.mkdir()
    assert pncli.listing(["list"], cwd=project, env=dict(os.environ)) is None
    assert pncli.run(["sync"], cwd=project, env=dict(os.environ)) is False
    assert not (project / "made").exists()


@pytest.mark.process
@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("#!/bin/sh\necho '[]'\nexit 1\n", "pn failed"),
        ("#!/bin/sh\necho 'not json'\n", "not JSON"),
        ("#!/bin/sh\necho '{\"id\": 1}'\n", "JSON, but not a list"),
        ("#!/nonexistent/interpreter\n", "pn cannot start"),
        ("#!/bin/sh\nexec sleep 30\n", "pn times out"),
    ],
)
def test_anything_but_a_json_list_is_no_answer(
    fake_pn: Path, tmp_path: Path, script: str, why: str
) -> None:
    fake_pn.write_text(script)
    assert pncli.listing(["list"], cwd=tmp_path, env=dict(os.environ), timeout=0.5) is None, why


@pytest.mark.process
def test_ask_answers_with_the_json_pn_prints(fake_pn: Path, tmp_path: Path) -> None:
    fake_pn.write_text('#!/bin/sh\necho \'{"id": "pn-1"}\'\n')
    assert pncli.ask(["claim-next"], cwd=tmp_path, env=dict(os.environ)) == pncli.Answer(
        True, {"id": "pn-1"}
    )
    fake_pn.write_text("#!/bin/sh\necho null\n")
    assert pncli.ask(["claim-next"], cwd=tmp_path, env=dict(os.environ)).value is None


@pytest.mark.process
@pytest.mark.parametrize(
    ("script", "said"),
    [
        (
            'echo \'{"error": "the remote is gone", "code": "git_failed"}\' >&2; exit 1',
            "the remote is gone",
        ),
        ("echo 'Traceback (most recent call last):' >&2; echo 'Boom' >&2; exit 1", "Boom"),
        ("exit 3", "exit 3"),
        ("echo not-json", "pn printed no JSON: 'not-json\\n'"),
    ],
)
def test_ask_says_in_one_line_why_there_is_no_answer(
    fake_pn: Path, tmp_path: Path, script: str, said: str
) -> None:
    fake_pn.write_text(f"#!/bin/sh\n{script}\n")
    answer = pncli.ask(["claim-next"], cwd=tmp_path, env=dict(os.environ))
    assert answer == pncli.Answer(False, error=said)


def test_ask_without_pn_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    answer = pncli.ask(["claim-next"], cwd=tmp_path, env=dict(os.environ))
    assert not answer.ok
    assert "pn is not on PATH" in answer.error

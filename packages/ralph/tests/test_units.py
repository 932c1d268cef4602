"""Small pure pieces: watchdog deadlines, positionals, sentinels, rendering, sound players."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ralph import ding, prompt, sentinel
from ralph.errors import PromptNotFound, UsageProblem
from ralph.render import Output
from ralph.watchdog import Expiry, Watchdog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_watchdog_idle_deadline_moves_with_activity() -> None:
    clock = Clock()
    watch = Watchdog(idle=10, post_result=3, clock=clock)
    clock.now += 8
    assert watch.remaining() == 2
    watch.activity()
    assert watch.remaining() == 10
    clock.now += 10
    assert watch.expired() is Expiry.IDLE
    assert watch.fired is Expiry.IDLE


def test_watchdog_post_result_deadline_is_fixed_from_the_result() -> None:
    clock = Clock()
    watch = Watchdog(idle=10, post_result=3, clock=clock)
    watch.result_seen()
    clock.now += 2
    watch.activity()  # output after the result does not extend the grace
    watch.result_seen()
    assert watch.remaining() == 1
    assert watch.expired() is None
    clock.now += 1
    assert watch.expired() is Expiry.POST_RESULT


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], (1, "prompt.md")),
        (["5"], (5, "prompt.md")),
        (["task.md"], (1, "task.md")),
        (["3", "fix it"], (3, "fix it")),
    ],
)
def test_positionals(args: list[str], expected: tuple[int, str]) -> None:
    assert prompt.positionals(args) == expected


@pytest.mark.parametrize("args", [["0"], ["a", "b"], ["1", "2", "3"]])
def test_bad_positionals(args: list[str]) -> None:
    with pytest.raises(UsageProblem):
        prompt.positionals(args)


def test_load_prompt(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("from file")
    loaded = prompt.load("p.md", cwd=tmp_path)
    assert (loaded.text, loaded.path) == ("from file", tmp_path / "p.md")
    assert prompt.load("inline words", cwd=tmp_path).path is None
    assert prompt.load("x" * 5000, cwd=tmp_path).text == "x" * 5000  # too long to be a name
    with pytest.raises(PromptNotFound):
        prompt.load("prompt.md", cwd=tmp_path)


def test_sentinel_depths_and_git_dir(tmp_path: Path) -> None:
    for where in (
        ".ralph-complete",
        "a/.ralph-complete",
        "a/b/.ralph-complete",
        "a/b/c/.ralph-complete",
        ".git/x/.ralph-complete",
    ):
        (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / where).write_text("")
    assert sentinel.clear(tmp_path, "L") == 3
    assert (tmp_path / "a/b/c/.ralph-complete").exists()
    assert not sentinel.take(tmp_path, "L")


@pytest.mark.parametrize(
    ("content", "owner", "mine"),
    [
        ("", "", True),  # a plain `touch`: whoever finds it
        ("\n", "", True),
        ("build-1\n", "build-1", True),  # `echo "$RALPH_LOOP_ID" > .ralph-complete`
        ("  build-1  ", "build-1", True),
        ("issues-plan-1\n", "issues-plan-1", False),  # another loop's
        ("x" * 5000, "x" * 4097, False),
    ],
)
def test_a_sentinel_belongs_to_the_loop_it_names_or_to_any_when_empty(
    tmp_path: Path, content: str, owner: str, mine: bool
) -> None:
    path = tmp_path / "a" / ".ralph-complete"
    path.parent.mkdir()
    path.write_text(content)
    assert sentinel.owner(path) == owner
    assert sentinel.take(tmp_path, "build-1") is mine
    assert path.exists() is not mine


def test_an_unreadable_sentinel_is_nobodys(tmp_path: Path) -> None:
    (tmp_path / ".ralph-complete").mkdir()  # not a file: neither read nor deleted
    assert sentinel.owner(tmp_path / ".ralph-complete") is None
    assert sentinel.owner(tmp_path / "gone" / ".ralph-complete") is None
    assert not sentinel.take(tmp_path, "build-1")
    assert (tmp_path / ".ralph-complete").is_dir()


def test_plain_output_has_no_escapes_and_styled_output_has_them() -> None:
    plain, styled, log = io.StringIO(), io.StringIO(), io.StringIO()
    Output(plain, io.StringIO(), styled=False).banner(1, 2, "L")
    Output(styled, io.StringIO(), styled=True, log=log).banner(1, 2, "L")
    assert "Iteration 1 of 2 [L]" in plain.getvalue()
    assert "\x1b[" not in plain.getvalue()
    assert "\x1b[" in styled.getvalue()
    assert log.getvalue() == plain.getvalue()


def test_output_survives_a_closed_stdout() -> None:
    stdout, log = io.StringIO(), io.StringIO()
    out = Output(stdout, io.StringIO(), styled=False, log=log)
    stdout.close()
    out.text("still logged")
    out.text("and again")
    assert log.getvalue() == "still logged\nand again\n"


def test_long_lines_are_not_wrapped_on_a_terminal() -> None:
    styled = io.StringIO()
    Output(styled, io.StringIO(), styled=True).text("w" * 500)
    assert "w" * 500 in styled.getvalue()


def test_player_falls_back_to_the_bell_without_players(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert ding.player("linux") is None
    assert ding.player("darwin") is None


def test_ding_plays_the_sound_once_per_file_and_reaps_the_player(
    tmp_path: Path, no_leaks: None
) -> None:
    marker = tmp_path / "played"
    bell: list[str] = []
    watcher = ding.Ding(
        tmp_path, command=["sh", "-c", f"echo x >> {marker}"], bell=lambda: bell.append("ring")
    )
    watcher.check()
    (tmp_path / ".ralph-ding").touch()
    watcher.check()
    watcher.check()
    watcher.close()
    assert marker.read_text() == "x\n"
    assert not (tmp_path / ".ralph-ding").exists()
    assert bell == []


def test_cli_start_up_imports_neither_docker_nor_rich() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ralph", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert "docker" not in modules
    assert "rich" not in modules

"""ralph.sentinel: which `.ralph-complete` belongs to which loop, and when an interactive
session ends after its agent wrote one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph import sentinel


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


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


def test_a_session_ends_grace_seconds_after_its_sentinel_appeared() -> None:
    clock, written = Clock(), [False]
    end = sentinel.SessionEnd(lambda: written[0], grace=3, clock=clock, poll=0.5)
    assert not end.due()
    clock.now += 10
    assert not end.due()  # nothing written: the session goes on however long it takes
    written[0] = True
    clock.now += 0.1
    assert not end.due()  # looked 0.1 s ago: the next look waits for the poll interval
    clock.now += 0.5
    assert not end.due()  # seen now; the grace starts
    clock.now += 2.9
    assert not end.due()
    clock.now += 0.1
    assert end.due()
    written[0] = False  # the loop takes the file later; once due, the session still ends
    assert end.due()


def test_the_sentinel_is_looked_for_at_most_once_per_poll() -> None:
    clock, looks = Clock(), []

    def written() -> bool:
        looks.append(clock.now)
        return False

    end = sentinel.SessionEnd(written, grace=1, clock=clock, poll=0.5)
    for _ in range(10):  # 1 s of ticks, 0.1 s apart
        end.due()
        clock.now += 0.125
    assert looks == [100.0, 100.5, 101.0]

"""ralph.ding: the sound player, the bell, and reaping players."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph import ding


def test_player_falls_back_to_the_bell_without_players(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert ding.player("linux") is None
    assert ding.player("darwin") is None


@pytest.mark.process
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

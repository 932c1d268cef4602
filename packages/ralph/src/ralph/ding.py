"""Interactive mode's notification: a `.ralph-ding` file (touched by Claude Code's
Notification/Stop hooks) plays a sound, and the player process is always reaped."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ralph import proc, sentinel

_MAC_SOUND = "/System/Library/Sounds/Blow.aiff"
_PULSE_SOUND = "/usr/share/sounds/freedesktop/stereo/complete.oga"
_ALSA_SOUND = "/usr/share/sounds/alsa/Front_Center.wav"


def player(platform: str = sys.platform) -> tuple[str, ...] | None:
    """The platform's sound command: afplay (macOS), paplay/aplay (Linux); None: the bell."""
    if platform == "darwin" and proc.which("afplay"):
        return ("afplay", _MAC_SOUND)
    if proc.which("paplay") and Path(_PULSE_SOUND).is_file():
        return ("paplay", _PULSE_SOUND)
    if proc.which("aplay") and Path(_ALSA_SOUND).is_file():
        return ("aplay", "-q", _ALSA_SOUND)
    return None


class Ding:
    """Watches for `.ralph-ding` in `root`; plays `command` (or rings `bell`) when it appears."""

    def __init__(
        self, root: Path, *, command: Sequence[str] | None, bell: Callable[[], None]
    ) -> None:
        self._root = root
        self._command = list(command) if command else None
        self._bell = bell
        self._players = proc.Players()

    def check(self) -> None:
        """Play the sound if the ding file appeared since the last check."""
        self._players.reap()
        if sentinel.take_ding(self._root):
            if self._command:
                self._players.start(self._command)
            else:
                self._bell()

    def close(self) -> None:
        """Wait for (or kill) running sound players."""
        self._players.close()

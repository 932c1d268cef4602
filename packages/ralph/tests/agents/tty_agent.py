#!/usr/bin/env python3
"""A stand-in for interactive Claude Code: needs a TTY, puts it in raw mode, echoes keys.

Prints READY, reads keystrokes until `q`, prints them back, touches `.ralph-ding` and waits for
ralph to take it, then exits WITHOUT restoring the terminal (ralph must do that).
"""

from __future__ import annotations

import json
import os
import sys
import time
import tty
from pathlib import Path


def say(text: str) -> None:
    os.write(1, text.encode() + b"\r\n")


def main() -> None:
    if not os.isatty(0):
        say("NOT A TTY")
        sys.exit(3)
    tty.setraw(0)
    say("ARGV:" + json.dumps(sys.argv[1:]))
    hint = sys.argv[-1]
    if "@" in hint:
        prompt = Path(hint.split("@", 1)[1].split(" ", 1)[0])
        say(f"PROMPT:{len(prompt.read_bytes()) if prompt.is_file() else -1}")
    say(f"TERM:{os.environ.get('TERM')}")
    say(f"TOKEN:{os.environ.get('CLAUDE_CODE_OAUTH_TOKEN')}")
    say("READY")
    if os.environ.get("TTY_AGENT_COMPLETE"):  # done at once; never quits its session itself
        Path(".ralph-complete").write_text(os.environ.get("RALPH_LOOP_ID", ""))
        say("WROTE SENTINEL")
        while os.read(0, 1):
            pass
        return
    keys = b""
    while not keys.endswith(b"q"):
        key = os.read(0, 1)
        if not key:
            break
        if key == b"s":  # report the terminal size (resizes must reach us)
            size = os.get_terminal_size(0)
            say(f"SIZE:{size.lines}x{size.columns}")
            continue
        keys += key
    say("GOT:" + repr(keys))
    ding = Path(".ralph-ding")
    ding.touch()
    deadline = time.monotonic() + 20
    while ding.exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # waiting for ralph to take the file
    say("BYE")


if __name__ == "__main__":
    main()

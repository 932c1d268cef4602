#!/usr/bin/env python3
"""A scripted stand-in for a check agent (`claude -p --output-format stream-json`): reads
ralph's check prompt on stdin, finds the task file and the verdict path in it, and writes the
verdict the task's description asks for with a line `fake-check: WHAT`:

pass / fail / partial: a well-formed verdict; none: no file; malformed: not JSON; extra: an
unknown key; huge: a valid verdict padded past ralph's cap; symlink:PATH: a link to PATH;
fifo: a named pipe; dir: a folder. Runs on the host and in the images (python3 only).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path


def emit(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    prompt = sys.stdin.read()
    verdict = Path(re.findall(r"write exactly one JSON object to `([^`]+)`", prompt)[0])
    task = Path(re.findall(r"`([^`]+/task\.md)`", prompt)[0]).read_text()
    wanted = (re.findall(r"fake-check: (\S+)", task) or ["pass"])[0]
    say = f"fake check agent: {wanted} in {os.getcwd()}"
    emit({"type": "assistant", "message": {"content": [{"type": "text", "text": say}]}})
    good = {"summary": f"the fake check agent said {wanted}", "findings": ["looked at it"]}
    if wanted in ("pass", "fail", "partial"):
        fixes = [] if wanted == "pass" else [{"title": "make it so", "description": "here"}]
        verdict.write_text(json.dumps({"verdict": wanted.upper(), **good, "fixes": fixes}))
    elif wanted == "malformed":
        verdict.write_text('{"verdict": "PASS", ')
    elif wanted == "extra":
        verdict.write_text(json.dumps({"verdict": "PASS", "approved_by": "me"}))
    elif wanted == "lowercase":
        verdict.write_text(json.dumps({"verdict": "pass"}))
    elif wanted == "huge":
        verdict.write_text(json.dumps({"verdict": "PASS", "summary": "x" * 200_000}))
    elif wanted.startswith("symlink:"):
        verdict.symlink_to(wanted.removeprefix("symlink:"))
    elif wanted == "fifo":
        os.mkfifo(verdict)
    elif wanted == "dir":
        verdict.mkdir()
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "checked",
            "num_turns": 1,
            "total_cost_usd": 0.001,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


if __name__ == "__main__":
    main()

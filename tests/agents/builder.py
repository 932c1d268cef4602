#!/usr/bin/env python3
"""A fake build-loop agent: one task per run, the way the build prompt asks.

Claims with `pn claim-next`, writes `work/<task-id>.txt`, closes the task and commits with
`git add -A`, printing stream-json like `claude -p`. Nothing ready: it writes the loop's
`.ralph-complete`. With BUILDER_SHARED_FILE set, every task also writes that one file (two
loops then conflict); with BUILDER_HOLD (a folder) it says so there once it holds a task, and
then works slowly; with BUILDER_NO_HOOKS set its git runs no hook, as gemini-cli's shell tool
does (it empties core.hooksPath). Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def emit(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    emit({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})


def run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        say(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        raise SystemExit(1)
    return done.stdout


def main() -> None:
    sys.stdin.read()
    loop = os.environ.get("RALPH_LOOP_ID", "?")
    task = json.loads(run("pn", "claim-next", "--json"))
    if task is None:
        Path(".ralph-complete").write_text(loop + "\n")
        say("nothing ready")
    else:
        if hold := os.environ.get("BUILDER_HOLD"):  # a folder: say we hold a task, then wait
            ready = Path(hold) / f"{loop}.ready"
            ready.write_text(task["id"])
            time.sleep(120)  # a slow agent; the test stops us long before
        work = Path("work") / f"{task['id']}.txt"
        work.parent.mkdir(exist_ok=True)
        work.write_text(f"{task['title']} by {loop}\n")
        if shared := os.environ.get("BUILDER_SHARED_FILE"):
            Path(shared).write_text(f"{task['id']} by {loop}\n")
        run("pn", "close", task["id"], "--reason", f"built by {loop}")
        run("git", "add", "-A")
        hooks = ["-c", "core.hooksPath=/dev/null"] if os.environ.get("BUILDER_NO_HOOKS") else []
        run("git", *hooks, "commit", "-q", "-m", f"[{task['id']}] {task['title']}")
        say(f"built {task['id']}")
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "done",
            "num_turns": 1,
            "total_cost_usd": 0.0,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


if __name__ == "__main__":
    main()

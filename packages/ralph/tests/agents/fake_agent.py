#!/usr/bin/env python3
"""A scripted stand-in for `claude -p --output-format stream-json`: reads its prompt on stdin.

The prompt is JSON: {"1": [actions], "2": [...], "default": [...]}, keyed by how many times the
agent has run (see counter()). Anything else is plain text
and gets the "default" behaviour of an agent that answers and exits. Runs on the host and in
the base image (python3 only, standard library only).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def emit(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    emit({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})


def result(**fields: object) -> None:
    event: dict[str, object] = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done",
        "num_turns": 1,
        "duration_ms": 5,
        "total_cost_usd": 0.0012,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    event.update(fields)
    emit(event)


def counter() -> int:
    """This run's number: counted in the workspace's .git, or in FAKE_AGENT_COUNT, where
    `{project}` stands for the project the workspace borrows its objects from (so runs of
    several loops of one project count together, as they did in one shared tree)."""
    state = Path(".git") if Path(".git").is_dir() else Path(".")
    named = os.environ.get("FAKE_AGENT_COUNT", "")
    if "{project}" in named:
        borrowed = state / "objects" / "info" / "alternates"
        source = borrowed.read_bytes() if borrowed.is_file() else os.getcwd().encode()
        named = named.replace("{project}", hashlib.sha256(source).hexdigest()[:12])
    path = Path(named or state / "fake-agent-count")
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    return count


def act(action: list[object], prompt: str) -> None:
    verb, *args = action
    if verb == "say":
        say(str(args[0]))
    elif verb == "tool":
        block = {"type": "tool_use", "id": "toolu_1", "name": args[0], "input": args[1]}
        emit({"type": "assistant", "message": {"content": [block]}})
    elif verb == "tool_error":
        block = {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "is_error": True,
            "content": args[0],
        }
        emit({"type": "user", "message": {"content": [block]}})
    elif verb == "result":
        result(**(args[0] if args else {}))  # type: ignore[arg-type]
    elif verb == "rate_limit":
        info = dict(args[0])  # type: ignore[call-overload]
        if "resets_in" in info:
            info["resetsAt"] = time.time() + float(info.pop("resets_in"))
        emit({"type": "rate_limit_event", "rate_limit_info": info})
    elif verb == "replay":  # a recorded stream, e.g. tests/fixtures/stream/tools.jsonl
        sys.stdout.write(Path(str(args[0])).read_text())
        sys.stdout.flush()
    elif verb == "raw":
        sys.stdout.write(str(args[0]) + "\n")
        sys.stdout.flush()
    elif verb == "stderr":
        sys.stderr.write(str(args[0]) + "\n")
        sys.stderr.flush()
    elif verb in ("touch", "write"):  # write: text with $VARS expanded, as `echo "$X" > f`
        path = Path(str(args[0]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(os.path.expandvars(str(args[1])) + "\n" if verb == "write" else "")
    elif verb == "commit":
        Path(str(args[0])).write_text(str(time.time_ns()))
        subprocess.run(["git", "add", str(args[0])], check=True)
        subprocess.run(["git", "commit", "-q", "-m", str(args[1])], check=True)
    elif verb == "spawn_sleeper":  # a background child that keeps our stdout open
        child = subprocess.Popen(["sleep", "300"])
        Path(str(args[0])).write_text(str(child.pid))
    elif verb == "ready":  # atomic, so a waiter never reads a half-written pid
        ready = Path(str(args[0]))
        ready.with_name(ready.name + ".tmp").write_text(str(os.getpid()))
        ready.with_name(ready.name + ".tmp").replace(ready)
    elif verb == "ignore":
        signal.signal(getattr(signal, str(args[0])), signal.SIG_IGN)
    elif verb == "sleep":
        time.sleep(float(str(args[0])))  # models a slow agent, not a synchronisation
    elif verb == "hang":
        while True:
            signal.pause()
    elif verb == "exit":
        sys.exit(int(args[0]))  # type: ignore[call-overload]
    elif verb == "argv":
        say("argv: " + json.dumps(sys.argv[1:]))
    elif verb == "prompt_size":
        data = prompt.encode(errors="surrogateescape")
        say(f"prompt bytes: {len(data)} sha256: {hashlib.sha256(data).hexdigest()}")
    elif verb == "whoami":
        env = os.environ
        say(
            f"uid={os.getuid()} gid={os.getgid()} home={env.get('HOME')} "
            f"sandbox={env.get('IS_SANDBOX')} autoupdater={env.get('DISABLE_AUTOUPDATER')}"
        )
    elif verb == "fetch":
        import urllib.request

        try:
            with urllib.request.urlopen(str(args[0]), timeout=5) as answer:
                say(f"fetched {answer.read().decode()}")
        except OSError as e:
            say(f"cannot fetch: {e}")
    elif verb == "tty":
        try:
            os.close(os.open("/dev/tty", os.O_RDWR))
            ctty = True
        except OSError:
            ctty = False
        say(f"stdin tty: {os.isatty(0)}, controlling tty: {ctty}")
    elif verb == "refresh_credentials":  # what claude does when it refreshes its OAuth token
        path = Path(os.environ["HOME"]) / ".claude" / ".credentials.json"
        if path.exists():
            say(f"credentials: {path.read_text()}")
            path.write_text('{"token": "refreshed"}')
        else:
            say("credentials: none")
    elif verb == "env":
        say(f"env {args[0]}={os.environ.get(str(args[0]), '<unset>')}")
    elif verb == "sh":  # a shell command, as a hostile agent's Bash tool would run it
        done = subprocess.run(
            ["sh", "-c", str(args[0])], capture_output=True, text=True, check=False
        )
        say(f"sh rc={done.returncode}: {(done.stdout + done.stderr).strip()}")
    elif verb == "try_write":
        try:
            Path(str(args[0])).write_text("agent was here")
            say(f"wrote {args[0]}")
        except OSError as e:
            say(f"cannot write {args[0]}: {e.strerror}")
    else:
        raise SystemExit(f"fake_agent: unknown action {verb!r}")


def main() -> None:
    prompt = sys.stdin.buffer.read().decode(errors="surrogateescape")
    count = counter()
    try:
        script, _ = json.JSONDecoder().raw_decode(prompt)  # the script may have a tail
    except ValueError:
        script = None
    if not isinstance(script, dict):
        script = {"default": [["say", "hello from the fake agent"], ["result"]]}
    steps = script.get(str(count), script.get("default", []))
    for action in steps:
        act(action, prompt)


if __name__ == "__main__":
    main()

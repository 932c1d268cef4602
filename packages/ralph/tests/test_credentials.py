"""Secrets go to a 0600 file that a POSIX sh sources before it execs the agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ralph import credentials

AWKWARD = 'it\'s $HOME `id` "quoted"\nsecond line \\ end'


def test_secrets_and_plain_settings_are_split() -> None:
    host = {
        "ANTHROPIC_API_KEY": "k",
        "CLAUDE_CODE_OAUTH_TOKEN": "",
        "ANTHROPIC_BASE_URL": "http://m",
        "PATH": "/bin",
    }
    assert credentials.secrets(host) == {"ANTHROPIC_API_KEY": "k"}
    assert credentials.plain(host) == {"ANTHROPIC_BASE_URL": "http://m"}


def test_a_bearer_auth_token_is_a_secret_too() -> None:
    # sgf's preflight accepts ANTHROPIC_AUTH_TOKEN as a credential: it must reach the agent
    host = {"ANTHROPIC_AUTH_TOKEN": "bearer", "ANTHROPIC_MODEL": "m"}
    assert credentials.secrets(host) == {"ANTHROPIC_AUTH_TOKEN": "bearer"}
    assert credentials.plain(host) == {"ANTHROPIC_MODEL": "m"}


def test_wrapped_agent_sees_the_exact_values_and_its_own_argv_and_status(tmp_path: Path) -> None:
    values = {"ANTHROPIC_API_KEY": AWKWARD, "CLAUDE_CODE_OAUTH_TOKEN": "tok"}
    path = credentials.write(tmp_path, values, uid=os.getuid(), gid=os.getgid())
    assert path.parent == tmp_path
    assert (path.stat().st_mode & 0o777, path.stat().st_uid) == (0o600, os.getuid())
    agent = (
        "import json, os, sys; "
        "print(json.dumps([os.environ.get(k) for k in sys.argv[1:]])); sys.exit(5)"
    )
    argv = [sys.executable, "-c", agent, *values]
    done = subprocess.run(
        credentials.wrap(argv, path),
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 5, done.stderr
    assert json.loads(done.stdout) == [AWKWARD, "tok"]


def test_a_missing_secrets_file_stops_before_the_agent(tmp_path: Path) -> None:
    argv = credentials.wrap(["echo", "agent ran"], tmp_path / "gone.sh")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "agent ran" not in done.stdout


def bind(source: str, *, rw: bool = False, destination: str | None = None) -> dict[str, object]:
    target = source if destination is None else destination
    return {"Type": "bind", "Source": source, "Destination": target, "RW": rw}


def test_only_read_only_secrets_files_mounted_at_their_own_path_are_found() -> None:
    mounts = [
        bind("/tmp/ralph-x/credentials-ab.sh"),
        bind("/tmp/ralph-x/credentials-rw.sh", rw=True),
        bind("/tmp/ralph-x/credentials-cd.sh", destination="/run/other.sh"),
        bind("/work/project"),
        bind("/tmp/ralph-x/notes.sh"),
        {"Type": "volume", "Source": "/tmp/ralph-x/credentials-v.sh", "RW": False},
    ]
    assert credentials.mounted(mounts) == [Path("/tmp/ralph-x/credentials-ab.sh")]

"""Interactive mode through a real pseudo-terminal: keys reach the agent, the terminal is
restored exactly, and a ding file plays the sound command."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import IMAGE_TTY_AGENT, loop_containers

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

AGENT = Path(__file__).parent / "agents" / "tty_agent.py"
RESUMING = b"its resume command cannot find it"
WaitFor = Callable[..., None]


def read_until(fd: int, token: bytes, timeout: float = 60) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while token not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"no {token!r} from the terminal; got {seen!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:  # EIO: every slave end closed
                break
            if not data:
                break
            seen += data
    return seen


def _make_controlling_tty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """ralph started on the slave side of a fresh pty, as a user's shell would."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        self.master, self.slave = pty.openpty()
        set_size(self.master, 30, 100)
        self.before = termios.tcgetattr(self.slave)
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
            start_new_session=True,
            preexec_fn=_make_controlling_tty,
        )

    def close(self) -> None:
        if self.proc.poll() is None:  # a failed test: let ralph clean up its container
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def tty_agent(project: Path) -> Path:
    """The terminal-driving fake agent, copied into the project (a container sees it too)."""
    agent = project / "tty_agent.py"
    shutil.copy(AGENT, agent)
    return agent


@pytest.fixture
def terminal(
    project: Path, ralph_env: dict[str, str], tmp_path: Path
) -> Iterator[Callable[..., Terminal]]:
    opened: list[Terminal] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Terminal:
        full = {
            **ralph_env,
            "RALPH_DING_COMMAND": f"touch {tmp_path / 'dinged'}",
            "TERM": "xterm-256color",
            **(env or {}),
        }
        term = Terminal([sys.executable, "-m", "ralph", *args], cwd=project, env=full)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()


def set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def resized(term: Terminal, rows: int, cols: int) -> bool:
    """Resize the terminal; ask the agent for its size until it sees the new one."""
    set_size(term.master, rows, cols)  # the kernel sends SIGWINCH to the foreground group
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        os.write(term.master, b"s")
        if f"SIZE:{rows}x{cols}".encode() in read_until(term.master, b"SIZE:", timeout=20):
            return True
        time.sleep(0.05)  # the resize travels through docker asynchronously: ask again
    return False


def docker_without_sigwinch(directory: Path) -> dict[str, str]:
    """A `docker` on PATH that runs the real client in its own session: the kernel's SIGWINCH
    for a resize never reaches it, as when a resize lands before the client watches for one."""
    directory.mkdir()
    shim = directory / "docker"
    shim.write_text(f'#!/bin/sh\nexec setsid --wait {shutil.which("docker")} "$@"\n')
    shim.chmod(0o755)
    return {"PATH": f"{directory}{os.pathsep}{os.environ['PATH']}"}


def drive(term: Terminal, resize: tuple[int, int] | None = None) -> bytes:
    seen = read_until(term.master, b"READY")
    if resize is not None:
        assert resized(term, *resize)
    os.write(term.master, b"hello\x03q")
    seen += read_until(term.master, b"BYE")
    term.proc.wait(timeout=60)
    return seen + drain(term.master)


def drain(fd: int) -> bytes:
    """What ralph wrote after the agent's last line (it has exited: nothing more comes)."""
    rest = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        rest += data
    return rest


def test_keys_reach_the_agent_and_the_terminal_is_restored(
    terminal: Callable[..., Terminal], tty_agent: Path, project: Path, tmp_path: Path
) -> None:
    (project / "prompt.md").write_text("x" * 300_000)
    term = terminal("--sandbox", "none", "--command", str(tty_agent), "1", "--", "--model", "opus")
    seen = drive(term, resize=(45, 120))
    assert term.proc.returncode == 2, seen
    assert b"GOT:b'hello\\x03q'" in seen  # Ctrl+C went to the agent, not to ralph
    # the prompt is copied into the run's folder, which the agent sees wherever it works
    assert b'ARGV:["--dangerously-skip-permissions", "--model", "opus", "Read @' in seen
    assert b'/prompt.md and follow its instructions."]' in seen
    assert b"PROMPT:300000" in seen
    assert termios.tcgetattr(term.slave) == term.before
    assert (tmp_path / "dinged").exists()
    assert not (project / ".ralph-ding").exists()


def test_inline_prompt_is_written_to_a_file_for_the_agent(
    terminal: Callable[..., Terminal], tty_agent: Path
) -> None:
    term = terminal("--sandbox", "none", "--command", str(tty_agent), "1", "do the thing")
    seen = drive(term)
    assert b"PROMPT:12" in seen
    assert termios.tcgetattr(term.slave) == term.before


def test_bell_rings_when_no_sound_player_is_set(
    terminal: Callable[..., Terminal], tty_agent: Path
) -> None:
    term = terminal(
        "--sandbox",
        "none",
        "--command",
        str(tty_agent),
        "1",
        "go on",
        env={"RALPH_DING_COMMAND": "", "PATH": "/usr/bin:/bin"},
    )
    seen = drive(term)
    assert term.proc.returncode == 2
    assert b"\a" in seen.split(b"GOT:")[1]  # rung when the ding file appeared


def test_the_sentinel_ends_an_interactive_session_nobody_quits(
    terminal: Callable[..., Terminal], tty_agent: Path, project: Path
) -> None:
    """The agent cannot quit Claude Code; its sentinel ends the session for it."""
    term = terminal(
        "--sandbox", "none", "--command", str(tty_agent), "3", "go on",
        env={"TTY_AGENT_COMPLETE": "1", "RALPH_SENTINEL_GRACE": "0.5"},
    )  # fmt: skip
    seen = read_until(term.master, b"WROTE SENTINEL")
    started = time.monotonic()
    assert term.proc.wait(timeout=30) == 0, seen
    assert time.monotonic() - started >= 0.4  # the grace let its last words show
    seen += read_until(term.master, b"complete after 1 iteration", timeout=10)
    assert b"complete after 1 iteration" in seen
    assert RESUMING not in seen  # the agent finished: nothing to resume
    assert termios.tcgetattr(term.slave) == term.before
    assert not (project / ".ralph-complete").exists()


def test_a_session_the_user_quits_is_followed_by_what_works_instead_of_resuming(
    terminal: Callable[..., Terminal], tty_agent: Path
) -> None:
    """Claude Code's parting `claude --resume ...` names a session in the run's HOME, which
    goes with the run: the line below it says what works instead."""
    term = terminal("--sandbox", "none", "--command", str(tty_agent), "1", "go on")
    seen = drive(term)  # everything ralph wrote, to its totals
    assert b"totals:" in seen, seen
    after = seen[seen.index(b"BYE") :]
    assert RESUMING in after, after
    assert after.index(RESUMING) < after.index(b"Iteration 1 done")


def test_sigterm_in_interactive_mode_stops_the_agent_and_exits_130(
    terminal: Callable[..., Terminal], tty_agent: Path
) -> None:
    term = terminal("--sandbox", "none", "--command", str(tty_agent), "1", "go on")
    read_until(term.master, b"READY")
    term.proc.terminate()
    assert term.proc.wait(timeout=30) == 130
    assert termios.tcgetattr(term.slave) == term.before


@pytest.mark.docker
@pytest.mark.parametrize("token", [None, "sk-ant-oat-tty-test-789"])
def test_interactive_in_a_container_gets_a_real_tty(
    terminal: Callable[..., Terminal],
    project: Path,
    agent_image: str,
    tmp_path: Path,
    token: str | None,
) -> None:
    (project / "prompt.md").write_text("y" * 1000)
    term = terminal(
        "--sandbox",
        "docker",
        "--template",
        agent_image,
        "--loop-id",
        f"tty-{os.getpid()}",
        "--command",
        IMAGE_TTY_AGENT,
        "1",
        env={"CLAUDE_CODE_OAUTH_TOKEN": token} if token else {"CLAUDE_CODE_OAUTH_TOKEN": ""},
    )
    seen = drive(term, resize=(50, 132))
    assert term.proc.returncode == 2, seen
    assert b"GOT:b'hello\\x03q'" in seen
    assert b"PROMPT:1000" in seen
    assert b"TERM:xterm-256color" in seen
    if token is None:
        assert b"TOKEN:None" in seen
    else:  # a placeholder of the token's kind: the token itself stays with the key proxy
        assert b"TOKEN:sk-ant-oat-ralph-placeholder-" in seen
        assert token.encode() not in seen
    assert termios.tcgetattr(term.slave) == term.before
    assert (tmp_path / "dinged").exists()
    assert loop_containers(f"tty-{os.getpid()}") == []


def afk_on_terminal(project: Path, env: dict[str, str], steps: str) -> bytes:
    term = Terminal([sys.executable, "-m", "ralph", "-a", "1", steps], cwd=project, env=env)
    try:
        seen = read_until(term.master, b"max iterations")
        assert term.proc.wait(timeout=30) == 2
        return seen
    finally:
        term.close()


def test_afk_on_a_terminal_is_styled_and_the_agent_never_gets_the_terminal(
    project: Path, ralph_env: dict[str, str], script: Callable[..., str]
) -> None:
    steps = script(default=[["tty"], ["tool", "Bash", {"command": "ls"}], ["result"]])
    seen = afk_on_terminal(project, ralph_env, steps)
    assert b"\x1b[" in seen
    assert b"stdin tty: False, controlling tty: False" in seen


def test_no_color_keeps_a_terminal_plain(
    project: Path, ralph_env: dict[str, str], script: Callable[..., str]
) -> None:
    steps = script(default=[["tool", "Bash", {"command": "ls"}], ["result"]])
    seen = afk_on_terminal(project, {**ralph_env, "NO_COLOR": "1"}, steps)
    assert b"-> Bash(ls)" in seen
    assert b"\x1b[" not in seen


def test_usage_limit_countdown_is_rewritten_in_place_on_a_terminal(
    project: Path, ralph_env: dict[str, str], script: Callable[..., str]
) -> None:
    steps = script(
        _1=[["rate_limit", {"status": "rejected", "resets_in": 2.5}], ["result"]],
        default=[["result"]],
    )
    seen = afk_on_terminal(project, ralph_env, steps)
    assert b"\r\x1b[2Kwaiting" in seen
    assert b"retrying the same iteration" in seen


@pytest.mark.docker
def test_a_resize_the_docker_client_misses_still_reaches_the_agent(
    terminal: Callable[..., Terminal],
    project: Path,
    agent_image: str,
    tmp_path: Path,
) -> None:
    """The docker client forwards SIGWINCH only once it watches for it, after the container
    starts; ralph follows the terminal's size itself, so no resize is lost in that window."""
    term = terminal(
        "--sandbox", "docker", "--template", agent_image, "--loop-id", f"tty-miss-{os.getpid()}",
        "--command", IMAGE_TTY_AGENT, "1", "go on",
        env={"CLAUDE_CODE_OAUTH_TOKEN": "", **docker_without_sigwinch(tmp_path / "shim")},
    )  # fmt: skip
    seen = drive(term, resize=(41, 97))
    assert term.proc.returncode == 2, seen
    assert termios.tcgetattr(term.slave) == term.before
    assert loop_containers(f"tty-miss-{os.getpid()}") == []

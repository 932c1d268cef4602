"""The one door to the OS: running programs, pumping an agent's pipes, signals, stopping.

Nothing else in ralph imports `subprocess` or `signal`. Agents run in their own session with
their stdin fed from ralph and closed (never the user's terminal); their output is pumped by
one select() loop on the main thread, so no reader threads leak (upstream's "shell death").
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import TypeAlias

from pensa.shared import process

from ralph.errors import AgentNotFound, CommandFailed

log = logging.getLogger(__name__)

Output: TypeAlias = "Generator[bytes | None, None, None]"
LADDER = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Completed:
    """A finished helper program."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float | None = 300.0,
    stdin: int | None = None,
) -> Completed:
    """Run a helper program to completion (stdin: a descriptor, else none); raise if `check`."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as e:
        raise CommandFailed(list(argv), 127, str(e)) from e
    except subprocess.TimeoutExpired as e:
        raise CommandFailed(list(argv), -1, f"timed out after {timeout} s") from e
    result = Completed(tuple(argv), done.returncode, done.stdout, done.stderr)
    if check and not result.ok:
        raise CommandFailed(argv, result.returncode, result.stderr, result.stdout)
    return result


def start_sharing_terminal(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None
) -> subprocess.Popen[bytes]:
    """Start an interactive child in ralph's process group, on ralph's terminal.

    Raises FileNotFoundError or PermissionError when `argv[0]` cannot be run.
    """
    return subprocess.Popen(list(argv), cwd=cwd, env=None if env is None else dict(env))


def stop_by_ladder(
    popen: subprocess.Popen[bytes], *, grace: float, signaller: Signaller | None = None
) -> None:
    """SIGINT, then SIGTERM, then SIGKILL, `grace` seconds apart, until `popen` has exited.

    `signaller` also receives each signal (a container's agent is not ralph's child)."""
    for sig in LADDER:
        if signaller is not None:
            signaller(sig)
        with contextlib.suppress(ProcessLookupError):
            popen.send_signal(sig)
        try:
            popen.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            log.warning("agent %d ignored %s", popen.pid, sig.name)


class Interrupts:
    """SIGINT, SIGTERM and SIGHUP are recorded, not raised, and wake a pipe that select()
    watches: every way of being told to stop takes the same ending path as Ctrl+C (the agent
    stopped, the container removed, the credentials file deleted).

    SIGCHLD wakes the same pipe, so waiting for a child needs no polling sleeps.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self._fds: tuple[int, int] | None = None
        self._old: dict[int, object] = {}
        self._old_wakeup = -1

    def __enter__(self) -> Interrupts:
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        self._fds = (r, w)
        self._old_wakeup = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old[sig] = signal.signal(sig, self._record)
        self._old[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, self._ignore)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]  # as signal.signal returned it
        self._old.clear()
        signal.set_wakeup_fd(self._old_wakeup)
        if self._fds:
            for fd in self._fds:
                os.close(fd)
            self._fds = None

    def _record(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum

    def _ignore(self, signum: int, frame: FrameType | None) -> None:
        pass

    @property
    def fired(self) -> bool:
        return self.signum is not None

    def fileno(self) -> int:
        assert self._fds is not None, "Interrupts used outside its with-block"
        return self._fds[0]

    def drain(self) -> None:
        """Empty the wake-up pipe."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self.fileno(), 512):
                pass

    def wait(self, seconds: float) -> bool:
        """Block until any signal (SIGCHLD included) arrives or `seconds` pass.

        Returns True when interrupted (SIGINT/SIGTERM).
        """
        with selectors.DefaultSelector() as sel:
            sel.register(self.fileno(), selectors.EVENT_READ)
            if not self.fired and sel.select(max(seconds, 0.0)):
                self.drain()
        return self.fired

    def sleep(self, seconds: float) -> bool:
        """Wait `seconds` unless interrupted first; True when interrupted."""
        deadline = time.monotonic() + seconds
        while not self.fired and (left := deadline - time.monotonic()) > 0:
            self.wait(left)
        return self.fired


Signaller = Callable[[signal.Signals], None]


class Child:
    """An agent process in its own session, with its stdin fed from `stdin` and then closed."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        stdin: bytes,
        signaller: Signaller | None = None,
    ) -> None:
        try:
            self.popen = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=None if env is None else {**env, "PWD": str(cwd)},  # opencode works in $PWD
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # no terminal signals, cannot grab the tty (`setsid`)
            )
        except (FileNotFoundError, PermissionError) as e:
            raise AgentNotFound(argv[0]) from e
        self._stdin = memoryview(stdin)
        self._signaller = signaller

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(
        self,
        interrupts: Interrupts,
        timeout: Callable[[], float],
        on_stderr: Callable[[bytes], None],
    ) -> Output:
        """Yield stdout chunks as they come; yield None when `timeout()` passes with no output
        or a signal arrived (the caller decides whether to stop); end at EOF on both pipes."""
        assert self.popen.stdout is not None
        assert self.popen.stderr is not None
        assert self.popen.stdin is not None
        streams = {self.popen.stdout.fileno(): True, self.popen.stderr.fileno(): False}
        with selectors.DefaultSelector() as sel:
            for fd in streams:
                sel.register(fd, selectors.EVENT_READ)
            sel.register(interrupts.fileno(), selectors.EVENT_READ)
            stdin_fd = self.popen.stdin.fileno()
            if self._stdin:
                os.set_blocking(stdin_fd, False)
                sel.register(stdin_fd, selectors.EVENT_WRITE)
            else:
                self.popen.stdin.close()
            while streams:
                if interrupts.fired:
                    yield None
                    continue
                ready = sel.select(max(timeout(), 0.0))
                if not ready:
                    yield None
                    continue
                for key, _ in ready:
                    fd = key.fd
                    if fd == interrupts.fileno():
                        interrupts.drain()
                    elif fd == stdin_fd:
                        if self._feed(stdin_fd):
                            sel.unregister(stdin_fd)
                            self.popen.stdin.close()
                    else:
                        data = os.read(fd, _CHUNK)
                        if not data:
                            sel.unregister(fd)
                            del streams[fd]
                        elif streams[fd]:
                            yield data
                        else:
                            on_stderr(data)
        if not self.popen.stdin.closed:
            self.popen.stdin.close()

    def _feed(self, fd: int) -> bool:
        """Write what the pipe takes; True when the prompt is all written (or unwanted)."""
        try:
            written = os.write(fd, self._stdin[:_CHUNK])
        except BlockingIOError:
            return False
        except BrokenPipeError:  # the agent closed its stdin without reading it all
            return True
        self._stdin = self._stdin[written:]
        return not self._stdin

    def _signal(self, sig: signal.Signals) -> None:
        if self._signaller is not None:
            self._signaller(sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self._signaller is None or sig == signal.SIGKILL:
                os.killpg(self.popen.pid, sig)

    def stop(self, *, grace: float) -> int:
        """SIGINT, then SIGTERM, then SIGKILL, `grace` seconds apart, each step logged."""
        for sig in LADDER:
            if self.popen.poll() is not None:
                break
            self._signal(sig)
            try:
                return self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                log.warning("agent %d ignored %s", self.popen.pid, sig.name)
        return self.popen.wait()

    def close(self, *, grace: float) -> int:
        """Give the agent `grace` s to exit by itself, then the stop ladder; then kill what is
        left of its process group and close every pipe. Idempotent."""
        try:
            status = self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            status = self.stop(grace=grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)  # grandchildren holding our pipes
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        self.popen.wait()
        return status


class Players:
    """Short-lived sound players: started detached from our stdio, always reaped."""

    def __init__(self) -> None:
        self._running: list[subprocess.Popen[bytes]] = []

    def start(self, argv: Sequence[str]) -> None:
        """Start `argv` quietly; a missing player is logged, never fatal."""
        self.reap()
        try:
            self._running.append(
                subprocess.Popen(
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        except OSError as e:
            log.warning("cannot play a sound with %s: %s", argv[0], e)

    def reap(self) -> None:
        """Forget players that have finished (they are waited for)."""
        self._running = [p for p in self._running if p.poll() is None]

    def close(self, *, grace: float = 2.0) -> None:
        """Give running players `grace` seconds, then kill them; reap all."""
        for p in self._running:
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self._running.clear()


def which(name: str) -> str | None:
    """The full path of program `name` on PATH, or None."""
    import shutil

    return shutil.which(name)


def kill_group(pgid: int, *, grace: float = 2.0) -> None:
    """SIGTERM to a process group, then SIGKILL if it is still there after `grace`."""
    import time

    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)  # a group we cannot wait() for: it is not our child


def is_alive(pid: int) -> bool:
    """Whether process `pid` exists and is no zombie (`pensa.shared.process`, the one rule)."""
    return process.alive(pid)

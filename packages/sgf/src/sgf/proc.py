"""The one door to other programs: run-and-capture, liveness checks, and running ralph teed.

Nothing else in sgf imports subprocess or signal. `run()` never hands the user's terminal to
the child; `run_teed()` is for ralph only, whose output must reach the terminal and a log.
"""

# Stays whole: the one door to other programs; every signal, process-group and pty rule
# sgf applies to a child is in this file, so none can be forgotten by a second door.

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import NamedTuple, Protocol

from pensa.shared import process

from sgf import safefile
from sgf.errors import CommandFailed, ProgramMissing

log = logging.getLogger(__name__)

# Signals sgf forwards to ralph when they are sent to sgf itself (kill, a closing terminal).
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Repeated signals climb this ladder: the first is passed on as is, then SIGTERM, then SIGKILL.
LADDER = (signal.SIGTERM, signal.SIGKILL)


class Result(NamedTuple):
    """What a finished program left: exit code and its captured output."""

    returncode: int
    stdout: str
    stderr: str


def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float | None = 600,
) -> Result:
    """Run a program to completion with stdin closed; raise CommandFailed when `check`."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as e:
        raise ProgramMissing(argv[0], "is it installed and on PATH?") from e
    except subprocess.TimeoutExpired as e:
        raise CommandFailed(argv, -1, f"timed out after {timeout} s") from e
    result = Result(done.returncode, done.stdout, done.stderr)
    if check and done.returncode != 0:
        raise CommandFailed(argv, done.returncode, done.stderr, done.stdout)
    return result


def which(program: str, env: Mapping[str, str]) -> str | None:
    """Find `program` on env's PATH."""
    return shutil.which(program, path=env.get("PATH"))


def pid_alive(pid: int) -> bool:
    """Tell whether a process with this PID exists and is no zombie (`pensa.shared.process`)."""
    return process.alive(pid)


def exit_code(status: int) -> int:
    """Turn a wait status into a shell-style exit code (128+N for a signal)."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


@contextlib.contextmanager
def forwarding(
    target: Callable[[signal.Signals], None], *, terminal_delivers_sigint: bool = False
) -> Iterator[None]:
    """While active, pass SIGINT/SIGTERM/SIGHUP sent to sgf on to `target`, climbing a ladder.

    The first signal is forwarded as it came; each repeat escalates (SIGTERM, then SIGKILL),
    so ralph gets one clean request to stop and a stuck ralph can still be ended. When ralph
    shares sgf's foreground process group, the terminal's Ctrl+C reaches ralph by itself, so
    SIGINT is not forwarded (ralph must get it once, not twice).
    """
    count = 0

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal count
        if terminal_delivers_sigint and signum == signal.SIGINT:
            log.info("SIGINT: ralph got it from the terminal too")
            return
        sig = signal.Signals(signum) if count == 0 else LADDER[min(count - 1, len(LADDER) - 1)]
        count += 1
        log.info("forwarding %s to ralph", sig.name)
        target(sig)

    # A Python handler, never SIG_IGN: an ignored SIGINT would be inherited by ralph.
    previous = {sig: signal.signal(sig, handler) for sig in FORWARDED}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def spawn_on_pty(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> tuple[int, int]:
    """Start `argv` on a new pseudo-terminal as a session leader; its pid and the master fd.

    The child dies with sgf (die_with_parent); a program that cannot run exits 127."""
    import pty

    pid, master = pty.fork()
    if pid == 0:  # pragma: no cover - the child only execs
        try:
            die_with_parent()
            os.chdir(cwd)
            os.execvpe(argv[0], list(argv), dict(env))  # noqa: S606 - argv list, no shell
        finally:
            os._exit(127)
    return pid, master


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to a process group that may be gone already."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def wait_for(pid: int) -> int:
    """Wait for child `pid`; its shell-style exit code."""
    _, status = os.waitpid(pid, 0)
    return exit_code(status)


def die_with_parent() -> None:
    """In a child before exec: ask Linux to send SIGTERM when sgf dies (even by SIGKILL).

    Without it a killed sgf would leave ralph running as an orphan, and the next launch
    would take the orphan's loop for a crashed one. Elsewhere this is a no-op.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))


class Sink(Protocol):
    """Where teed output goes: a binary file, or a filter such as plainlog.PlainLog."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


def run_teed(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    sinks: Sequence[Sink],
    foreground: bool = False,
) -> int:
    """Run ralph, copying its output to every sink; return its exit code.

    stdin is inherited (an interactive ralph without a terminal still reads it). Normally
    ralph gets its own process group and signals sent to sgf are forwarded to it. With
    `foreground` (stdin is our terminal) ralph stays in sgf's process group, because a
    background group that touches the terminal is stopped by SIGTTIN/SIGTTOU; Ctrl+C then
    reaches ralph from the terminal and sgf only forwards SIGTERM and SIGHUP.
    """
    try:
        child = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            process_group=None if foreground else 0,
            preexec_fn=die_with_parent,  # sgf is single-threaded: preexec_fn is safe here
        )
    except FileNotFoundError as e:
        raise ProgramMissing(argv[0], "set SGF_RALPH or put ralph on PATH") from e

    def send(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            if foreground:
                os.kill(child.pid, sig)
            else:
                os.killpg(child.pid, sig)

    assert child.stdout is not None
    fd = child.stdout.fileno()
    with forwarding(send, terminal_delivers_sigint=foreground), child.stdout:
        while chunk := os.read(fd, 65536):
            for sink in sinks:
                sink.write(chunk)
                sink.flush()
        returncode = child.wait()
    return 128 - returncode if returncode < 0 else returncode


def children(pid: int) -> list[int]:
    """The PIDs of process `pid`'s children (from /proc); none where there is no /proc."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(n) for n in f.read().split()]
    except (OSError, ValueError):
        pass
    found = []
    for entry in Path("/proc").glob("[0-9]*"):  # kernels without the children file
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid).encode():
            found.append(int(entry.name))
    return found


def interrupt_like_ctrl_c(pid: int) -> list[int]:
    """Interrupt a running loop's sgf the way Ctrl+C in its terminal would; the PIDs signalled.

    sgf forwards SIGINT to a ralph in a process group of its own. A ralph that shares sgf's
    group (sgf ran with its stdin on a terminal) is meant to get Ctrl+C from the terminal,
    so sgf does not forward it; it gets its SIGINT here, directly and once. Never the whole
    group: sgf's group may be a test runner's or a script's."""
    os.kill(pid, signal.SIGINT)
    signalled = [pid]
    with contextlib.suppress(ProcessLookupError):
        group = os.getpgid(pid)
        for child in children(pid):
            with contextlib.suppress(ProcessLookupError):
                if os.getpgid(child) == group:
                    os.kill(child, signal.SIGINT)
                    signalled.append(child)
    return signalled


def spawn_detached(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    output: Path,
    append: bool = False,
) -> subprocess.Popen[bytes]:
    """Start a program that outlives us (its own session, stdin closed), its stdout and
    stderr in `output` (added to its end when `append`); the caller may poll it while it
    runs."""
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        opener = safefile.append if append else safefile.truncate
        with opener(output, root=output.parent) as out:
            return subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    except FileNotFoundError as e:
        raise ProgramMissing(argv[0], "is it installed and on PATH?") from e


class Job(NamedTuple):
    """One of several ralphs run side by side: its command, and where its output goes."""

    argv: Sequence[str]
    cwd: Path
    env: Mapping[str, str]
    log: Sink  # the loop's own log: its output as is
    label: bytes  # prefixed to each of its lines on the shared terminal


def run_many(
    jobs: Sequence[Job], *, out: Sink, tick: Callable[[], bool] | None = None
) -> list[int]:
    """Run ralphs side by side until all have exited; return their exit codes, in order.

    Each gets its own process group and no stdin (they run AFK); their output goes to their
    logs as is and to `out` in whole lines, each prefixed with its label. Signals sent to sgf
    (Ctrl+C on the terminal reaches only sgf: the ralphs are in groups of their own) are
    forwarded to every ralph still running, climbing the same ladder as `run_teed`. `tick`
    is called about once a second while they run (a group budget's look at the records),
    until it returns False.
    """
    import selectors

    children: list[subprocess.Popen[bytes]] = []
    try:
        for job in jobs:
            children.append(
                subprocess.Popen(
                    list(job.argv),
                    cwd=job.cwd,
                    env=dict(job.env),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    process_group=0,
                    preexec_fn=die_with_parent,  # sgf is single-threaded: safe here
                )
            )
    except FileNotFoundError as e:
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)
            child.wait()
        raise ProgramMissing(jobs[0].argv[0], "set SGF_RALPH or put ralph on PATH") from e

    def send(sig: signal.Signals) -> None:
        for child in children:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, sig)

    pending = [b""] * len(children)
    with forwarding(send), selectors.DefaultSelector() as selector:
        for index, child in enumerate(children):
            assert child.stdout is not None
            selector.register(child.stdout, selectors.EVENT_READ, index)
        ticked = 0.0
        while selector.get_map():
            # once a second however chatty the ralphs are: a tick may read every record
            if tick is not None and time.monotonic() - ticked >= 1.0:
                ticked = time.monotonic()
                if not tick():
                    tick = None
            for key, _ in selector.select(timeout=None if tick is None else 1.0):
                index = key.data
                chunk = os.read(key.fd, 65536)
                job = jobs[index]
                if not chunk:
                    selector.unregister(key.fileobj)
                    if pending[index]:
                        out.write(job.label + pending[index] + b"\n")
                        out.flush()
                    continue
                job.log.write(chunk)
                job.log.flush()
                *lines, pending[index] = (pending[index] + chunk).split(b"\n")
                for line in lines:
                    out.write(job.label + line + b"\n")
                out.flush()
        codes = [child.wait() for child in children]
    for child in children:
        if child.stdout is not None:
            child.stdout.close()
    return [128 - code if code < 0 else code for code in codes]


def feed(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None, data: bytes, timeout: float
) -> int | None:
    """Run a program with `data` on its stdin and our stdout and stderr; its exit status, or
    None when it outlived `timeout` and its whole process group was killed."""
    try:
        child = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as e:
        raise ProgramMissing(argv[0], "is it installed and on PATH?") from e
    try:
        child.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # `sh -c` and whatever it started
        child.wait()
        return None
    except BrokenPipeError:  # it did not read its stdin: its business
        child.wait()
    return child.returncode

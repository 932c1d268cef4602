"""The one door to git: small named functions over a single process runner.

It spawns git with `os.posix_spawnp` rather than `subprocess`: every write resolves the actor
through `git config user.name`, and importing `subprocess` costs more start-up than running
git does (STYLE.md: start-up is a feature).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from pensa.errors import GitFailed

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import IO


class Done(NamedTuple):
    """A finished git: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def run(args: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> Done:
    """Run `git -C cwd ARGS` with stdin from /dev/null and capture its output."""
    return start(args, cwd=cwd, env=env).wait()


def start(args: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> Started:
    """`run`, but return as soon as git is started: `wait()` collects it."""
    return spawn(["git", "-C", cwd, *args], env=env, missing="git not found")


def run_with_input(
    args: Sequence[str], data: bytes, *, cwd: str, env: Mapping[str, str]
) -> Started:
    """`run`, with `data` on git's stdin; the finished run (`raw_out` holds stdout's bytes).

    The input is handed over in a temporary file, not a pipe: git answers `cat-file --batch`
    while it reads, and a pipe written to the end first could fill both ways and hang."""
    import tempfile

    with tempfile.TemporaryFile() as stdin:
        stdin.write(data)
        stdin.seek(0)
        # megabytes of blobs: never decoded as one text
        argv = ["git", "-C", cwd, *args]
        started = spawn(argv, env=env, missing="git not found", stdin=stdin, text=False)
        started.wait()
    return started


def program(argv: Sequence[str], *, env: Mapping[str, str], missing: str) -> Done:
    """Run `argv` with stdin from /dev/null and capture its output (127 when not found)."""
    return spawn(argv, env=env, missing=missing).wait()


class Started:
    """A program started by `spawn`; `wait()` reads its output and reaps it, once.

    stdout is read to the end before stderr: the commands used here write at most a few
    lines to stderr, far below a pipe's buffer, so this cannot deadlock."""

    def __init__(self, pid: int, out_r: int, err_r: int, *, text: bool = True) -> None:
        self._pid, self._out_r, self._err_r = pid, out_r, err_r
        self._done: Done | None = None
        self._text = text  # False: stdout stays bytes only (`Done.out` is empty)
        self.raw_out = b""  # stdout as bytes, once `wait()` has read it

    @classmethod
    def finished(cls, done: Done) -> Started:
        """A program that never ran (not found), already answered."""
        started = cls(0, -1, -1)
        started._done = done
        return started

    def wait(self) -> Done:
        """Its exit code and output, waiting for it to end (again: the same answer)."""
        if self._done is None:
            try:
                out, err = _read_all(self._out_r), _read_all(self._err_r)
            finally:
                os.close(self._out_r)
                os.close(self._err_r)
                _, status = os.waitpid(self._pid, 0)
            self.raw_out = out
            self._done = Done(
                os.waitstatus_to_exitcode(status),
                out.decode(errors="replace") if self._text else "",
                err.decode(errors="replace"),
            )
        return self._done


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    missing: str,
    stdin: IO[bytes] | None = None,
    text: bool = True,
) -> Started:
    """Start `argv` with stdin from /dev/null (or the file `stdin`) and its output in pipes;
    not found, it is answered at once with exit code 127 and `missing`."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    source = os.dup(stdin.fileno()) if stdin is not None else os.open(os.devnull, os.O_RDONLY)
    try:
        pid = os.posix_spawnp(
            argv[0],
            list(argv),
            dict(env),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, source, 0),
                (os.POSIX_SPAWN_DUP2, out_w, 1),
                (os.POSIX_SPAWN_DUP2, err_w, 2),
            ],
        )
    except FileNotFoundError:  # e.g. no git installed: behave as outside a repository
        for fd in (out_r, out_w, err_r, err_w, source):
            os.close(fd)
        return Started.finished(Done(127, "", missing))
    for fd in (out_w, err_w, source):
        os.close(fd)
    return Started(pid, out_r, err_r, text=text)


def toplevel(cwd: str, env: Mapping[str, str]) -> str | None:
    """The work tree's top directory, or None outside a git repository."""
    done = run(["rev-parse", "--show-toplevel"], cwd=cwd, env=env)
    return done.out.strip() or None if done.code == 0 else None


def user_name_of(started: Started) -> str | None:
    """The answer of a started `git config user.name`: the name, or None when unset."""
    done = started.wait()
    return done.out.strip() or None if done.code == 0 else None


def add(paths: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> None:
    """Stage `paths` (in the index named by GIT_INDEX_FILE when git set one for a hook)."""
    done = run(["add", "--", *paths], cwd=cwd, env=env)
    if done.code != 0:
        raise GitFailed(f"git add failed ({done.code}): {done.err.strip()}")


def in_commit_hook(env: Mapping[str, str]) -> bool:
    """Whether we run as a pre-commit hook: the pre-commit framework sets PRE_COMMIT=1 and
    git sets GIT_INDEX_FILE for the hooks of `git commit`."""
    return env.get("PRE_COMMIT") == "1" or bool(env.get("GIT_INDEX_FILE"))

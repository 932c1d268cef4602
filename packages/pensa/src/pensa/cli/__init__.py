"""The `pn` command line: a thin click layer over pensa's library.

Errors are mapped once, here: every failure exits 1 (click's usage errors too, never 2) and
prints `{"error": ..., "code": ...}` on stderr when `--json` appears anywhere on the command
line, else `error: <message>`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

import click

from pensa.cli.base import Env, cli
from pensa.errors import PensaError
from pensa.render import dumps

if TYPE_CHECKING:
    from collections.abc import Sequence


def wants_json(argv: Sequence[str]) -> bool:
    """Whether `--json` was given before any `--`."""
    args = list(argv)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def fail(code: str, message: str, *, as_json: bool) -> int:
    """Report an error on stderr and return exit code 1."""
    if as_json:
        sys.stderr.write(dumps({"error": message, "code": code}) + "\n")
    else:
        from pensa.inert import inert

        sys.stderr.write(f"error: {inert(message)}\n")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run `pn` and return its exit code: 0 success, 1 any error, 130 interrupted.

    Called as the console script (no `argv`), it ends the process itself once the output is
    flushed and the database closed: the interpreter's teardown of every loaded module costs
    several ms that each `pn` call in an agent loop would otherwise pay (start-up and exit are
    a feature, STYLE.md)."""
    code = run(argv)
    if argv is None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    return code


def run(argv: Sequence[str] | None = None) -> int:
    """Parse, run the command, map errors to exit codes; the body of `main`."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = wants_json(args)
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    env = Env(cwd=os.getcwd(), environ=os.environ, as_json=as_json, color=color)
    try:
        result = cli.main(args=args, prog_name="pn", standalone_mode=False, obj=env)
        sys.stdout.flush()
    except PensaError as e:
        return fail(e.code, str(e), as_json=as_json)
    except click.ClickException as e:  # usage errors included: 1, never 2
        message = e.format_message()
        if isinstance(e, click.UsageError) and e.ctx is not None:
            message += f" (see `{e.ctx.command_path} --help`)"
        return fail("invalid_argument", message, as_json=as_json)
    except (click.Abort, KeyboardInterrupt):
        return 130
    except BrokenPipeError:
        # The reader went away (`pn list | head`): not worth a traceback. Point stdout at
        # /dev/null so the interpreter's final flush does not fail again (Python docs,
        # "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        env.close()
    return result if isinstance(result, int) else 0

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
from pensa.shared.console import undecodable

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def os_error(e: OSError) -> tuple[str, str]:
    """An operating-system error as pensa's (code, one-line message)."""
    import errno

    where = f" ({e.filename})" if e.filename else ""
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return "read_only", f"cannot write{where}: {e.strerror}; nothing was changed"
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "storage_error", f"the disk is full{where}: free some space and try again"
    return "storage_error", f"{e.strerror or e}{where}"


def wants_json(argv: Sequence[str]) -> bool:
    """Whether `--json` was given before any `--`."""
    args = list(argv)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def fail(code: str, message: str, *, as_json: bool) -> int:
    """Report an error on stderr and return exit code 1."""
    if as_json:
        sys.stderr.write(dumps({"error": message, "code": code}) + "\n")
    else:
        from pensa.shared.inert import inert

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
    bad = undecodable(args, os.environ, ("PN_ACTOR", "PN_DIR", "USER", "EDITOR"))
    if bad is not None:
        return fail("invalid_argument", bad, as_json=as_json)
    tty = sys.stdout.isatty()
    color = tty and not os.environ.get("NO_COLOR")
    env = Env(
        cwd=os.getcwd(),
        environ=os.environ,
        as_json=as_json,
        color=color,
        width=terminal_width(os.environ) if tty and not as_json else None,
    )
    try:
        result = cli.main(args=args, prog_name="pn", standalone_mode=False, obj=env)
        sys.stdout.flush()
        env.write_back()
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
    except OSError as e:  # a read-only mount, a full disk, a file in the way
        code, message = os_error(e)
        return fail(code, message, as_json=as_json)
    except RecursionError:  # pragma: no cover - JSON nesting is refused before parsing
        return fail("invalid_data", "input nested too deeply", as_json=as_json)
    except Exception as e:  # a bug: one line here, the traceback in a crash log
        from pensa import __version__
        from pensa.shared import crash

        return fail(
            "internal_error", crash.report(e, ["pn", *args], version=__version__), as_json=as_json
        )
    finally:
        env.close()
    return result if isinstance(result, int) else 0


def terminal_width(environ: Mapping[str, str]) -> int | None:
    """The terminal's width in columns: `COLUMNS` when set, else what the terminal says;
    None when it says nothing (a fresh pseudo-terminal reports 0 columns)."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except OSError:
        return None

"""Prompt assembly: render `.sgf/prompts/<stage>.md` into `.sgf/prompts/.assembled/<stage>.md`."""

from __future__ import annotations

import types
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sgf import safefile
from sgf.errors import PromptError
from sgf.loop import timelimit

if TYPE_CHECKING:
    import jinja2
    import jinja2.sandbox

PROMPTS = Path(".sgf") / "prompts"
ASSEMBLED = PROMPTS / ".assembled"
# An agent reads its whole prompt every iteration, and a template is data an agent can
# change through a commit: `{% for i in range(99999) %}{% for j in range(99999) %}` would
# otherwise write gigabytes, or render without end, at the next launch (docs/security.md).
MAX_BYTES = 1024 * 1024
TIME_BUDGET = 5.0  # seconds


class _TooBig(Exception):
    """The rendered text would pass MAX_BYTES."""


def _check_binop(operator: str, left: object, right: object) -> None:
    """Refuse `'x' * 10**9` and `10 ** 10 ** 10` before Python computes them: the time
    budget cannot interrupt one long operation in C."""
    if operator == "**" and isinstance(left, int) and isinstance(right, int):
        too_big = abs(left) > 1 and right * left.bit_length() > MAX_BYTES * 8
    elif operator == "*":
        seq, count = (left, right) if isinstance(right, int) else (right, left)
        too_big = (
            isinstance(seq, str | list | tuple)
            and isinstance(count, int)
            and len(seq) * count > MAX_BYTES
        )
    else:
        too_big = False
    if too_big:
        raise _TooBig


def _environment(root: Path) -> jinja2.sandbox.SandboxedEnvironment:
    import jinja2
    import jinja2.sandbox

    class Bounded(jinja2.sandbox.SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(
            self, context: jinja2.runtime.Context, operator: str, left: object, right: object
        ) -> object:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

    return Bounded(
        loader=jinja2.FileSystemLoader(root / PROMPTS),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # markdown for an agent, not HTML
    )


def _generate(template: jinja2.Template, variables: Mapping[str, object]) -> str:
    """The rendered text, counted as it streams: _TooBig as soon as it passes MAX_BYTES."""
    parts, size = [], 0
    for chunk in template.generate(**variables):
        size += len(chunk.encode(errors="surrogateescape"))
        if size > MAX_BYTES:
            raise _TooBig
        parts.append(chunk)
    return "".join(parts)


def _line_in(tb: types.TracebackType | None, filename: str) -> int | None:
    """Find the template line in a traceback (jinja2 rewrites frames to template lines)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render(
    root: Path, prompt: str, variables: Mapping[str, object], *, budget: float = TIME_BUDGET
) -> str:
    """Render the project's `<prompt>.md` template.

    Undefined variables are errors (StrictUndefined), reported with the file and line.
    """
    import jinja2
    import jinja2.sandbox

    source = root / PROMPTS / f"{prompt}.md"
    if not source.is_file():
        raise PromptError(f"{source.relative_to(root)} is missing; `sgf init` seeds it")
    # Prompt files are data a user (or an agent, through a commit) can change: rendered in
    # jinja2's sandbox, `{{ cycler.__init__.__globals__.os.popen('id').read() }}` is refused
    # instead of running on the host at the next launch.
    env = _environment(root)
    rel = source.relative_to(root)
    try:
        with timelimit.time_limit(budget):
            return _generate(env.get_template(source.name), variables)
    except _TooBig:
        raise PromptError(
            f"{rel}: the assembled prompt would pass {MAX_BYTES} bytes (1 MiB); nothing was written"
        ) from None
    except timelimit.TimeUp:
        raise PromptError(
            f"{rel}: rendering took over {budget:g} s (a loop without end?); nothing was written"
        ) from None
    except (OverflowError, RecursionError, MemoryError) as e:  # range(10**8), a macro loop
        line = _line_in(e.__traceback__, str(source))
        where = f"{rel}:{line}" if line else str(rel)
        detail = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PromptError(f"{where}: {detail}; nothing was written") from e
    except jinja2.TemplateSyntaxError as e:
        raise PromptError(f"{rel}:{e.lineno}: {e.message}") from e
    except jinja2.exceptions.SecurityError as e:
        line = _line_in(e.__traceback__, str(source))
        where = f"{rel}:{line}" if line else str(rel)
        raise PromptError(f"{where}: unsafe template refused ({e}); nothing was run") from e
    except jinja2.UndefinedError as e:
        line = _line_in(e.__traceback__, str(source))
        where = f"{rel}:{line}" if line else str(rel)
        known = ", ".join(sorted(variables))
        raise PromptError(f"{where}: {e.message} (variables: {known})") from e
    except jinja2.TemplateError as e:  # e.g. {% include %} of a missing file
        line = _line_in(e.__traceback__, str(source))
        where = f"{rel}:{line}" if line else str(rel)
        what = (
            f"no template {e.name!r} in {PROMPTS}" if isinstance(e, jinja2.TemplateNotFound) else e
        )
        raise PromptError(f"{where}: {what}") from e
    except UnicodeDecodeError as e:  # the template, or a file it includes
        raise PromptError(f"{rel}: not UTF-8 text ({e.reason} at byte {e.start})") from e


def assembled(root: Path, prompt: str) -> Path:
    """Where the assembled prompt for `prompt` lives."""
    return root / ASSEMBLED / f"{prompt}.md"


def write(root: Path, prompt: str, text: str) -> Path:
    """Write an assembled prompt atomically (a running ralph never reads half a file)."""
    target = assembled(root, prompt)
    try:
        safefile.replace(target, text.encode(), root=root)
    except OSError as e:  # e.g. a file where the .assembled folder belongs
        rel = target.relative_to(root)
        raise PromptError(f"cannot write {rel}: {e.strerror or e}") from e
    return target


def assemble(
    root: Path, prompt: str, variables: Mapping[str, object], *, budget: float = TIME_BUDGET
) -> Path:
    """Render `.sgf/prompts/<prompt>.md` into `.sgf/prompts/.assembled/<prompt>.md`."""
    return write(root, prompt, render(root, prompt, variables, budget=budget))

"""Prompt assembly: render `.sgf/prompts/<stage>.md` into `.sgf/prompts/.assembled/<stage>.md`."""

from __future__ import annotations

import types
from collections.abc import Mapping
from pathlib import Path

from sgf import safefile
from sgf.errors import PromptError

PROMPTS = Path(".sgf") / "prompts"
ASSEMBLED = PROMPTS / ".assembled"


def _line_in(tb: types.TracebackType | None, filename: str) -> int | None:
    """Find the template line in a traceback (jinja2 rewrites frames to template lines)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render(root: Path, prompt: str, variables: Mapping[str, object]) -> str:
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
    # instead of running on the host at the next launch (issue 9).
    env = jinja2.sandbox.SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(root / PROMPTS),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # markdown for an agent, not HTML
    )
    rel = source.relative_to(root)
    try:
        return env.get_template(source.name).render(**variables)
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


def assemble(root: Path, prompt: str, variables: Mapping[str, object]) -> Path:
    """Render `.sgf/prompts/<prompt>.md` into `.sgf/prompts/.assembled/<prompt>.md`."""
    return write(root, prompt, render(root, prompt, variables))

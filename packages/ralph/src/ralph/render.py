"""Everything ralph prints: rich styling on a terminal, plain when piped or NO_COLOR is set,
and an always-plain copy in the --log-file."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from pensa.shared.inert import inert

from ralph import format
from ralph.stream import ApiRetry, Event, Result, Text, ToolError, ToolUse

if TYPE_CHECKING:
    from rich.console import Console

RULE = "=" * 60


class Output:
    """Writes the loop's transcript to stdout (styled or plain) and to an optional log."""

    def __init__(
        self, stdout: TextIO, stderr: TextIO, *, styled: bool, log: TextIO | None = None
    ) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._log = log
        self._dead = False  # stdout closed under us (sgf gone): keep running, keep logging
        self._console: Console | None = None
        if styled:
            from rich.console import Console

            self._console = Console(
                file=stdout, force_terminal=True, highlight=False, soft_wrap=True
            )

    def _emit(self, text: str, style: str = "", *, end: str = "\n") -> None:
        text = inert(text, multiline=True)  # everything ralph prints may quote the model or a tool
        if self._log is not None:
            self._log.write(text + end)
            self._log.flush()
        if self._dead:
            return
        try:
            if self._console is not None:
                self._console.print(text, style=style or None, end=end, markup=False)
            else:
                self._stdout.write(text + end)
            self._stdout.flush()
        except (BrokenPipeError, ValueError):  # a closed pipe, or a closed file
            self._dead = True

    def banner(self, index: int, total: int, loop_id: str) -> None:
        """`Iteration 3 of 10 [build-20260226T143000]` between two rules."""
        self._emit(RULE, "dim")
        self._emit(f"Iteration {index} of {total} [{loop_id}]", "bold")
        self._emit(RULE, "dim")

    def text(self, text: str) -> None:
        """Assistant text, as is."""
        self._emit(text)

    def event(self, event: Event, *, root: Path | None = None) -> None:
        """One stream event as AFK mode shows it (rate-limit events are the loop's business)."""
        if isinstance(event, Text):
            self.text(event.text)
        elif isinstance(event, ToolUse):
            self.tool(format.tool_line(event.name, event.input, root=root))
        elif isinstance(event, ToolError):
            self.tool_error(format.error_line(event.text))
        elif isinstance(event, ApiRetry):
            why = ", ".join(str(x) for x in (event.error, event.status) if x)
            why = format.cut(why, format.ERROR_WIDTH)
            self.note(f"   ~ API retry {event.attempt or '?'}" + (f" ({why})" if why else ""))
        elif isinstance(event, Result) and (event.is_error or event.subtype != "success"):
            detail = format.cut(event.text or "; ".join(event.errors) or event.subtype, 200)
            # a run without a tool call is ralph's verdict (agents/common.py), not the agent's
            self.warning(detail if event.nothing_done else f"agent reported an error: {detail}")

    def tool(self, line: str) -> None:
        """A tool call one-liner."""
        self._emit(line, "cyan")

    def tool_error(self, line: str) -> None:
        """A tool error one-liner."""
        self._emit(line, "red")

    def summary(self, line: str) -> None:
        """An iteration summary or the loop's final word."""
        self._emit(line, "bold green")

    def note(self, line: str) -> None:
        """Something ralph did (pushing, waiting, clean-up)."""
        self._emit(line, "dim")

    def warning(self, line: str) -> None:
        """Something went wrong but the loop goes on."""
        self._emit(f"warning: {line}", "bold yellow")

    @property
    def live(self) -> bool:
        """Whether stdout is a styled terminal (so a line can be rewritten in place)."""
        return self._console is not None and not self._dead

    def countdown(self, line: str) -> None:
        """A line rewritten in place on a terminal (not logged); a plain line otherwise."""
        if not self.live:
            self.note(line)
            return
        try:
            self._stdout.write("\r\x1b[2K" + inert(line, multiline=True))
            self._stdout.flush()
        except (BrokenPipeError, ValueError):
            self._dead = True

    def countdown_done(self) -> None:
        """End an in-place countdown line."""
        if self.live:
            with contextlib.suppress(BrokenPipeError, ValueError):
                self._stdout.write("\r\x1b[2K")
                self._stdout.flush()

    def error(self, line: str) -> None:
        """A fatal error: stderr and the log, never stdout."""
        line = inert(line, multiline=True)
        if self._log is not None:
            self._log.write(f"error: {line}\n")
            self._log.flush()
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._stderr.write(f"error: {line}\n")
            self._stderr.flush()

    def agent_stderr(self, data: bytes) -> None:
        """The agent's own stderr, passed through (and copied to the log)."""
        text = inert(data.decode(errors="replace"), multiline=True)
        if self._log is not None:
            self._log.write(text)
            self._log.flush()
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._stderr.write(text)
            self._stderr.flush()

    @contextlib.contextmanager
    def capturing_logs(self, logger: str = "ralph") -> Iterator[None]:
        """Show the library's log warnings (stop-ladder steps, clean-up trouble) as warnings."""
        handler = _ToOutput(self)
        target = logging.getLogger(logger)
        target.addHandler(handler)
        target.propagate = False
        try:
            yield
        finally:
            target.removeHandler(handler)
            target.propagate = True

    def bell(self) -> None:
        """The terminal bell, when no sound player exists."""
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._stdout.write("\a")
            self._stdout.flush()


class _ToOutput(logging.Handler):
    def __init__(self, out: Output) -> None:
        super().__init__(logging.WARNING)
        self._out = out

    def emit(self, record: logging.LogRecord) -> None:
        self._out.warning(record.getMessage())

"""Live progress of the slow work behind `sgf sandbox base` and `sgf sandbox build`.

The work is a row of phases (pulling or making the base, debootstrap, the image build), each
printing many lines. Every line goes to a log file. On a terminal, stderr shows a live row for
the running phase (a spinner, what it does, a bar of its steps when it has counted ones, the
time so far, and the time the same phase took last time on this machine, timings.py) over the
last line the phase printed, so a step that runs for minutes is never a silent one; each build
step and each finished phase also leaves one permanent line. Piped, only those lines are shown;
`--verbose` shows every line as it comes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO, Protocol

from pensa.shared.inert import inert

from sgf import figures
from sgf.image import buildview, timings

if TYPE_CHECKING:
    from rich.console import Console, Group
    from rich.live import Live
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID


class Progress(Protocol):
    """Where the base and image builds report what they do."""

    def phase(self, title: str, *, key: str | None = None) -> None:
        """A phase begins (the previous one is done); `key` names it for its time estimate."""

    def line(self, text: str) -> None:
        """A line the running phase printed."""

    def abandon(self, why: str) -> None:
        """The running phase ends without its result: `why`, and what is done instead."""


class Lines:
    """A proc.Sink that hands a child's output to a Progress one line at a time."""

    def __init__(self, out: Progress) -> None:
        self.out = out
        self._pending = b""

    def write(self, data: bytes, /) -> int:
        """Pass on the complete lines of `data`."""
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            self.out.line(line.decode("utf-8", "replace").rstrip("\r"))
        return len(data)

    def flush(self) -> None:
        """Lines are passed on as they complete; nothing is held but a partial one."""


# One package's line (`I: Retrieving adduser 3.134`, `I: Configuring libc6:amd64...`), not a
# stage's (`I: Unpacking required packages...`, `I: Configuring the base system...`).
_DEBOOTSTRAP = re.compile(
    r"^I: (?:(Retrieving) [a-z0-9][a-z0-9.+-]* \S+|(Unpacking|Configuring) [a-z0-9][a-z0-9.+-]*"
    r"(?::[a-z0-9]+)?\.\.\.)$"
)
_STAGES = {"Retrieving": "retrieving", "Unpacking": "unpacking", "Configuring": "configuring"}


@dataclass
class Tally:
    """How far a phase is, from its lines: `done` of `total` (None: not counted yet).

    A docker build counts its steps (`Step 4/14 : ...`); debootstrap the packages it
    retrieves, then unpacks and configures (about as many as it retrieved). A pure reader of
    lines.
    """

    done: int = 0
    total: int | None = None
    stage: str = ""
    seen: set[str] = field(default_factory=set)  # build steps
    counts: dict[str, int] = field(default_factory=dict)  # debootstrap's stages

    def feed(self, line: str) -> str | None:
        """Count `line`; return the permanent line it starts (a build step, a debootstrap
        stage), or None."""
        if started := buildview.step(line):
            number, text = started
            if number in self.seen:
                return None
            self.seen.add(number)
            current, _, total = number.partition("/")
            if current.isdigit() and total.isdigit():
                self.done, self.total = int(current) - 1, int(total)
            return f"[{number}] {text}"
        if found := _DEBOOTSTRAP.match(line):
            stage = _STAGES[found.group(1) or found.group(2)]
            first = stage not in self.counts
            self.counts[stage] = self.counts.get(stage, 0) + 1
            self.stage, self.done = stage, self.counts[stage]
            if stage == "retrieving":
                return "retrieving packages from the Debian mirror" if first else None
            # unpacked and configured in two rounds (required, then base): counted across both
            self.total = self.counts.get("retrieving")
            if not first:
                return None
            return f"{stage} {self.total} packages" if self.total else f"{stage} packages"
        return None

    def label(self) -> str:
        """How far, in words: `step 6/17`, `unpacking 40/135`, `retrieving 57`; "" before any."""
        if self.seen and self.total:
            return f"step {self.done + 1}/{self.total}"
        if self.stage:
            return f"{self.stage} {self.done}" + (f"/{self.total}" if self.total else "")
        return ""


class Display:
    """A Progress shown on stderr and logged to `log`; a context manager.

    A phase that ends without error has its time recorded in `cache` for the next estimate.
    """

    def __init__(
        self,
        log: BinaryIO,
        *,
        verbose: bool,
        cache: Path,
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from rich.console import Console

        self.log = log
        self.verbose = verbose
        self.cache = cache
        self.clock = clock
        self.err = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.live_rows = self.err.is_terminal and not verbose
        self._title = ""
        self._key: str | None = None
        self._started = 0.0
        self._tally = Tally()
        self._live: Live | None = None
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        self._last = ""

    def __enter__(self) -> Display:
        if self.live_rows:
            from rich.live import Live
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.table import Column

            # The time columns come first and the title last, cut short when the terminal
            # is narrow: a long title must never push the elapsed time off the row.
            self._bar = Progress(
                SpinnerColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[count]}"),
                BarColumn(bar_width=16),
                TextColumn("{task.fields[estimate]}", style="dim"),
                TextColumn(
                    "{task.description}",
                    table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis"),
                ),
                console=self.err,
            )
            self._task = self._bar.add_task("", total=None, count="", estimate="")
            self._live = Live(
                console=self.err,
                transient=True,
                refresh_per_second=4,
                get_renderable=self.view,
            )
            self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._finish(ok=kind is None)
        if self._live is not None:
            self._live.stop()
        self.log.flush()

    def phase(self, title: str, *, key: str | None = None) -> None:
        """End the running phase (its time recorded), and show the new one."""
        self._finish(ok=True)
        self._title, self._key, self._started = title, key, self.clock()
        self._tally, self._last = Tally(), ""
        before = timings.last(self.cache, key) if key else None
        estimate = f"last time {figures.duration(before)}" if before is not None else ""
        self._log(f"== {title}" + (f" ({estimate})" if estimate else ""))
        if self._bar is not None and self._task is not None:
            self._bar.reset(self._task, total=None, description=title, count="", estimate=estimate)
        else:
            self._print(f"{title}…" + (f" ({estimate})" if estimate else ""), style="bold")

    def line(self, text: str) -> None:
        """Log the line; show it as the running phase's last line, and count it."""
        self._log(text)
        if self.verbose:
            self._print(text)
        step = self._tally.feed(text)
        if step and not self.verbose:
            self._print(step, style="dim")
        self._last = "" if step else (text.strip() or self._last)  # the running step's
        tally = self._tally
        if self._bar is not None and self._task is not None and (tally.done or tally.total):
            self._bar.update(
                self._task, total=tally.total, completed=tally.done, count=tally.label()
            )

    def abandon(self, why: str) -> None:
        """End the running phase unfinished (no time recorded); show `why` in any mode."""
        self._finish(ok=False)
        self._log(f"note: {why}")
        self._print(why, style="yellow")

    def _finish(self, *, ok: bool) -> None:
        if not self._title:
            return
        took = self.clock() - self._started
        if ok and self._key:
            timings.record(self.cache, self._key, took)
        state = "done" if ok else "stopped"
        self._log(f"== {state}: {self._title} in {figures.duration(took)}")
        if ok:
            self._print(f"✓ {self._title} ({figures.duration(took)})")
        self._title = ""

    def view(self) -> Group:
        """What the live area shows: the running phase's row over its last line."""
        from rich.console import Group
        from rich.text import Text

        last = Text(inert(self._last), style="dim", no_wrap=True, overflow="ellipsis")
        return Group(*([self._bar] if self._bar is not None else []), last)

    def _print(self, text: str, *, style: str | None = None) -> None:
        from rich.text import Text

        # the style goes on the text: print(style=...) would also dim the live rows rich
        # redraws below it in the same call
        self.err.print(Text(inert(text), style=style or ""))

    def _log(self, text: str) -> None:
        self.log.write(text.encode("utf-8", "replace") + b"\n")

"""The live progress of `sgf sandbox base` and `sgf sandbox build`: counted steps, the last
line of a running step, every line logged, and estimates measured on this machine."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from sgf.image import timings
from sgf.image.buildprogress import Display, Lines, Tally

BUILD = [
    "Step 1/3 : ARG BASE=debian:bookworm-slim",
    "Step 2/3 : RUN apt-get update && apt-get install -y python3-pip",
    "Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]",
    "Setting up python3-pip (23.0.1+dfsg-1) ...",
    "Step 3/3 : COPY claude /usr/local/bin/claude",
    "Successfully tagged img:1",
]
# debootstrap's own lines (bookworm, minbase): two rounds of unpacking and configuring.
DEBOOTSTRAP = [
    "I: Retrieving InRelease ",
    "I: Checking Release signature",
    "I: Retrieving Packages ",
    "I: Retrieving adduser 3.134",
    "I: Validating adduser 3.134",
    "I: Retrieving libc6 2.36-9+deb12u13",
    "I: Retrieving python3 3.11.2-1+b1",
    "I: Extracting adduser...",
    "I: Unpacking required packages...",
    "I: Unpacking adduser...",
    "I: Configuring required packages...",
    "I: Configuring libc6:amd64...",
    "I: Unpacking the base system...",
    "I: Unpacking python3...",
    "I: Configuring the base system...",
    "I: Configuring python3...",
    "I: Base system installed successfully.",
]


def test_a_build_counts_its_steps_and_shows_each_once() -> None:
    tally = Tally()
    shown = [found for line in [*BUILD, BUILD[1]] if (found := tally.feed(line))]
    assert shown == [
        "[1/3] ARG BASE=debian:bookworm-slim",
        "[2/3] RUN apt-get update && apt-get install -y python3-pip",
        "[3/3] COPY claude /usr/local/bin/claude",
    ]
    assert (tally.done, tally.total) == (2, 3)  # the third step is running
    assert tally.label() == "step 3/3"


def test_debootstrap_counts_packages_retrieved_then_unpacked_and_configured() -> None:
    tally = Tally()
    shown = []
    counted = []
    for line in DEBOOTSTRAP:
        if found := tally.feed(line):
            shown.append(found)
        counted.append((tally.stage, tally.done, tally.total))
    assert shown == [
        "retrieving packages from the Debian mirror",
        "unpacking 3 packages",
        "configuring 3 packages",
    ]
    assert counted[6] == ("retrieving", 3, None)  # the index files are not packages
    assert counted[-1] == ("configuring", 2, 3)  # both rounds counted together
    assert tally.label() == "configuring 2/3"
    assert Tally().label() == ""


@pytest.mark.parametrize("size", [1, 3, 7, 64, 10_000])
def test_lines_come_whole_whatever_the_chunking(size: int) -> None:
    got: list[str] = []

    class Collect:
        def phase(self, title: str, *, key: str | None = None) -> None: ...

        def line(self, text: str) -> None:
            got.append(text)

        def abandon(self, why: str) -> None: ...

    data = "\r\n".join(BUILD).encode() + b"\n"
    sink = Lines(Collect())
    for start in range(0, len(data), size):
        assert sink.write(data[start : start + size]) == len(data[start : start + size])
    sink.flush()
    assert got == BUILD


def clock(*readings: float) -> Iterator[float]:
    yield from readings


def piped() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=100), out


def test_piped_the_display_shows_phases_steps_and_what_failed_and_logs_every_line(
    tmp_path: Path,
) -> None:
    console, shown = piped()
    log = io.BytesIO()
    timings.record(tmp_path, "build python", 271.0)
    readings = clock(0.0, 5.0, 5.0, 65.0)  # the pull's start and end, then the build's
    with Display(
        log, verbose=False, cache=tmp_path, console=console, clock=lambda: next(readings)
    ) as out:
        out.phase("pulling debian:bookworm-slim")
        out.abandon("debian:bookworm-slim cannot be pulled; building from springfield-base:x")
        out.phase("building img:1", key="build python")
        for line in BUILD:
            out.line(line)
    text = shown.getvalue()
    assert text.splitlines() == [
        "pulling debian:bookworm-slim…",
        "debian:bookworm-slim cannot be pulled; building from springfield-base:x",
        "building img:1… (last time 4m31s)",
        "[1/3] ARG BASE=debian:bookworm-slim",
        "[2/3] RUN apt-get update && apt-get install -y python3-pip",
        "[3/3] COPY claude /usr/local/bin/claude",
        "✓ building img:1 (1m00s)",
    ]
    logged = log.getvalue().decode().splitlines()
    assert all(line in logged for line in BUILD)
    assert "== building img:1 (last time 4m31s)" in logged
    assert timings.last(tmp_path, "build python") == 60.0  # measured, for the next estimate


def test_a_phase_that_fails_records_no_time(tmp_path: Path) -> None:
    console, shown = piped()
    readings = clock(0.0, 9.0)
    display = Display(
        io.BytesIO(), verbose=False, cache=tmp_path, console=console, clock=lambda: next(readings)
    )

    def fail() -> None:
        with display as out:
            out.phase("building img:1", key="build python")
            raise RuntimeError("the engine went away")

    with pytest.raises(RuntimeError):
        fail()
    assert timings.last(tmp_path, "build python") is None
    assert "✓" not in shown.getvalue()


def test_verbose_shows_every_line(tmp_path: Path) -> None:
    console, shown = piped()
    with Display(io.BytesIO(), verbose=True, cache=tmp_path, console=console) as out:
        out.phase("building img:1")
        for line in BUILD:
            out.line(line)
    assert all(line in shown.getvalue().splitlines() for line in BUILD)


def test_on_a_terminal_the_live_row_counts_steps_and_shows_the_last_line(tmp_path: Path) -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=120)
    timings.record(tmp_path, "build python", 95.0)
    with Display(io.BytesIO(), verbose=False, cache=tmp_path, console=terminal) as out:
        out.phase("building img:1", key="build python")
        for line in BUILD[:4]:
            out.line(line)
        rendered = Console(file=io.StringIO(), width=120, color_system=None)
        rendered.print(out.view())
        row, last = rendered.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert "building img:1" in row
    assert "step 2/3" in row
    assert "last time 1m35s" in row
    assert last == "Setting up python3-pip (23.0.1+dfsg-1) ..."


def test_timings_round_trip_and_survive_a_damaged_or_unwritable_cache(tmp_path: Path) -> None:
    assert timings.last(tmp_path, "base-debootstrap") is None
    timings.record(tmp_path, "base-debootstrap", 271.04)
    timings.record(tmp_path, "base-import", 12.0)
    assert timings.last(tmp_path, "base-debootstrap") == 271.0
    assert timings.last(tmp_path, "base-import") == 12.0
    (tmp_path / timings.FILE).write_text("{not json")
    assert timings.last(tmp_path, "base-import") is None
    blocked = tmp_path / "file"
    blocked.write_text("")
    timings.record(blocked / "cache", "x", 1.0)  # its folder cannot exist: no figure, no error
    assert timings.last(blocked / "cache", "x") is None

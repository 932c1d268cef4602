"""The main screen of `sgf top` with fixed data, compared with a stored text snapshot.

The SVG that Textual exports is cut into its text lines (structure, not pixels: fonts and
colours may change between Textual releases without breaking the test). Regenerate with
`SPRINGFIELD_UPDATE_SNAPSHOTS=1 pytest packages/sgf/tests/top/test_app_snapshot.py` and review
the diff.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from sgf.loop.loopstate import LoopRow, State, Task
from sgf.top.app import TopApp
from sgf.top.board import Board, Claim
from sgf.top.collect import Snapshot

from .conftest import NOW, until

SNAPSHOT = Path(__file__).parent / "snapshots" / "top_main.txt"
LOG = """\
# sgf: ralph -a --loop-id build-auth-20260301T113000 --template springfield-sandbox:latest
Iteration 1 of 10 · build-auth-20260301T113000
-> Bash(pn claim-next -t task -t chore --spec auth --json)
I'll add the login form first.
-> Read(src/auth/login.py)
-> Edit(src/auth/login.py)
-> Bash(make test)
   ! 1 test failed: test_login_rejects_empty_password
-> Edit(src/auth/login.py)
-> Bash(git commit -m "feat(auth): login form [/red]")
Iteration 1 done: 4m02s · 31 turns · 5210 in / 2231 out tokens · $0.1400 · exit 0
Iteration 2 of 10 · build-auth-20260301T113000
-> Bash(pn claim-next -t task -t chore --spec auth --json)
"""


class Fixed:
    """A source that always shows the same snapshot."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def snapshot(self) -> Snapshot:
        return self.snap


def fixed_snapshot(tmp_path: Path) -> Snapshot:
    shop, blog = Path("/work/shop"), Path("/work/blog")  # shown, never read
    build = "build-auth-20260301T113000"
    log = tmp_path / f"{build}.log"
    log.write_text(LOG)
    rows = (
        LoopRow(
            shop, build, "build", "auth", State.RUNNING, pid=101, iteration=2, iterations=10,
            task=Task("pn-1a2b3c4d", "login form [bold]rejects[/bold] empty passwords"),
            cost=0.14, max_cost=5.0, tokens=7441, elapsed=1800.0,
            last_activity=NOW - timedelta(seconds=3), costs=(0.14,), log=log,
        ),
        LoopRow(
            shop, "issues-plan-20260301T100000", "issues-plan", None, State.WAITING,
            reason="usage limit, resets at 2026-03-01 15:00 UTC", pid=102, iteration=4,
            iterations=5, cost=0.92, tokens=120400, elapsed=7200.0,
            last_activity=NOW - timedelta(minutes=12), costs=(0.2, 0.3, 0.12, 0.3),
        ),
        LoopRow(
            blog, "test-20260301T090000", "test", None, State.STOPPED, reason="interrupted",
            iteration=3, iterations=20, cost=0.51, max_cost=1.0, tokens=50100, elapsed=3000.0,
            last_activity=NOW - timedelta(hours=2), costs=(0.2, 0.21, 0.1),
        ),
    )  # fmt: skip
    boards = {
        shop: Board(
            ready=3,
            blocked=1,
            needs_human=1,
            open=6,
            working=(Claim("pn-1a2b3c4d", "login form", build),),
            closed_today=(Task("pn-9f8e7d6c", "session cookie"),),
        ),
        blog: Board(error="pn: no .pensa here"),
    }
    return Snapshot(NOW, (shop, blog), rows, boards)


CHAR_WIDTH = 12.2  # rich's SVG export: 20 px characters, aspect ratio 0.61


def screen_text(svg: str) -> str:
    """The text of a Textual SVG screenshot, line by line, each run at its column."""
    lines: dict[int, list[tuple[int, str]]] = defaultdict(list)
    pattern = r'<text[^>]*x="([\d.]+)"[^>]*clip-path="url\(#[\w-]+-line-(\d+)\)"[^>]*>(.*?)</text>'
    for x, line, content in re.findall(pattern, svg):
        column = round(float(x) / CHAR_WIDTH)
        lines[int(line)].append((column, html.unescape(content).replace("\xa0", " ")))
    text = []
    for n in sorted(lines):
        out = ""
        for column, part in sorted(lines[n]):
            out = out.ljust(column) + part
        text.append(out.rstrip())
    return "\n".join(text).rstrip() + "\n"


async def screenshot(app: TopApp) -> str:
    async with app.run_test(size=(160, 40)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.snap is not None and app.query_one("#log").virtual_size.height > 5:
                break
        await pilot.pause()
        return app.export_screenshot()


def test_the_main_screen_matches_its_snapshot(tmp_path: Path) -> None:
    app = TopApp(Fixed(fixed_snapshot(tmp_path)), scope="all projects")
    text = screen_text(asyncio.run(screenshot(app)))
    if os.environ.get("SPRINGFIELD_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()
    assert "[bold]rejects[/bold]" in text  # a title's brackets are text, not markup


def test_the_filter_keeps_matching_rows(tmp_path: Path) -> None:
    app = TopApp(Fixed(fixed_snapshot(tmp_path)), scope="all projects")

    async def drive() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            await until(pilot, lambda: len(app.rows) == 3, "the rows")
            await pilot.press("j")
            await until(
                pilot, lambda: app.selected is not None and "issues-plan" in app.selected[1], "j"
            )
            await pilot.press("k")
            await until(pilot, lambda: app.selected is not None and "build" in app.selected[1], "k")
            await pilot.press("slash", *"blog", "enter")
            await until(pilot, lambda: len(app.rows) == 1, "the filtered rows")
            assert app.rows[0].project.name == "blog"
            await pilot.press("slash", "escape")
            await until(pilot, lambda: len(app.rows) == 3, "all rows again")
            await pilot.press("enter")
            assert app.focused is app.query_one("#log")
            await pilot.press("escape")
            assert app.focused is app.query_one("#loops")

    asyncio.run(drive())


MANUAL = Path(__file__).resolve().parents[4] / "docs" / "sgf.md"


def test_the_manual_shows_the_snapshot_and_every_key() -> None:
    from sgf.top.widgets import KEYS

    text = MANUAL.read_text()
    assert "```text\n" + SNAPSHOT.read_text() + "```" in text
    for key, what in KEYS:
        assert f"| `{key}` | {what} |" in text

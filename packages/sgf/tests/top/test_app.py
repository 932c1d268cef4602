"""`sgf top` driven by Textual's pilot against two projects with real loops: real sgf, real
ralph, the repo's fake agent (packages/ralph/tests/agents/fake_agent.py) on the host, real pn.

Each loop's first iteration claims the project's task and reports $0.25; its second writes a
ready file and hangs, so the loop is caught mid-run with a claim held.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import RichLog

from sgf.loop import loopindex
from sgf.loop.loopstate import LoopRow, State
from sgf.top.app import TopApp
from sgf.top.collect import Collector
from sgf.top.widgets import Confirm, Help

from ..conftest import alive

# generous: each wait is on a condition, and a busy 2-core machine starts loops slowly
pytestmark = [pytest.mark.process, pytest.mark.timeout(900)]

AGENT = Path(__file__).resolve().parents[3] / "ralph" / "tests" / "agents" / "fake_agent.py"
SGF = Path(sys.executable).parent / "sgf"


def run(cwd: Path, env: dict[str, str], *argv: str) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
    return done.stdout


class Loops:
    """Projects with a task each, and the sgf loops started in them."""

    def __init__(self, template: Path, tmp_path: Path, env: dict[str, str]) -> None:
        self.template = template
        self.tmp_path = tmp_path
        self.env = {
            **env,
            "SGF_SKIP_PREFLIGHT": "1",
            "RALPH_COMMAND": str(AGENT),
            "RALPH_STOP_GRACE": "0.5",
            "RALPH_RESULT_GRACE": "0.5",
            # the fake agent counts its runs per project, across that project's loops
            "FAKE_AGENT_COUNT": str(tmp_path / "runs-{project}"),
            # `--all` also shows the loops of every labelled container on the machine's engine,
            # and other suites sharing it run theirs: these loops run unsandboxed, so this
            # test's machine has no engine
            "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        }
        self.started: list[subprocess.Popen[bytes]] = []

    def project(self, name: str) -> tuple[Path, str]:
        """A copy of the initialised project holding one task and the fake agent's script;
        the task's id."""
        root = self.tmp_path / name
        shutil.copytree(self.template, root, symlinks=True)
        task = json.loads(
            run(root, self.env, "pn", "create", f"{name} task", "-t", "task", "--json")
        )
        ready = self.tmp_path / f"{name}.ready"
        script = {
            "1": [
                ["sh", "pn claim-next -t task --json"],
                [
                    "result",
                    {"total_cost_usd": 0.25, "usage": {"input_tokens": 90, "output_tokens": 10}},
                ],
            ],
            "2": [["ready", str(ready)], ["hang"]],
            "default": [["say", "nothing left"], ["result", {"total_cost_usd": 0.01}]],
        }
        (root / ".sgf" / "prompts" / "build.md").write_text(json.dumps(script) + "\n")
        run(root, self.env, "git", "add", "-A")
        run(root, self.env, "git", "commit", "-qm", "fake agent script and a task")
        return root, str(task["id"])

    def start(self, root: Path) -> subprocess.Popen[bytes]:
        """`sgf build -a` in `root`, running until its second iteration hangs."""
        child = subprocess.Popen(
            [str(SGF), "build", "-a", "--sandbox", "none", "--no-push", "3"],
            cwd=root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.started.append(child)
        ready = self.tmp_path / f"{root.name}.ready"
        deadline = time.monotonic() + 240
        while not ready.exists():
            assert child.poll() is None, f"sgf in {root.name} exited with {child.returncode}"
            assert time.monotonic() < deadline, f"the loop in {root.name} never got going"
            time.sleep(0.05)
        return child

    def agent_pid(self, root: Path) -> int:
        return int((self.tmp_path / f"{root.name}.ready").read_text())


@pytest.fixture
def loops(project_template: Path, tmp_path: Path, tool_env: dict[str, str]) -> Iterator[Loops]:
    made = Loops(project_template, tmp_path, tool_env)
    yield made
    for child in made.started:  # a failing test's loops: stopped the way a user would
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


async def until(pilot: Any, condition: Callable[[], bool], what: str, timeout: float = 240) -> None:
    """Let the app run until `condition` holds, failing after `timeout` seconds with what the
    app last showed."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {shown(pilot.app)}"
        await pilot.pause(0.1)


def shown(app: TopApp) -> str:
    """The app's last snapshot, as a failure message tells it."""
    snap = app.snap
    if snap is None:
        return "no snapshot yet"
    rows = [(r.project.name, r.loop_id, r.state.name, r.task) for r in snap.rows]
    boards = {root.name: board.error or board.held() for root, board in snap.boards.items()}
    return f"snapshot at {snap.taken:%T}: rows {rows}, boards {boards}"


def row_of(app: TopApp, project: Path) -> LoopRow | None:
    found = [r for r in app.rows if r.project == project]
    return found[0] if found else None


def test_top_shows_both_projects_loops_stops_one_and_restarts_it(
    loops: Loops, tmp_path: Path
) -> None:
    shop, shop_task = loops.project("shop")
    blog, blog_task = loops.project("blog")
    shop_loop = loops.start(shop)
    blog_loop = loops.start(blog)
    collector = Collector(shop, all_projects=True, env=loops.env)
    app = TopApp(collector, scope="all projects", env=loops.env, sgf=[sys.executable, "-m", "sgf"])

    async def drive() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            await until(
                pilot,
                lambda: len(app.rows) == 2 and all(r.task for r in app.rows),
                "both loops with their tasks",
            )
            shown = {
                (r.project.name, r.state, r.iteration, r.iterations, r.task, r.cost)
                for r in app.rows
            }
            assert {(p, s, i, n, t.id if t else None, c) for p, s, i, n, t, c in shown} == {
                ("shop", State.RUNNING, 2, 3, shop_task, 0.25),
                ("blog", State.RUNNING, 2, 3, blog_task, 0.25),
            }
            table = app.query_one("#loops")
            cells = [str(c) for c in table.get_row_at(0)]  # type: ignore[attr-defined]
            assert cells[0] == app.rows[0].loop_id
            assert cells[1:5] == ["shop", "build", "-", "2/3"]
            assert cells[5] == f"{shop_task} shop task"
            assert cells[6] == "$0.2500"

            # the log pane follows the selected loop's one-liners
            def logged(text: str) -> bool:
                lines = app.query_one("#log", RichLog).lines
                return any(text in line.text for line in lines)

            await until(pilot, lambda: logged("Iteration 1 done"), "the shop loop's log lines")

            # s, then y: shop's loop stops the Ctrl+C way
            app.query_one("#loops").focus()
            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
            await pilot.press("y")
            assert shop_loop.wait(timeout=240) == 130
            await until(
                pilot,
                lambda: (r := row_of(app, shop)) is not None and r.state is State.STOPPED,
                "the stopped row",
            )
            stopped = row_of(app, shop)
            assert stopped is not None
            assert stopped.reason == "interrupted"
            assert blog_loop.poll() is None  # the other loop runs on
            issue = json.loads(run(shop, loops.env, "pn", "show", shop_task, "--json"))
            assert (issue["status"], issue["assignee"]) == ("open", None)  # claim released
            assert not alive(loops.agent_pid(shop))

            # r, then n: nothing happens; r, then y: the same command runs again
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
            await pilot.press("n")
            assert app.restarts == []
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
            await pilot.press("y")
            await until(pilot, lambda: len(app.restarts) == 1, "the restart")
            child, output, _ = app.restarts[0]
            assert child.wait(timeout=240) == 2, output.read_text()  # 3 iterations, as before
            await until(
                pilot,
                lambda: len([r for r in app.rows if r.project == shop]) == 2,
                "the restarted loop's row",
            )

            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, Help), "the help")
            await pilot.press("escape")
            await pilot.press("q")

    asyncio.run(drive())
    assert not app.is_running
    blog_loop.send_signal(signal.SIGINT)
    assert blog_loop.wait(timeout=240) == 130
    assert not alive(loops.agent_pid(blog))


def test_a_killed_loops_stale_index_entry_is_never_shown_as_running(
    loops: Loops, tmp_path: Path
) -> None:
    blog, _ = loops.project("blog")
    child = loops.start(blog)
    [entry] = loopindex.entries(loops.env)
    assert entry.pid == child.pid
    child.kill()  # kill -9: no clean-up, the index entry and PID file stay behind
    child.wait()
    deadline = time.monotonic() + 240
    while alive(loops.agent_pid(blog)):  # ralph follows sgf (PDEATHSIG) and stops its agent
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert [e.loop_id for e in loopindex.entries(loops.env)] == [entry.loop_id]

    app = TopApp(Collector(None, all_projects=True, env=loops.env), scope="all projects")

    async def drive() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            await until(pilot, lambda: len(app.rows) == 1, "the killed loop's row")
            [row] = app.rows
            assert (row.project, row.loop_id) == (blog, entry.loop_id)
            assert row.state is State.STOPPED
            assert not row.live
            assert "running" not in app.sub_title.replace("0 running", "")
            await pilot.press("s")  # nothing to stop: no confirmation
            await pilot.pause(0.2)
            assert not isinstance(app.screen, Confirm)
            await pilot.press("q")

    asyncio.run(drive())


def test_top_all_finds_a_parallel_runs_loops_and_restarts_one_alone(
    loops: Loops, tmp_path: Path
) -> None:
    shop, _ = loops.project("shop")
    run(shop, loops.env, "pn", "create", "shop second task", "-t", "task", "--json")
    held = tmp_path / "held"
    held.mkdir()
    script = {  # each loop (a workspace of its own) claims a task, then holds on, ready
        "1": [
            ["sh", "pn claim-next -t task --json"],
            ["result", {"total_cost_usd": 0.25}],
        ],
        "2": [["sh", f'touch {held}/"$RALPH_LOOP_ID"'], ["hang"]],
        "default": [["say", "nothing left"], ["result", {"total_cost_usd": 0.01}]],
    }
    (shop / ".sgf" / "prompts" / "build.md").write_text(json.dumps(script) + "\n")
    run(shop, loops.env, "git", "commit", "-qam", "a script for the parallel loops")
    argv = [str(SGF), "build", "-a", "--sandbox", "none", "--no-push", "--parallel", "2", "3"]
    own = {k: v for k, v in loops.env.items() if k != "FAKE_AGENT_COUNT"}  # each loop counts
    group = subprocess.Popen(argv, cwd=shop, env=own, stdin=subprocess.DEVNULL)
    loops.started.append(group)
    deadline = time.monotonic() + 240
    while len(list(held.iterdir())) < 2:
        assert group.poll() is None, f"sgf --parallel exited with {group.returncode}"
        assert time.monotonic() < deadline, "the parallel loops never got going"
        time.sleep(0.1)
    loop_ids = sorted(p.name for p in held.iterdir())
    app = TopApp(
        Collector(None, all_projects=True, env=loops.env),
        scope="all projects",
        env=loops.env,
        sgf=[sys.executable, "-m", "sgf"],
    )

    async def drive() -> None:
        async with app.run_test(size=(200, 40)) as pilot:
            await until(pilot, lambda: len(app.rows) == 2, "both loops of the parallel run")
            assert sorted(r.loop_id for r in app.rows) == loop_ids
            assert {r.project for r in app.rows} == {shop}
            table = app.query_one("#loops")
            ids = [str(table.get_row_at(i)[0]) for i in range(2)]  # type: ignore[attr-defined]
            assert sorted(ids) == loop_ids  # the loop-id column tells them apart

            app.query_one("#loops").focus()
            await pilot.press("s")  # one sgf runs both: both stop, the Ctrl+C way
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
            await pilot.press("y")
            assert group.wait(timeout=240) == 130
            await until(
                pilot,
                lambda: len(app.rows) == 2 and all(r.state is State.STOPPED for r in app.rows),
                "both stopped rows",
            )
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
            question = str(app.screen.question)  # type: ignore[attr-defined]
            assert "sgf build -a --worktree --no-push --sandbox none 3" in question
            await pilot.press("y")
            await until(pilot, lambda: len(app.restarts) == 1, "the restart")
            child, _, _ = app.restarts[0]
            loops.started.append(child)
            await until(
                pilot,
                lambda: len([r for r in app.rows if r.live]) == 1,
                "the restarted loop running",
                timeout=90,
            )
            [again] = [r for r in app.rows if r.live]
            assert again.loop_id not in loop_ids
            await pilot.press("q")

    asyncio.run(drive())

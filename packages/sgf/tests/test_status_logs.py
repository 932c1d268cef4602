"""`sgf status` and `sgf logs` through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import pn

Run = Callable[..., "subprocess.CompletedProcess[str]"]


def seed_pensa(project: Path, env: dict[str, str]) -> None:
    """auth: 2 ready tasks, 1 claimed, 1 blocked, 1 open bug; billing: 1 ready task."""
    first = pn(project, env, "create", "a1", "-t", "task", "--spec", "auth")["id"]
    pn(project, env, "create", "a2", "-t", "task", "--spec", "auth")
    claimed = pn(project, env, "create", "a3", "-t", "task", "--spec", "auth")["id"]
    pn(project, env, "update", claimed, "--claim")
    pn(project, env, "create", "a4", "-t", "task", "--spec", "auth", "--dep", first)
    pn(project, env, "create", "crash", "-t", "bug", "--spec", "auth")
    pn(project, env, "create", "b1", "-t", "task", "--spec", "billing")


@pytest.mark.process
def test_status_json_shows_running_loops_recent_outcomes_and_pensa_per_spec(
    project: Path, sgf: Run, fake_ralph: Any, tool_env: dict[str, str]
) -> None:
    seed_pensa(project, tool_env)
    assert sgf(project, "verify", env=fake_ralph.env(FAKE_RALPH_EXIT="2")).returncode == 2
    run_dir = project / ".sgf/run"
    live = "build-auth-20260101T000000"
    (run_dir / f"{live}.pid").write_text(f"{os.getpid()}\n")

    done = sgf(project, "status", "--json")

    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert list(data) == [
        "running",
        "stale",
        "recent",
        "pensa",
        "pensa_error",
        "removed_orphans",
        "warnings",
    ]
    (running,) = data["running"]
    assert list(running) == [
        "loop_id", "stage", "spec", "pid", "started_at", "uptime_seconds", "log",
        "iteration", "iterations", "task", "task_title", "cost", "tokens", "idle_seconds", "group",
    ]  # fmt: skip
    assert (running["loop_id"], running["stage"], running["spec"]) == (live, "build", "auth")
    assert running["pid"] == os.getpid()
    assert running["log"] == f".sgf/logs/{live}.log"
    assert data["stale"] == []
    assert [(o["outcome"], o["exit_code"]) for o in data["recent"]] == [("exhausted", 2)]
    pensa = data["pensa"]
    assert (pensa["ready"], pensa["in_progress"], pensa["blocked"], pensa["open_bugs"]) == (
        3, 1, 1, 1,
    )  # fmt: skip
    assert pensa["by_spec"] == [
        {"spec": "auth", "ready": 2, "in_progress": 1, "blocked": 1, "open_bugs": 1},
        {"spec": "billing", "ready": 1, "in_progress": 0, "blocked": 0, "open_bugs": 0},
    ]
    assert data["pensa_error"] is None


@pytest.mark.process
def test_status_text_is_plain_when_piped(
    project: Path, sgf: Run, fake_ralph: Any, tool_env: dict[str, str], dead_pid: int
) -> None:
    seed_pensa(project, tool_env)
    run_dir = project / ".sgf/run"
    run_dir.mkdir(parents=True)
    (run_dir / "test-20260101T000000.pid").write_text(f"{dead_pid}\n")
    done = sgf(project, "status")
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout
    assert "No loops running." in done.stdout
    assert "Crashed (recovered at next launch): test-20260101T000000" in done.stdout
    assert "pensa: 3 ready, 1 in progress, 1 blocked, 1 open bugs" in done.stdout
    assert "billing" in done.stdout


@pytest.mark.process
def test_status_without_pn_still_reports_loops(project: Path, sgf: Run, tmp_path: Path) -> None:
    path = f"{tmp_path / 'empty'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    done = sgf(project, "status", "--json", env={"PATH": path})
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["pensa"] is None
    assert "pn not found" in data["pensa_error"]


@pytest.mark.process
@pytest.mark.parametrize("content", [b"\xff\xfe\n", b"99999999999999999999999\n", b"\xc2\xb2\n"])
def test_status_treats_a_garbled_pid_file_as_a_crash(
    project: Path, sgf: Run, content: bytes
) -> None:
    run = project / ".sgf/run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "build-20260101T000000.pid").write_bytes(content)
    done = sgf(project, "status", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stale"] == ["build-20260101T000000"]


@pytest.mark.process
def test_status_skips_history_lines_that_are_not_utf8(project: Path, sgf: Run) -> None:
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True, exist_ok=True)
    good = {
        "loop_id": "build-20260101T000000",
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:01:00Z",
        "exit_code": 0,
        "outcome": "complete",
    }
    (logs / "history.jsonl").write_bytes(json.dumps(good).encode() + b"\n\xff\xfe garbage\n")
    done = sgf(project, "status", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["recent"] == [good]


@pytest.mark.process
def test_status_skips_history_lines_with_wrong_types(project: Path, sgf: Run) -> None:
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True, exist_ok=True)
    bad: dict[str, object] = {"loop_id": 5, "started_at": 1, "ended_at": None, "exit_code": "x"}
    bad["outcome"] = []
    (logs / "history.jsonl").write_text(json.dumps(bad) + "\n")
    for args in (["status"], ["status", "--json"]):
        done = sgf(project, *args)
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["recent"] == []


@pytest.mark.process
def test_logs_prints_a_finished_loop_by_unique_prefix(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    assert sgf(project, "verify", env=fake_ralph.env()).returncode == 0
    done = sgf(project, "logs", "verif")
    assert done.returncode == 0, done.stderr
    assert "fake ralph: iteration 1 of 25\nfake ralph: done\n" in done.stdout


@pytest.mark.process
def test_logs_unknown_id_exits_1_listing_recent_ids(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    assert sgf(project, "verify", env=fake_ralph.env()).returncode == 0
    loop_id = fake_ralph.calls()["argv"][fake_ralph.calls()["argv"].index("--loop-id") + 1]
    done = sgf(project, "logs", "build-nope")
    assert done.returncode == 1
    assert done.stderr == f"error: no loop 'build-nope'; recent loops: {loop_id}\n"


@pytest.mark.process
def test_logs_ambiguous_prefix_names_the_candidates(project: Path, sgf: Run) -> None:
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True)
    (logs / "build-20260101T000000.log").write_text("a\n")
    (logs / "build-20260101T000001.log").write_text("b\n")
    done = sgf(project, "logs", "build-2026")
    assert done.returncode == 1
    assert "matches several loops" in done.stderr


@pytest.mark.process
def test_logs_lists_and_accepts_whole_ids_and_any_unique_part(project: Path, sgf: Run) -> None:
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True)
    older, newer = "build-auth-20260101T000000", "verify-20260102T000000"
    (logs / f"{older}.log").write_text("auth work\n")
    (logs / f"{newer}.log").write_text("verified\n")
    os.utime(logs / f"{older}.log", (1, 1))
    (logs / "sandbox-build.log").write_text("docker output\n")  # no loop: never offered
    (logs / "notify.log").write_text("notify end: x\n")
    listed = sgf(project, "logs", "--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == f"{newer}\n{older}\n"
    for name in (older, "auth", "20260101T000000"):
        done = sgf(project, "logs", name, "--no-follow")
        assert (done.returncode, done.stdout) == (0, "auth work\n"), (name, done.stderr)
    unknown = sgf(project, "logs", "sandbox-build")
    assert unknown.returncode == 1
    assert unknown.stderr == f"error: no loop 'sandbox-build'; recent loops: {newer}, {older}\n"


@pytest.mark.process
def test_logs_before_any_loop_does_not_offer_the_sandbox_build_log(project: Path, sgf: Run) -> None:
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True)
    (logs / "sandbox-build.log").write_text("docker output\n")
    done = sgf(project, "logs", "--no-follow")
    assert done.returncode == 1
    assert "no loop has run here yet" in done.stderr


@pytest.mark.process
def test_logs_follows_a_running_loop_until_it_ends(
    project: Path, tool_env: dict[str, str], fake_ralph: Any, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    sgf_bin = Path(tool_env["PATH"].split(os.pathsep)[0]) / "sgf"
    env = {**tool_env, **fake_ralph.env(FAKE_RALPH_READY=str(ready))}
    loop = subprocess.Popen(
        [str(sgf_bin), "build", "-a"], cwd=project, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    (log,) = (project / ".sgf/logs").glob("build-*.log")
    follower = subprocess.Popen(
        [str(sgf_bin), "logs", log.stem], cwd=project, env=tool_env,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert follower.stdout is not None
    assert follower.stdout.readline().startswith("# sgf: ")
    assert follower.poll() is None  # still following while the loop runs
    loop.send_signal(2)
    assert loop.wait(timeout=30) == 130
    out = follower.stdout.read()  # returns at EOF: the follower stops once the loop ended
    assert follower.wait(timeout=30) == 0
    assert "fake ralph: done" in out
    assert "# sgf: ralph exited with 130" in out


@pytest.mark.process
def test_status_shows_hostile_history_text_inert_and_never_as_markup(
    project: Path, sgf: Run
) -> None:
    """A loop id or outcome holding escapes or `[/x]` neither reaches the
    terminal raw nor raises rich's MarkupError."""
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True, exist_ok=True)
    hostile = {
        "loop_id": "build-\x1b]0;pwned\x07[/bold]",
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:01:00Z\x1b[2J",
        "exit_code": 1,
        "outcome": "[/anything] \x9b31m",
    }
    (logs / "history.jsonl").write_text(json.dumps(hostile) + "\n")
    done = sgf(project, "status")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "[/anything]" in done.stdout
    assert "\\x1b]0;pwned" in done.stdout
    assert not any(ch in done.stdout for ch in "\x1b\x07\x9b"), repr(done.stdout)
    as_json = json.loads(sgf(project, "status", "--json").stdout)
    assert as_json["recent"] == [hostile]  # JSON stays exact


def test_a_warning_with_a_closing_tag_prints_instead_of_raising(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sgf import render
    from sgf.loop.recovery import Report

    render.recovery(Report(warnings=["could not release [/x] \x1b[2J"]))  # MarkupError before
    err = capsys.readouterr().err
    assert "could not release [/x] \\x1b[2J" in err


@pytest.mark.docker
def test_status_removes_the_container_of_a_killed_ralph(
    project: Path, sgf: Run, base_image: str
) -> None:
    """After `kill -9` of ralph its container runs on; `sgf status` removes it."""
    started = subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--label",
            f"springfield.project={project}",
            "--label",
            "springfield.ralph-pid=999999999",
            base_image,
            "sleep",
            "300",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    cid = started.stdout.strip()
    try:
        done = sgf(project, "status", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["removed_orphans"] == [cid[:12]]
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"id={cid}"], capture_output=True, text=True
        )
        assert left.stdout.strip() == ""
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, check=False)


@pytest.mark.docker
@pytest.mark.parametrize("inside", ["0.0.1", "host"])
def test_status_warns_when_the_images_pn_is_not_the_hosts(
    project: Path, sgf: Run, inside: str, labelled: Callable[..., str]
) -> None:
    """The image records its pn version; status names a mismatch with the host's."""
    from importlib.metadata import version

    host = version("pensa")
    image = labelled(**{"springfield.pn-version": host if inside == "host" else inside})
    config = project / ".sgf" / "config.toml"
    kept = [line for line in config.read_text().splitlines() if "docker_template" not in line]
    config.write_text("\n".join([*kept, f'docker_template = "{image}"', ""]))
    env: dict[str, str] = {}

    data = json.loads(sgf(project, "status", "--json", env=env).stdout)
    shown = sgf(project, "status", env=env).stdout

    if inside == "host":
        assert data["warnings"] == []
        assert "warning" not in shown
    else:
        (warning,) = data["warnings"]
        assert f"has pn 0.0.1 but this machine has pn {host}" in warning
        assert "warning: the sandbox image" in shown


@pytest.mark.process
def test_logs_without_an_id_shows_the_newest_loop(project: Path, sgf: Run) -> None:
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True)
    old, new = logs / "build-20260101T000000.log", logs / "verify-20260101T000001.log"
    old.write_text("old\n")
    new.write_text("new\n")
    os.utime(old, (1, 1))
    done = sgf(project, "logs")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "new\n"


@pytest.mark.process
def test_logs_can_wait_for_a_loop_that_has_not_started(project: Path, sgf: Run) -> None:
    logs = project / ".sgf/logs"
    logs.mkdir(parents=True, exist_ok=True)
    assert sgf(project, "logs").returncode == 1  # nothing yet, no waiting asked for

    import threading

    def start_later() -> None:
        time.sleep(0.5)  # the "loop" starts after sgf logs began waiting
        (logs / "build-20260101T000000.log").write_text("late start\n")

    writer = threading.Thread(target=start_later)
    writer.start()
    done = sgf(project, "logs", "--wait", "20")
    writer.join()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "late start\n"


@pytest.mark.process
def test_status_shows_a_running_loops_iteration_task_cost_and_recent_totals(
    project: Path, sgf: Run, tool_env: dict[str, str]
) -> None:
    """What each loop is doing now, and how recent loops ended, from run records."""
    live = "build-20260101T000000"
    task = json.loads(
        subprocess.run(
            ["pn", "create", "the current task", "-t", "task", "--json"],
            cwd=project, env=tool_env, capture_output=True, text=True, check=True,
        ).stdout
    )["id"]  # fmt: skip
    subprocess.run(
        ["pn", "update", task, "--claim", "--actor", live],
        cwd=project, env=tool_env, capture_output=True, check=True,
    )  # fmt: skip
    (project / ".sgf/run").mkdir(parents=True, exist_ok=True)
    (project / ".sgf/run" / f"{live}.pid").write_text(f"{os.getpid()}\n")
    (project / ".sgf/logs").mkdir(parents=True, exist_ok=True)
    (project / ".sgf/logs" / f"{live}.log").write_text("working\n")
    records = project / ".sgf/runs"
    records.mkdir(parents=True, exist_ok=True)
    (records / f"{live}.jsonl").write_text(
        "\n".join(
            json.dumps(e)
            for e in (
                {"event": "start", "iterations": 10},
                {"event": "iteration_start", "index": 1, "total": 10},
                {"event": "iteration", "index": 1, "cost": 0.12},
                {"event": "iteration_start", "index": 2, "total": 10},
            )
        )
        + "\n"
    )
    done_id = "verify-20251231T000000"
    (project / ".sgf/logs" / "history.jsonl").write_text(
        json.dumps(
            {"loop_id": done_id, "started_at": "x", "ended_at": "y", "exit_code": 2,
             "outcome": "exhausted"}
        ) + "\n"
    )  # fmt: skip
    end = {"event": "end", "stop_reason": "budget reached: cost", "iterations": 3,
           "tasks_closed": ["pn-1", "pn-2"], "cost": 1.5, "tokens": 900,
           "seconds": 60.0}  # fmt: skip
    (records / f"{done_id}.jsonl").write_text(json.dumps(end) + "\n")

    data = json.loads(sgf(project, "status", "--json").stdout)
    (running,) = data["running"]
    assert (running["iteration"], running["iterations"], running["cost"]) == (2, 10, 0.12)
    assert (running["task"], running["task_title"]) == (task, "the current task")
    assert isinstance(running["idle_seconds"], int)
    (recent,) = data["recent"]
    assert (recent["stop_reason"], recent["cost"], recent["iterations"]) == (
        "budget reached: cost", 1.5, 3,
    )  # fmt: skip
    assert list(recent) == [
        "loop_id", "started_at", "ended_at", "exit_code", "outcome",
        "stop_reason", "iterations", "planned", "tasks_closed", "cost", "tokens", "seconds",
        "guardrails",
    ]  # fmt: skip
    assert (recent["tasks_closed"], recent["tokens"], recent["seconds"]) == (
        ["pn-1", "pn-2"], 900, 60.0,
    )  # fmt: skip
    text = sgf(project, "status").stdout
    assert "2/10" in text
    assert "the current task" in text
    assert "budget reached: cost" in text
    [row] = [line for line in text.splitlines() if done_id in line]
    cells = row.split()  # piped: plain rows, whole cells, no box drawing
    assert cells[0] == done_id
    assert cells[3:9] == ["2", "3/?", "$1.5000", "900", "1m00s", "2"]


@pytest.mark.process
def test_status_lists_the_stuck_tasks_needing_a_human(
    project: Path, sgf: Run, tool_env: dict[str, str]
) -> None:
    """A task agents gave up on 3 times is named, and not counted as ready."""
    stuck = pn(project, tool_env, "create", "impossible task", "-t", "task")["id"]
    pn(project, tool_env, "create", "doable task", "-t", "task")
    for loop in ("build-1", "build-2", "build-3"):
        as_loop = {**tool_env, "PN_ACTOR": loop}
        assert pn(project, as_loop, "claim-next", "--stuck-after", "3")["id"] == stuck
        pn(project, as_loop, "release", stuck)
    pn(project, {**tool_env, "PN_ACTOR": "build-4"}, "claim-next", "--stuck-after", "3")

    data = json.loads(sgf(project, "status", "--json").stdout)

    picture = data["pensa"]
    assert (picture["ready"], picture["in_progress"], picture["needs_human"]) == (0, 1, 1)
    assert picture["stuck"] == [{"id": stuck, "title": "impossible task"}]
    text = sgf(project, "status").stdout
    assert "1 needing a human" in text
    assert f"  {stuck}  impossible task" in text


@pytest.mark.process
def test_status_names_quarantined_commits_to_review(project: Path, sgf: Run) -> None:
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, check=True
    ).stdout.strip()
    ref = "refs/sgf/quarantine/build-20260101T000000"
    subprocess.run(["git", "update-ref", ref, head], cwd=project, check=True)
    done = sgf(project, "status", "--json")
    assert done.returncode == 0, done.stderr
    [warning] = json.loads(done.stdout)["warnings"]
    assert f"quarantined commits on {ref}: review them with `git log --stat {ref}`" in warning
    plain = sgf(project, "status")
    assert f"git log --stat {ref}" in plain.stdout


def test_status_counts_what_the_guardrails_did_from_the_record() -> None:
    from sgf.status import guardrails

    events: list[dict[str, Any]] = [
        {"event": "iteration", "guardrails": [{"hook": "guard", "rule": "force-push"}]},
        {
            "event": "iteration",
            "guardrails": [
                {"hook": "stop", "released": False, "blocks": 1},
                {"hook": "stop", "released": True, "blocks": 1},
                "junk",
            ],
        },
        {"event": "merge_check", "passed": False},  # an older ralph's record
        {"event": "check", "verdict": "PARTIAL", "landed": False},
        {"event": "check", "verdict": "PASS", "landed": True},
        {"event": "iteration", "guardrails": "junk"},
    ]
    assert guardrails(events) == "1 refused, 1 sent back, 1 let go, 2 check failed"
    assert guardrails([{"event": "iteration"}]) == ""

"""The loop's misbehaving agents: watchdogs, usage limits, signals, leaks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

Run = Callable[..., subprocess.CompletedProcess[str]]
Script = Callable[..., str]
Git = Callable[..., str]
WaitFor = Callable[..., None]
Spawn = Callable[..., "subprocess.Popen[str]"]

DONE = [["touch", ".ralph-complete"], ["result"]]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[1].startswith("Z"))


def test_agent_hanging_after_result_is_stopped_and_the_loop_goes_on(
    ralph: Run, script: Script
) -> None:
    started = time.monotonic()
    done = ralph("-a", "2", script(_1=[["result"], ["hang"]], _2=DONE))
    assert done.returncode == 0, done.stdout
    assert "agent still running 0.5 s after its result: stopped" in done.stdout
    assert time.monotonic() - started < 20


def test_background_child_holding_stdout_after_result_is_killed(
    ralph: Run, script: Script, tmp_path: Path
) -> None:
    pidfile = tmp_path / "bg.pid"
    steps = [["result"], ["spawn_sleeper", str(pidfile)]]
    done = ralph("-a", "1", script(default=steps))
    assert done.returncode == 2
    assert "after its result" in done.stdout
    assert not alive(int(pidfile.read_text()))


def test_silent_agent_is_stopped_by_the_idle_watchdog(ralph: Run, script: Script) -> None:
    done = ralph("-a", "--idle-timeout", "0.5", "2", script(_1=[["say", "x"], ["hang"]], _2=DONE))
    assert done.returncode == 0
    assert "warning: no output from the agent for 0.5 s: stopped it" in done.stdout


def test_agent_ignoring_sigint_and_sigterm_is_killed(ralph: Run, script: Script) -> None:
    steps = [["ignore", "SIGINT"], ["ignore", "SIGTERM"], ["say", "stubborn"], ["hang"]]
    # the idle timeout leaves the agent's interpreter time to start and ignore the signals
    done = ralph("-a", "--idle-timeout", "2", "1", script(default=steps))
    assert done.returncode == 1  # its only iteration failed
    assert "every iteration failed (1); the last: the watchdog stopped the agent" in done.stderr
    assert "no output from the agent" in done.stdout
    assert "exit -9" in done.stdout
    assert "ignored SIGINT" in done.stdout
    assert "ignored SIGTERM" in done.stdout


def test_rejected_usage_limit_waits_for_reset_and_reruns_the_iteration(
    ralph: Run, script: Script
) -> None:
    limited = [
        ["rate_limit", {"status": "rejected", "resets_in": 1.0}],
        [
            "result",
            {"is_error": True, "api_error_status": 429, "result": "You've hit your session limit"},
        ],
    ]
    done = ralph("-a", "1", script(_1=limited, _2=[["say", "second run"], *DONE]))
    assert done.returncode == 0, done.stdout
    assert "usage limit reached; it resets at" in done.stdout
    assert "retrying the same iteration" in done.stdout
    assert "Iteration 2" not in done.stdout  # the retry did not count


def test_recorded_rejection_is_recognised(ralph: Run, script: Script, tmp_path: Path) -> None:
    recording = Path(__file__).parent / "fixtures" / "stream" / "rate-limit-rejected.jsonl"
    lines = []
    for line in recording.read_text().splitlines():  # move the reset time to just now
        event = json.loads(line)
        if event["type"] == "rate_limit_event":
            event["rate_limit_info"]["resetsAt"] = int(time.time())
        lines.append(json.dumps(event))
    replay = tmp_path / "rejected.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    done = ralph("-a", "1", script(_1=[["replay", str(replay)], ["exit", 1]], _2=DONE))
    assert done.returncode == 0, done.stdout
    assert "usage limit reached" in done.stdout


def test_allowed_rate_limit_events_do_not_pause(ralph: Run, script: Script) -> None:
    steps = [["rate_limit", {"status": "allowed_warning", "resets_in": 3600}], *DONE]
    started = time.monotonic()
    done = ralph("-a", "1", script(default=steps))
    assert done.returncode == 0
    assert "usage limit" not in done.stdout
    assert time.monotonic() - started < 10


def test_429_without_reset_backs_off_then_counts_as_failed(
    ralph: Run, script: Script, project: Path
) -> None:
    recording = Path(__file__).parent / "fixtures" / "stream" / "api-key-429.jsonl"
    steps = [["replay", str(recording)], ["exit", 1]]
    count = project.parent / "agent-runs"
    done = ralph("-a", "1", script(default=steps), env={"FAKE_AGENT_COUNT": str(count)})
    assert done.returncode == 1  # failed: no "run again" advice
    assert "every iteration failed (1); the last: the agent reported an error" in done.stderr
    assert done.stdout.count("rate limited (429) with no reset time") == 2  # RALPH_BACKOFF_TRIES
    assert "still rate limited after 2 retries" in done.stdout
    assert count.read_text() == "3"


def test_usage_limit_that_cannot_be_waited_out_exits_1(ralph: Run, script: Script) -> None:
    steps = [["rate_limit", {"status": "rejected", "errorCode": "credits_required"}], ["result"]]
    done = ralph("-a", "1", script(default=steps))
    assert done.returncode == 1
    assert "usage limit that waiting cannot lift" in done.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_stops_the_agent_pushes_its_commits_and_exits_130(
    project: Path,
    remote: Path,
    ralph_env: dict[str, str],
    script: Script,
    git: Git,
    wait_for: WaitFor,
    tmp_path: Path,
    sig: signal.Signals,
    spawn_ralph: Spawn,
) -> None:
    ready = tmp_path / "ready"
    steps = [["commit", "a.txt", "feat: interrupted"], ["ready", str(ready)], ["hang"]]
    ralph = spawn_ralph(project, ralph_env, "-a", "5", script(default=steps))
    wait_for(ready.exists, what="the agent to start")
    agent = int(ready.read_text())
    ralph.send_signal(sig)
    out, err = ralph.communicate(timeout=30)
    assert ralph.returncode == 130, err
    assert "Interrupted." in out
    assert "Iteration 2" not in out
    assert not alive(agent)
    assert git(remote, "log", "-1", "--format=%s", "main") == "feat: interrupted"


def test_sigint_during_usage_limit_wait_exits_130(
    project: Path,
    ralph_env: dict[str, str],
    script: Script,
    wait_for: WaitFor,
    spawn_ralph: Spawn,
) -> None:
    steps = [["rate_limit", {"status": "rejected", "resets_in": 3600}], ["result"]]
    ralph = spawn_ralph(project, ralph_env, "-a", "1", script(default=steps))
    assert ralph.stdout is not None
    for line in ralph.stdout:
        if "waiting" in line:
            break
    ralph.send_signal(signal.SIGINT)
    ralph.communicate(timeout=30)
    assert ralph.returncode == 130


def test_two_hundred_iterations_leak_no_fds_or_processes(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    no_leaks: None,
) -> None:
    from ralph.cli import main

    agent = tmp_path / "quick.sh"
    agent.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        'echo \'{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}\'\n'
        'echo \'{"type":"result","num_turns":1}\'\n'
        "sleep 30 >/dev/null 2>&1 &\n"  # an orphan in the agent's group: killed with it
        f"echo $! >> {tmp_path / 'orphans'}\n"
    )
    agent.chmod(0o755)
    monkeypatch.chdir(project)
    for name, value in {"RALPH_RESULT_GRACE": "5", "RALPH_STOP_GRACE": "2"}.items():
        monkeypatch.setenv(name, value)
    fds = len(os.listdir("/proc/self/fd"))
    code = main(
        [
            "-a",
            "--sandbox",
            "none",
            "--command",
            str(agent),
            "--max-iterations",
            "200",
            "200",
            "go on",
        ]
    )
    assert code == 2
    out = capsys.readouterr().out
    assert out.count("Iteration 200 done") == 1
    assert len(os.listdir("/proc/self/fd")) == fds
    orphans = [int(pid) for pid in (tmp_path / "orphans").read_text().split()]
    assert len(orphans) == 200
    assert not [pid for pid in orphans if alive(pid)]


def test_stderr_output_keeps_the_idle_watchdog_quiet(ralph: Run, script: Script) -> None:
    steps = [
        ["stderr", "a"],
        ["sleep", 0.8],
        ["stderr", "b"],
        ["sleep", 0.8],
        ["stderr", "c"],
        ["touch", ".ralph-complete"],
        ["result"],
    ]
    done = ralph("-a", "--idle-timeout", "1.5", "1", script(default=steps))
    assert done.returncode == 0, done.stdout
    assert "no output from the agent" not in done.stdout
    assert done.stderr == "a\nb\nc\n"


def test_a_limit_that_outlives_its_reset_time_backs_off_instead_of_spinning(
    ralph: Run, script: Script, project: Path
) -> None:
    steps = [["rate_limit", {"status": "rejected", "resets_in": -100}], ["result"]]
    count = project.parent / "agent-runs"
    done = ralph("-a", "1", script(default=steps), env={"FAKE_AGENT_COUNT": str(count)})
    assert done.returncode == 2
    assert done.stdout.count("the reset time has passed but the limit holds") == 2
    assert "still rate limited after 2 retries" in done.stdout
    assert count.read_text() == "3"


def test_kill_9_of_ralph_leaves_a_host_agent_that_the_next_start_stops(
    project: Path,
    ralph_env: dict[str, str],
    script: Script,
    wait_for: WaitFor,
    tmp_path: Path,
    spawn_ralph: Spawn,
    ralph: Run,
) -> None:
    """A `kill -9`ed ralph cannot stop its agent; the next ralph start does."""
    ready = tmp_path / "ready"
    steps = [["ready", str(ready)], ["hang"]]
    first = spawn_ralph(project, ralph_env, "-a", "1", script(_1=steps, default=[["result"]]))
    wait_for(ready.exists, what="the agent to start")
    agent = int(ready.read_text())
    first.kill()
    first.communicate(timeout=30)
    assert alive(agent)  # nothing could stop it
    done = ralph("-a", "1", "anything at all")
    assert "removed leftover host agent" in done.stdout, done.stdout + done.stderr
    wait_for(lambda: not alive(agent), what="the orphaned agent to be stopped")

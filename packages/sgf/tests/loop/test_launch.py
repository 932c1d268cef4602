"""Stage commands end to end through the real sgf with a recording fake ralph."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sgf import config as sgf_config
from sgf import resources, stacks
from sgf.stages import Stage

from ..conftest import BIN, alive

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

REVIEWS = [
    "--review", "feature", "--reviewers", "3",
    "--review-focus", str(resources.path("prompts", "review-focus.md")),
]  # fmt: skip

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Git = Callable[..., str]
Spawn = Callable[..., "subprocess.Popen[str]"]


def loop_id_of(record: dict[str, Any]) -> str:
    argv: list[str] = record["argv"]
    return argv[argv.index("--loop-id") + 1]


@pytest.mark.parametrize(
    ("args", "afk", "stage", "count"),
    [
        (["spec"], False, "spec", "1"),
        (["build"], False, "build", "25"),
        (["build", "-a", "3"], True, "build", "3"),
        (["verify"], True, "verify", "25"),
        (["test-plan", "2"], True, "test-plan", "2"),
        (["test", "-a"], True, "test", "25"),
        (["issues", "log"], False, "issues-log", "1"),
        (["issues", "plan", "-a", "4"], True, "issues-plan", "4"),
    ],
)
def test_each_stage_runs_ralph_with_the_contract_argv(
    project: Path, sgf: Run, fake_ralph: Any, args: list[str], afk: bool, stage: str, count: str
) -> None:
    done = sgf(project, *args, env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    record = fake_ralph.calls()
    loop_id = loop_id_of(record)
    assert loop_id.startswith(f"{stage}-")
    assert len(loop_id) == len(stage) + 16
    prompt_name = "issues" if stage == "issues-log" else stage
    prompt = project / ".sgf/prompts/.assembled" / f"{prompt_name}.md"
    loaded = sgf_config.load(project)
    expected = [
        *(["-a"] if afk else []),
        "--loop-id", loop_id,
        "--template", loaded.docker_template,  # the project's image
        "--auto-push", "true",
        "--max-iterations", "100",
        "--sandbox", "docker",
        "--checks", ",".join(Stage(stage).spec.stop_checks) or "none",  # the stage's checklist
        *[f for host in stacks.get(loaded.stack).registries for f in ("--allow", host)],
        *(REVIEWS if stage == "build" else []),  # the build loop reviews by default
        count, str(prompt),
    ]  # fmt: skip
    assert record["argv"] == expected
    assert record["cwd"] == str(project)
    assert prompt.is_file()
    assert "fake ralph: done" in done.stdout
    assert (
        "session complete" if stage in ("spec", "issues-log") else "loop complete"
    ) in done.stderr


def test_build_with_spec_override_options_and_config_keys(
    project: Path, sgf: Run, fake_ralph: Any, git: Git
) -> None:
    (project / "specs/auth.md").write_text("# Auth\n")
    config = project / ".sgf/config.toml"
    text = config.read_text().replace("max_iterations = 100", "max_iterations = 5")
    config.write_text(text + 'sandbox = "none"\nnetwork = "host"\n')
    git(project, "commit", "-qam", "config")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "spec")
    done = sgf(
        project, "build", "--spec", "auth", "-a", "--no-push", "--template", "t:1", "9",
        env=fake_ralph.env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    argv = fake_ralph.calls()["argv"]
    assert loop_id_of(fake_ralph.calls()).startswith("build-auth-")
    assert argv[argv.index("--template") + 1] == "t:1"
    assert argv[argv.index("--auto-push") + 1] == "false"
    assert argv[argv.index("--max-iterations") + 1] == "9"  # N above the limit: never clamped
    assert argv[argv.index("--sandbox") + 1] == "none"
    assert argv[argv.index("--network") + 1] == "host"
    assembled = (project / ".sgf/prompts/.assembled/build.md").read_text()
    assert "pn claim-next -t task -t chore --spec auth --json" in assembled


def test_unknown_spec_is_a_clear_error_and_nothing_runs(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    done = sgf(project, "build", "--spec", "nope", env=fake_ralph.env())
    assert done.returncode == 1
    assert (
        done.stderr == "error: no spec specs/nope.md; existing specs: none yet (run `sgf spec`)\n"
    )
    assert not fake_ralph.record.exists()


@pytest.mark.parametrize("stem", ["../AGENTS", "../specs/README", ".hidden"])
def test_a_spec_stem_that_is_not_a_plain_name_is_refused(
    project: Path, sgf: Run, fake_ralph: Any, stem: str
) -> None:
    (project / "specs/.hidden.md").write_text("# hidden\n")  # untracked: refused before the tree
    done = sgf(project, "build", "--spec", stem, env=fake_ralph.env())
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: no spec specs/{stem}.md; existing specs:")
    assert not fake_ralph.record.exists()
    assert [p.name for p in (project / ".sgf/run").glob("*")] == []


def test_not_initialised_is_a_clear_error(repo: Path, sgf: Run, fake_ralph: Any) -> None:
    done = sgf(repo, "build", env=fake_ralph.env())
    assert done.returncode == 1
    assert "run `sgf init` first" in done.stderr


def test_broken_prompt_stops_the_launch_naming_file_and_line(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    (project / ".sgf/prompts/verify.md").write_text("ok\n{{ speck }}\n")
    done = sgf(project, "verify", env=fake_ralph.env())
    assert done.returncode == 1
    assert "error: .sgf/prompts/verify.md:2: 'speck' is undefined" in done.stderr
    assert not fake_ralph.record.exists()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (0, "loop complete"),
        (1, "ralph stopped with an error"),
        (2, "iterations exhausted: work may remain; run `sgf build` again"),
        (130, "interrupted"),
        (7, "unexpected code 7"),
    ],
)
def test_sgf_exits_with_ralphs_code_and_says_what_it_means(
    project: Path, sgf: Run, fake_ralph: Any, code: int, message: str
) -> None:
    done = sgf(project, "build", "-a", env=fake_ralph.env(FAKE_RALPH_EXIT=str(code)))
    assert done.returncode == code
    assert message in done.stderr


@pytest.mark.parametrize("code", ["0", "1"])
def test_pid_file_holds_sgfs_pid_while_ralph_runs_and_is_removed_after(
    project: Path, sgf: Run, fake_ralph: Any, code: str
) -> None:
    done = sgf(project, "build", env=fake_ralph.env(FAKE_RALPH_EXIT=code))
    record = fake_ralph.calls()
    loop_id = loop_id_of(record)
    assert list(record["pid_files"]) == [f"{loop_id}.pid"]
    sgf_pid, sgf_start = map(int, record["pid_files"][f"{loop_id}.pid"].split())
    assert sgf_start > 0  # the process start time makes a reused PID a dead loop
    assert sgf_pid != record["pid"]  # sgf's own PID, not ralph's
    assert list((project / ".sgf/run").glob("*.pid")) == []
    assert done.returncode == int(code)


def test_output_is_teed_to_the_log_and_history_records_the_outcome(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    done = sgf(project, "verify", env=fake_ralph.env(FAKE_RALPH_EXIT="2"))
    loop_id = loop_id_of(fake_ralph.calls())
    log = (project / ".sgf/logs" / f"{loop_id}.log").read_text()
    assert "fake ralph: iteration 1 of 25\nfake ralph: done\n" in log
    assert "fake ralph: iteration 1 of 25\nfake ralph: done\n" in done.stdout
    assert f"(log: .sgf/logs/{loop_id}.log)" in done.stderr
    history = (project / ".sgf/logs/history.jsonl").read_text().splitlines()
    last = json.loads(history[-1])
    assert (last["loop_id"], last["exit_code"], last["outcome"]) == (loop_id, 2, "exhausted")


def test_missing_ralph_is_an_error_before_anything_launches(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    done = sgf(project, "build", env={**fake_ralph.env(), "SGF_RALPH": str(project / "nope")})
    assert done.returncode == 1
    assert "SGF_RALPH names no executable" in done.stderr
    assert list((project / ".sgf/run").glob("*")) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_reaches_ralph_once_and_sgf_exits_130_leaving_nothing(
    project: Path,
    spawn_sgf: Spawn,
    fake_ralph: Any,
    tmp_path: Path,
    sig: signal.Signals,
    wait_for: Callable[..., None],
) -> None:
    ready = tmp_path / "ready"
    child = spawn_sgf(project, "build", "-a", env=fake_ralph.env(FAKE_RALPH_READY=str(ready)))
    wait_for(ready.exists, 30, f"{ready} to appear")
    ralph_pid = int(ready.read_text())
    assert len(list((project / ".sgf/run").glob("*.pid"))) == 1
    child.send_signal(sig)
    _out, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert fake_ralph.calls()["signals"] == [sig.name]
    assert "interrupted" in err
    assert not alive(ralph_pid)
    assert list((project / ".sgf/run").glob("*.pid")) == []


@pytest.fixture
def build_prompt(project: Path, sgf: Run, fake_ralph: Any, git: Git) -> Path:
    """The shared tree's build prompt, assembled for spec auth by a loop that is still running
    (this test process stands in for it); spec billing exists too."""
    for stem in ("auth", "billing"):
        (project / "specs" / f"{stem}.md").write_text(f"# {stem}\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "specs")
    assert sgf(project, "build", "--spec", "auth", env=fake_ralph.env()).returncode == 0
    (project / ".sgf/run/build-auth-20260101T000000.pid").write_text(f"{os.getpid()}\n")
    return project / ".sgf/prompts/.assembled/build.md"


def test_a_second_loop_of_a_running_stage_reads_a_prompt_of_its_own(
    project: Path, sgf: Run, fake_ralph: Any, build_prompt: Path
) -> None:
    """ralph re-reads its prompt every iteration: a second build loop for another spec beside
    a running one gets a prompt file of its own (as a --parallel loop does), so the running
    loop's prompt never changes under it; one line says it runs beside that loop."""
    before = build_prompt.read_text()

    other = sgf(project, "build", "--spec", "billing", env=fake_ralph.env())
    assert other.returncode == 0, other.stderr
    loop_id = loop_id_of(fake_ralph.calls())
    assert loop_id.startswith("build-billing-")
    own = project / ".sgf/prompts/.assembled" / f"{loop_id}.md"
    assert fake_ralph.calls()["argv"][-1] == str(own)
    assert "billing" in own.read_text()
    assert build_prompt.read_text() == before
    said = [line for line in other.stderr.splitlines() if "is running in this project" in line]
    assert said == [
        "sgf: loop build-auth-20260101T000000 is running in this project; this one runs "
        "beside, in a workspace of its own, and its commits land on the same branch, one loop "
        "at a time"
    ]

    verify = sgf(project, "verify", env=fake_ralph.env())  # another stage: its usual file
    assert verify.returncode == 0, verify.stderr
    assert fake_ralph.calls()["argv"][-1] == str(project / ".sgf/prompts/.assembled/verify.md")


def test_a_spec_session_beside_a_running_loop_says_what_it_shares(
    project: Path, sgf: Run, fake_ralph: Any, build_prompt: Path
) -> None:
    done = sgf(project, "spec", env=fake_ralph.env())
    assert done.returncode == 0, done.stderr
    assert (
        "sgf: loop build-auth-20260101T000000 is running in this project; this one runs beside"
    ) in done.stderr
    assert "a running loop may claim each task this session plans once it is ready" in done.stderr


def test_an_isolated_loop_reads_a_prompt_of_its_own(
    project: Path, sgf: Run, fake_ralph: Any, build_prompt: Path
) -> None:
    """An isolated loop (--worktree, kept for older scripts) reads a prompt file of its own,
    and never changes the shared prompt."""
    before = build_prompt.read_text()

    isolated = sgf(project, "build", "--spec", "billing", "--worktree", env=fake_ralph.env())
    assert isolated.returncode == 0, isolated.stderr
    argv = fake_ralph.calls()["argv"]
    loop_id = loop_id_of(fake_ralph.calls())
    assert argv[-1] == str(project / ".sgf/prompts/.assembled" / f"{loop_id}.md")
    assert fake_ralph.calls()["cwd"] == str(project)  # ralph gives the agent its workspace
    assert build_prompt.read_text() == before


REAL_RALPH = BIN / "ralph"


@pytest.mark.parametrize(
    ("args", "config", "said"),
    [
        (["--max-time", "5x"], "", "Invalid value for --max-time: '5x' is not a duration"),
        ([], 'max_time = "90 minutes"\n', "Invalid value for --max-time: '90 minutes'"),
        ([], 'memory = "lots"\n', "Invalid value for --memory: 'lots': a size like 512m or 8g"),
    ],
)
def test_options_ralph_refuses_are_refused_before_the_loop_exists(
    project: Path, sgf: Run, fake_ralph: Any, args: list[str], config: str, said: str
) -> None:
    """ralph owns its option grammar: sgf asks the real ralph (`--check-options`) before the
    loop gets an id, a prompt, a log, a PID file, a run record or a row in history."""
    toml = project / ".sgf/config.toml"
    toml.write_text(toml.read_text() + config)
    before = sorted(p.relative_to(project) for p in (project / ".sgf").rglob("*"))

    done = sgf(
        project, "build", "-a", *args, "3", env={**fake_ralph.env(), "SGF_RALPH": str(REAL_RALPH)}
    )

    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: ralph refuses this loop's options: {said}"), line
    assert line.endswith("(from the command line or .sgf/config.toml); no loop was started")
    assert sorted(p.relative_to(project) for p in (project / ".sgf").rglob("*")) == before
    assert not fake_ralph.record.exists()


def test_a_refusal_is_ralphs_last_line_in_its_own_words(
    project: Path, sgf: Run, fake_ralph: Any
) -> None:
    refused = "Invalid value for --network: 'no such network'"
    done = sgf(project, "build", "-a", "2", env=fake_ralph.env(FAKE_RALPH_REFUSE=refused))
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: ralph refuses this loop's options: {refused} (")
    assert list((project / ".sgf/logs").glob("*.log")) == []
    assert not (project / ".sgf/logs/history.jsonl").exists()

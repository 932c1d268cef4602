"""The command-line contract, through the real `ralph` program and a fake agent on the host."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ralph.cli import cli, main, split_agent_args

Run = Callable[..., subprocess.CompletedProcess[str]]
Script = Callable[..., str]
Git = Callable[..., str]

DONE = [["say", "finished"], ["touch", ".ralph-complete"], ["result"]]
WORK = [["say", "working"], ["result"]]


@pytest.mark.process
def test_sentinel_found_exits_0(ralph: Run, script: Script) -> None:
    done = ralph("-a", "3", script(default=DONE))
    assert done.returncode == 0, done.stderr
    assert "ralph complete after 1 iteration(s)" in done.stdout


@pytest.mark.process
@pytest.mark.parametrize("where", [".ralph-complete", "a/.ralph-complete", "a/b/.ralph-complete"])
def test_sentinel_is_found_down_to_depth_2_and_deleted(
    ralph: Run, script: Script, project: Path, where: str
) -> None:
    done = ralph("-a", "3", script(_1=WORK, _2=[["touch", where], ["result"]]))
    assert done.returncode == 0, done.stderr
    assert "Iteration 2 of 3" in done.stdout
    assert "Iteration 3" not in done.stdout
    assert not (project / where).exists()


@pytest.mark.process
def test_sentinel_at_depth_3_is_not_completion(ralph: Run, script: Script) -> None:
    done = ralph("-a", "2", script(default=[["touch", "a/b/c/.ralph-complete"], ["result"]]))
    assert done.returncode == 2


@pytest.mark.process
@pytest.mark.parametrize("content", ["", "mine\n"])
def test_stale_sentinel_is_deleted_before_the_first_iteration(
    ralph: Run, script: Script, project: Path, content: str, git: Git
) -> None:
    # committed by an agent's `git add -A` once: every workspace starts with it
    (project / "a").mkdir()
    (project / "a" / ".ralph-complete").write_text(content)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a stale sentinel")
    done = ralph("-a", "--loop-id", "mine", "1", script(default=WORK))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "ralph complete" not in done.stdout


@pytest.mark.process
def test_sentinel_naming_this_loop_ends_it(ralph: Run, script: Script, project: Path) -> None:
    own = [["write", "a/.ralph-complete", "$RALPH_LOOP_ID"], ["result"]]
    done = ralph("-a", "--loop-id", "build-1", "3", script(_1=WORK, _2=own))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ralph complete after 2 iteration(s)" in done.stdout
    assert not (project / "a" / ".ralph-complete").exists()


@pytest.mark.process
def test_another_loops_sentinel_is_neither_deleted_nor_ends_this_loop(
    ralph: Run, script: Script, project: Path, git: Git
) -> None:
    # another loop's, committed once by an agent's `git add -A`: not this loop's business
    (project / "a").mkdir()
    (project / "a" / ".ralph-complete").write_text("issues-plan-0\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "another loop's sentinel")
    theirs = [["write", ".ralph-complete", "issues-plan-1"], ["say", "working"], ["result"]]
    done = ralph("-a", "--loop-id", "build-1", "3", script(_1=theirs, default=WORK))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Iteration 3 of 3" in done.stdout
    assert (project / "a" / ".ralph-complete").read_text() == "issues-plan-0\n"


@pytest.mark.process
def test_own_sentinel_ends_the_loop_and_the_humans_tree_never_sees_it(
    ralph: Run, script: Script, project: Path, git: Git
) -> None:
    own = [["write", "a/b/.ralph-complete", "$RALPH_LOOP_ID"], ["result"]]
    done = ralph("-a", "--loop-id", "build-1", "3", script(default=own))
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (project / "a").exists()
    assert git(project, "status", "--porcelain") == ""


@pytest.mark.process
@pytest.mark.parametrize(("host", "actor"), [({}, "build-1"), ({"PN_ACTOR": "alice"}, "alice")])
def test_agent_gets_its_loop_id_and_a_pn_actor(
    ralph: Run, script: Script, host: dict[str, str], actor: str
) -> None:
    steps = [["env", "RALPH_LOOP_ID"], ["env", "PN_ACTOR"], ["result"]]
    done = ralph("-a", "--loop-id", "build-1", "1", script(default=steps), env=host)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "env RALPH_LOOP_ID=build-1" in done.stdout
    assert f"env PN_ACTOR={actor}" in done.stdout


@pytest.mark.process
def test_iterations_exhausted_exits_2(ralph: Run, script: Script) -> None:
    done = ralph("-a", "2", script(default=WORK))
    assert done.returncode == 2
    assert done.stdout.count("working") == 2
    assert "ralph reached max iterations (2)" in done.stdout


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-such-flag"], "No such option"),
        (["--auto-push", "maybe"], "maybe"),
        (["--max-iterations", "0"], "max-iterations"),
        (["--sandbox", "vm"], "vm"),
        (["0", "inline text"], "at least 1"),
        (["x", "y"], "whole number"),
        (["1", "a", "b"], "at most ITERATIONS and PROMPT"),
        (["--idle-timeout", "0"], "idle-timeout"),
        (["--allow", "1.1.1.1", "1", "do it"], "allow host names, not IP addresses"),
        (["--allow", "https://pypi.org", "1", "do it"], "give a host name"),
    ],
)
def test_usage_errors_exit_1_not_2(ralph: Run, args: list[str], message: str) -> None:
    done = ralph("-a", *args)
    assert done.returncode == 1
    assert message in done.stderr
    assert done.stderr.startswith("error: ")


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-time", "5x"], "Invalid value for --max-time: '5x' is not a duration"),
        (["--memory", "lots"], "Invalid value for --memory: 'lots'"),
        (["--checks", "tsk"], "Invalid value for --checks: 'tsk'"),
        (["--agent", "nobody"], "Invalid value for '--agent'"),
        (["--no-such-flag"], "No such option '--no-such-flag'"),
    ],
)
def test_check_options_refuses_in_one_line_and_starts_nothing(
    ralph: Run, project: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    record = tmp_path / "run.jsonl"
    done = ralph("--check-options", "-a", "--record", str(record), *args, "3", "unwritten.md")
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {message}"), line
    assert done.stdout == ""
    assert not record.exists()


@pytest.mark.process
def test_check_options_accepts_a_good_line_without_a_prompt_or_a_run(
    ralph: Run, script: Script, project: Path, tmp_path: Path
) -> None:
    record, count = tmp_path / "run.jsonl", tmp_path / "agent-runs"
    args = ["-a", "--max-time", "90m", "--memory", "512m", "--record", str(record)]
    done = ralph(
        "--check-options", *args, "3", "unwritten.md", env={"FAKE_AGENT_COUNT": str(count)}
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not record.exists()
    assert not count.exists()  # no agent ran


@pytest.mark.process
def test_missing_default_prompt_file_exits_1(ralph: Run) -> None:
    done = ralph("-a", "3")
    assert done.returncode == 1
    assert "prompt file 'prompt.md' not found" in done.stderr


@pytest.mark.process
def test_single_numeric_positional_is_iterations_with_default_prompt(
    ralph: Run, script: Script, project: Path
) -> None:
    (project / "prompt.md").write_text(script(default=WORK))
    done = ralph("-a", "2")
    assert done.returncode == 2
    assert "Iteration 2 of 2" in done.stdout


@pytest.mark.process
def test_single_non_numeric_positional_is_the_prompt(ralph: Run, project: Path) -> None:
    (project / "task.md").write_text("not json: default behaviour")
    done = ralph("-a", "task.md")
    assert done.returncode == 2
    assert "Iteration 1 of 1" in done.stdout
    assert "hello from the fake agent" in done.stdout


@pytest.mark.process
def test_file_prompt_is_sent_as_its_contents_and_inline_text_as_is(
    ralph: Run, script: Script, project: Path
) -> None:
    text = script(default=[["prompt_size"], ["result"]])
    (project / "p.md").write_text(text)
    from_file = ralph("-a", "1", "p.md")
    inline = ralph("-a", "1", text)
    assert f"prompt bytes: {len(text)}" in from_file.stdout
    assert f"prompt bytes: {len(text)}" in inline.stdout


@pytest.mark.process
def test_prompt_of_several_hundred_kb_goes_through_stdin(ralph: Run, project: Path) -> None:
    text = json.dumps({"default": [["prompt_size"], ["result"]], "pad": "x" * 600_000})
    (project / "big.md").write_text(text)
    done = ralph("-a", "1", "big.md")
    assert done.returncode == 2, done.stderr
    assert f"prompt bytes: {len(text)}" in done.stdout


@pytest.mark.process
def test_prompt_bytes_reach_the_agent_exactly_even_when_not_utf8(
    ralph: Run, script: Script, project: Path
) -> None:
    data = script(default=[["prompt_size"], ["result"]]).encode() + b"\xff\xfe latin-1: \xe9"
    (project / "odd.md").write_bytes(data)
    done = ralph("-a", "1", "odd.md")
    assert f"prompt bytes: {len(data)} sha256: {hashlib.sha256(data).hexdigest()}" in done.stdout


@pytest.mark.process
def test_log_file_directories_are_created_and_a_bad_path_is_exit_1(
    ralph: Run, script: Script, tmp_path: Path
) -> None:
    log = tmp_path / "logs" / "deep" / "loop.log"
    assert ralph("-a", "--log-file", str(log), "1", script(default=WORK)).returncode == 2
    assert "working" in log.read_text()
    (tmp_path / "file").write_text("")
    done = ralph("-a", "--log-file", str(tmp_path / "file" / "x.log"), "1", "say hi")
    assert done.returncode == 1
    assert "--log-file" in done.stderr


@pytest.mark.process
def test_iterations_above_max_are_clamped_with_a_warning(ralph: Run, script: Script) -> None:
    done = ralph("-a", "--max-iterations", "2", "5", script(default=WORK))
    assert done.returncode == 2
    assert "Reducing iterations from 5 to max allowed (2)" in done.stdout
    assert "Iteration 2 of 2" in done.stdout
    assert "Iteration 3" not in done.stdout


@pytest.mark.process
def test_max_iterations_from_the_environment(ralph: Run, script: Script) -> None:
    done = ralph("-a", "5", script(default=WORK), env={"RALPH_MAX_ITERATIONS": "1"})
    assert "Reducing iterations from 5 to max allowed (1)" in done.stdout


@pytest.mark.process
def test_banner_names_iteration_and_loop_id(ralph: Run, script: Script) -> None:
    done = ralph("-a", "--loop-id", "build-20260226T143000", "2", script(default=WORK))
    assert "Iteration 1 of 2 [build-20260226T143000]" in done.stdout
    assert "Iteration 2 of 2 [build-20260226T143000]" in done.stdout


@pytest.mark.process
def test_agent_gets_afk_flags_and_extra_arguments_after_double_dash(
    ralph: Run, script: Script
) -> None:
    done = ralph("-a", "1", script(default=[["argv"], ["result"]]), "--", "--model", "sonnet")
    argv = json.loads(done.stdout.split("argv: ")[1].splitlines()[0])
    assert argv == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        "--model",
        "sonnet",
    ]


@pytest.mark.process
def test_log_file_gets_a_plain_copy(ralph: Run, script: Script, tmp_path: Path) -> None:
    log = tmp_path / "loop.log"
    steps = [
        ["say", "hi"],
        ["tool", "Bash", {"command": "ls"}],
        ["stderr", "a warning"],
        ["result"],
    ]
    done = ralph("-a", "--log-file", str(log), "--loop-id", "L1", "1", script(default=steps))
    text = log.read_text()
    assert "Iteration 1 of 1 [L1]" in text
    assert "-> Bash(ls)" in text
    assert "hi\n" in text
    assert "a warning" in text
    assert "\x1b[" not in text
    assert "\x1b[" not in done.stdout


@pytest.mark.process
def test_summary_line_reports_duration_turns_tokens_cost_and_status(
    ralph: Run, script: Script
) -> None:
    result = {
        "num_turns": 7,
        "total_cost_usd": 0.25,
        "usage": {"input_tokens": 12_345, "output_tokens": 34},
    }
    done = ralph("-a", "1", script(default=[["result", result]]))
    line = next(x for x in done.stdout.splitlines() if x.startswith("Iteration 1 done: "))
    # the figures in the form every view shows them (format.py, sgf's figures.py)
    assert line.endswith("7 turns · 12.3k in / 34 out tokens · $0.2500 · exit 0")


@pytest.mark.process
def test_agent_crash_without_result_is_a_warning_and_the_loop_goes_on(
    ralph: Run, script: Script
) -> None:
    done = ralph("-a", "2", script(_1=[["say", "dying"], ["exit", 3]], _2=DONE))
    assert done.returncode == 0
    assert "warning: agent exited (status 3) without a result" in done.stdout


@pytest.mark.process
def test_agent_error_result_is_shown_as_a_warning(ralph: Run, script: Script) -> None:
    done = ralph(
        "-a",
        "1",
        script(
            default=[
                ["result", {"subtype": "error_max_turns", "errors": ["max turns"], "result": None}],
            ]
        ),
    )
    assert "warning: agent reported an error: max turns" in done.stdout


@pytest.mark.process
def test_missing_agent_executable_exits_1(ralph: Run, script: Script) -> None:
    done = ralph("-a", "--command", "/nonexistent/agent", "1", script(default=WORK))
    assert done.returncode == 1
    assert "agent executable '/nonexistent/agent' not found" in done.stderr


def test_help_exits_0_and_lists_the_options() -> None:
    result = CliRunner().invoke(cli, ["--help"], obj={"env": {}, "agent_args": []})
    assert result.exit_code == 0
    for flag in (
        "--afk",
        "--loop-id",
        "--template",
        "--auto-push",
        "--max-iterations",
        "--command",
        "--sandbox",
        "--network",
        "--log-file",
        "--idle-timeout",
    ):
        assert flag in result.output


def test_main_maps_usage_errors_to_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus"]) == 1
    assert "No such option '--bogus'" in capsys.readouterr().err


def test_split_agent_args() -> None:
    assert split_agent_args(["-a", "1", "p", "--", "--x", "--"]) == (
        ["-a", "1", "p"],
        ["--x", "--"],
    )
    assert split_agent_args(["1"]) == (["1"], [])


def test_help_names_the_environment_variable_of_each_configurable_option() -> None:
    result = CliRunner().invoke(cli, ["--help"], obj={"env": {}, "agent_args": []})
    flat = " ".join(result.output.split())
    for name in (
        "RALPH_TEMPLATE",
        "RALPH_AUTO_PUSH",
        "RALPH_MAX_ITERATIONS",
        "RALPH_COMMAND",
        "RALPH_SANDBOX",
        "RALPH_NETWORK",
        "RALPH_IDLE_TIMEOUT",
    ):
        assert f"env var: {name}" in flat


@pytest.mark.process
@pytest.mark.parametrize("word", ["version", "status", "promt.md", "prompts/build.md", "typo"])
def test_a_single_word_that_is_no_file_is_refused_before_any_agent_runs(
    ralph: Run, word: str, tmp_path: Path
) -> None:
    """`ralph version` or a mistyped path must not start a paid agent run."""
    marker = tmp_path / "agent-ran"
    done = ralph("-a", word, env={"RALPH_COMMAND": f"/bin/sh -c 'touch {marker}'"})
    assert done.returncode == 1
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("\n") == 1
    assert "Iteration" not in done.stdout
    assert not marker.exists()
    if word == "version":
        assert "ralph --version" in done.stderr


@pytest.mark.process
def test_a_tuning_variable_that_is_not_a_number_is_a_usage_error(tmp_path: Path) -> None:
    """RALPH_* knobs are click options with envvar=: bad values get click's one-line error."""
    done = subprocess.run(
        [sys.executable, "-m", "ralph", "--sandbox", "none", "1", "x"],
        cwd=tmp_path,
        env={**os.environ, "RALPH_STOP_GRACE": "soon"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: Invalid value for '--stop-grace': 'soon' is not a valid float"
    )
    assert done.stderr.count("\n") == 1


def test_every_timeout_is_a_tuning_option_with_the_dataclass_default() -> None:
    from dataclasses import fields

    from ralph.cli import TUNING
    from ralph.models import Timeouts

    tuned = {row[0] for row in TUNING} | {"idle"}  # idle is the public --idle-timeout
    assert tuned == {f.name for f in fields(Timeouts)}


def test_each_setting_reads_the_ralph_variable_named_after_its_flag() -> None:
    from ralph.cli import env_option

    @env_option("--max-failed-iterations", type=int)
    def command(max_failed_iterations: int) -> None: ...

    (option,) = command.__click_params__  # type: ignore[attr-defined]  # click's decorator list
    assert (option.envvar, option.show_envvar, option.show_default) == (
        "RALPH_MAX_FAILED_ITERATIONS",
        True,
        True,
    )

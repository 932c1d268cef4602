"""format.py: one line per tool call, cut UTF-8 safely; a recorded session end to end."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph.format import cut, error_line, tool_line

STREAMS = Path(__file__).parent / "fixtures" / "stream"
ROOT = Path("/work/project")


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        (
            "Read",
            {"file_path": "/work/project/src/app.py", "offset": 40, "limit": 80},
            "-> Read(src/app.py 40:80)",
        ),
        ("Read", {"file_path": "/work/project/src/app.py", "offset": 40}, "-> Read(src/app.py 40)"),
        ("Read", {"file_path": "/work/project/src/app.py", "limit": 80}, "-> Read(src/app.py :80)"),
        ("Read", {"file_path": "/elsewhere/x.py"}, "-> Read(/elsewhere/x.py)"),
        (
            "Edit",
            {"file_path": "/work/project/src/app.py", "old_string": "a", "new_string": "b"},
            "-> Edit(src/app.py)",
        ),
        (
            "Write",
            {"file_path": "/work/project/notes.txt", "content": "long"},
            "-> Write(notes.txt)",
        ),
        ("MultiEdit", {"file_path": "/work/project/a.py", "edits": []}, "-> MultiEdit(a.py)"),
        ("Bash", {"command": "pytest -q", "description": "run tests"}, "-> Bash(pytest -q)"),
        ("Bash", {"command": "cd a &&\n  make"}, "-> Bash(cd a && make)"),
        ("Glob", {"pattern": "**/*.py"}, "-> Glob(**/*.py)"),
        ("Grep", {"pattern": "TODO", "path": "/work/project"}, "-> Grep(TODO)"),
        ("TodoWrite", {"todos": [{}, {}, {}]}, "-> TodoWrite(3 items)"),
        (
            "WebFetch",
            {"url": "https://example.com", "prompt": "summarise"},
            "-> WebFetch(https://example.com)",
        ),
        ("WebSearch", {"query": "python select"}, "-> WebSearch(python select)"),
        ("Agent", {"description": "explore", "prompt": "long text"}, "-> Agent(explore)"),
        ("Task", {"description": "explore", "prompt": "long text"}, "-> Task(explore)"),
        ("mcp__pn__ready", {"limit": 3, "label": "bug"}, "-> mcp__pn__ready(bug)"),
        ("Mystery", {}, "-> Mystery()"),
    ],
)
def test_tool_line_shows_the_most_telling_argument(
    name: str, args: dict[str, object], expected: str
) -> None:
    assert tool_line(name, args, root=ROOT) == expected


def test_bash_command_cut_at_100_characters() -> None:
    line = tool_line("Bash", {"command": "x" * 150})
    assert line == "-> Bash(" + "x" * 97 + "...)"


def test_cut_never_splits_a_multibyte_character() -> None:
    text = "é" * 150
    out = cut(text, 100)
    assert out == "é" * 97 + "..."
    assert out.encode().decode() == out
    assert cut("héllo", 100) == "héllo"


def test_other_tools_cut_at_80() -> None:
    line = tool_line("WebSearch", {"query": "q" * 100})
    assert line == "-> WebSearch(" + "q" * 77 + "...)"


def test_error_line_is_brief_and_drops_wrapper_tags() -> None:
    line = error_line("<tool_use_error>Error: No such tool\navailable</tool_use_error>")
    assert line == "   ! Error: No such tool available"
    assert error_line("") == "   ! tool failed"
    assert len(error_line("e" * 500)) == 5 + 100


@pytest.mark.process
def test_recorded_session_is_printed_as_one_liners(
    ralph: Callable[..., subprocess.CompletedProcess[str]],
    script: Callable[..., str],
) -> None:
    done = ralph(
        "-a", "--auto-push", "false", script(default=[["replay", str(STREAMS / "tools.jsonl")]])
    )
    assert done.returncode == 2, done.stderr
    body = done.stdout.split("=" * 60 + "\n")[2].splitlines()
    tmp = "/tmp/springfield-stream-wvaosej_/work"
    assert body == [
        "I'll look around first.",
        "-> Bash(echo hello from bash && ls -a)",
        f"-> Write({tmp}/notes.txt)",
        f"-> Read({tmp}/notes.txt 2:2)",
        f"-> Read({tmp}/notes.txt)",
        f"-> Edit({tmp}/notes.txt)",
        "-> Glob(*.txt)",
        body[7],
        "-> Grep(beta)",
        body[9],
        "-> TodoWrite(2 items)",
        body[11],
        f"-> Read({tmp}/missing.txt)",
        body[13],
        "-> Bash(grep -c a notes.txt; exit 3)",
        "   ! Exit code 3 3",
        "All done: notes.txt has five lines and GAMMA is upper case.",
        body[17],
        "ralph reached max iterations (1)",
        body[19],
    ]
    # "N task(s) closed" is there when pn is on PATH (it is 0: no pensa in this project)
    assert re.match(
        r"totals: 1 iteration\(s\), (0 task\(s\) closed, )?\$0\.0047, 547 tokens, ", body[19]
    )
    assert body[19].endswith("; stopped: iterations exhausted")
    assert body[17].startswith("Iteration 1 done: ")
    assert "11 turns · 100 in / 447 out tokens · $0.0047 · exit 0" in body[17]
    for error in (body[7], body[9], body[11], body[13]):
        assert error.startswith("   ! ")
        assert len(error) <= 105
    assert body[7].startswith("   ! Error: No such tool available: Glob.")


@pytest.mark.process
def test_recorded_api_retries_are_shown_and_do_not_stop_the_loop(
    ralph: Callable[..., subprocess.CompletedProcess[str]],
    script: Callable[..., str],
) -> None:
    recording = STREAMS / "overloaded-retry.jsonl"
    done = ralph("-a", "--auto-push", "false", script(default=[["replay", str(recording)]]))
    body = done.stdout.split("=" * 60 + "\n")[2].splitlines()
    assert body[:3] == [
        "   ~ API retry 1 (overloaded, 529)",
        "   ~ API retry 2 (overloaded, 529)",
        "Recovered after two overloaded answers.",
    ]
    assert "warning" not in done.stdout

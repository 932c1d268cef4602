"""ralph.prompt: positional arguments and prompt files."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph import prompt
from ralph.errors import PromptNotFound, UsageProblem


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], (1, "prompt.md")),
        (["5"], (5, "prompt.md")),
        (["task.md"], (1, "task.md")),
        (["3", "fix it"], (3, "fix it")),
    ],
)
def test_positionals(args: list[str], expected: tuple[int, str]) -> None:
    assert prompt.positionals(args) == expected


@pytest.mark.parametrize("args", [["0"], ["a", "b"], ["1", "2", "3"]])
def test_bad_positionals(args: list[str]) -> None:
    with pytest.raises(UsageProblem):
        prompt.positionals(args)


def test_load_prompt(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("from file")
    loaded = prompt.load("p.md", cwd=tmp_path)
    assert (loaded.text, loaded.path) == ("from file", tmp_path / "p.md")
    assert prompt.load("inline words", cwd=tmp_path).path is None
    assert prompt.load("x" * 5000, cwd=tmp_path).text == "x" * 5000  # too long to be a name
    with pytest.raises(PromptNotFound):
        prompt.load("prompt.md", cwd=tmp_path)

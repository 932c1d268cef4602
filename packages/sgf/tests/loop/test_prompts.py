"""Prompt assembly: rendered into .assembled/, unknown variables are errors with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgf import resources, scaffold, stages
from sgf.errors import PathRefused, PromptError
from sgf.loop import prompts

from ..conftest import FakeRalph, Run


def seed(root: Path, name: str, text: str) -> None:
    """Write one prompt template, and the shared parts the shipped ones import."""
    path = root / ".sgf" / "prompts" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    for part in scaffold.PROMPT_PARTS:
        shared = path.parent / f"{part}.md"
        if not shared.exists():
            shared.write_text(resources.read_text("prompts", f"{part}.md"))


def test_assembly_renders_the_spec_filter_into_the_assembled_file(tmp_path: Path) -> None:
    seed(tmp_path, "build", resources.read_text("prompts", "build.md"))
    out = prompts.assemble(tmp_path, "build", {"spec": "auth"})
    assert out == tmp_path / ".sgf/prompts/.assembled/build.md"
    text = out.read_text()
    assert "pn claim-next -t task -t chore --spec auth --json" in text
    assert "{{" not in text
    assert "{%" not in text


def test_assembly_without_a_spec_leaves_the_filter_out(tmp_path: Path) -> None:
    seed(tmp_path, "build", resources.read_text("prompts", "build.md"))
    text = prompts.assemble(tmp_path, "build", {"spec": None}).read_text()
    assert "pn claim-next -t task -t chore --json" in text
    assert "--spec" not in text.split("## 1.")[1].split("## 2.")[0]


@pytest.mark.parametrize("stage", stages.PROMPTS)
def test_every_shipped_prompt_renders_with_the_stage_variables(tmp_path: Path, stage: str) -> None:
    seed(tmp_path, stage, resources.read_text("prompts", f"{stage}.md"))
    variables = {"spec": "auth", "stage": stage, "loop_id": "x", "stack": "go"}
    text = prompts.assemble(tmp_path, stage, {**variables, "iterations": 3, "afk": True})
    body = text.read_text()
    # the loop id in the sentinel keeps one loop from ending another (docs/ralph.md)
    assert 'echo "$RALPH_LOOP_ID" > .ralph-complete' in body
    assert "touch .ralph-complete" not in body
    assert "pn " in body


def test_an_unknown_variable_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    seed(tmp_path, "verify", "# Verify\n\nline two\n{{ nope }}\n")
    with pytest.raises(PromptError, match=r"\.sgf/prompts/verify\.md:4: 'nope' is undefined"):
        prompts.assemble(tmp_path, "verify", {"spec": None})
    assert not (tmp_path / ".sgf/prompts/.assembled/verify.md").exists()


def test_a_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    seed(tmp_path, "test", "a\n{% if spec %}\nunterminated\n")
    with pytest.raises(PromptError, match=r"\.sgf/prompts/test\.md:\d+: .*"):
        prompts.assemble(tmp_path, "test", {"spec": None})


def test_a_missing_template_says_sgf_init_seeds_it(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="sgf init"):
        prompts.assemble(tmp_path, "build", {})


def test_an_include_of_a_missing_file_names_file_line_and_the_missing_name(tmp_path: Path) -> None:
    seed(tmp_path, "build", "a\n{% include 'other.md' %}\n")
    with pytest.raises(PromptError, match=r"build\.md:2: no template 'other\.md' in \.sgf/prompts"):
        prompts.assemble(tmp_path, "build", {})
    assert not (tmp_path / ".sgf/prompts/.assembled/build.md").exists()


def test_a_template_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    seed(tmp_path, "build", "")
    (tmp_path / ".sgf/prompts/build.md").write_bytes(b"\xff\xfe{{ spec }}\n")
    with pytest.raises(PromptError, match=r"build\.md: not UTF-8 text"):
        prompts.assemble(tmp_path, "build", {"spec": None})


def test_a_file_in_the_way_of_the_assembled_folder_is_a_clear_error(tmp_path: Path) -> None:
    seed(tmp_path, "build", "ok\n")
    (tmp_path / ".sgf/prompts/.assembled").write_text("in the way\n")
    with pytest.raises(PathRefused, match=r"\.sgf/prompts/\.assembled: it is not a folder"):
        prompts.assemble(tmp_path, "build", {})


@pytest.mark.parametrize(
    "attack",
    [
        "{{ cycler.__init__.__globals__.os.popen('touch PWNED').read() }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ lipsum.__globals__['os'].system('touch PWNED') }}",
    ],
)
def test_an_unsafe_template_is_refused_and_nothing_runs(
    tmp_path: Path, attack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seed(tmp_path, "build", f"line one\n{attack}\n")
    with pytest.raises(PromptError) as caught:
        prompts.assemble(tmp_path, "build", {"spec": None})
    assert str(caught.value).startswith(".sgf/prompts/build.md:2: unsafe template refused")
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "PWNED").exists()
    assert not (tmp_path / ".sgf/prompts/.assembled/build.md").exists()


# What each stage may claim: the build loop tasks and chores (never the test plan's
# items, nor bugs), the test loop tests, issues-plan the bug it plans; the rest claim nothing.
CLAIMS = {
    "build": "pn claim-next -t task -t chore{spec} --json",
    "test": "pn claim-next -t test{spec} --json",
    "issues-plan": "pn update <bug-id> --claim",
}


@pytest.mark.parametrize("spec", [None, "auth"])
@pytest.mark.parametrize("stage", stages.PROMPTS)
def test_each_stage_claims_only_its_own_kind_of_work(
    tmp_path: Path, stage: str, spec: str | None
) -> None:
    """Every shipped prompt, rendered: the one claim command it holds is its stage's."""
    seed(tmp_path, stage, resources.read_text("prompts", f"{stage}.md"))
    variables = {"spec": spec, "stage": stage, "loop_id": "x", "stack": "go"}
    text = prompts.assemble(tmp_path, stage, {**variables, "iterations": 3, "afk": True})
    lines = text.read_text().splitlines()
    commands = [line for line in lines if "pn claim-next" in line or "--claim" in line]
    expected = CLAIMS.get(stage)
    if expected is None:
        assert commands == [], commands
        return
    claim = expected.format(spec=f" --spec {spec}" if spec else "")
    assert commands, stage
    assert all(claim in line for line in commands), commands


# A budget no busy machine reaches: the tests of the size limit must not race the clock.
NO_CLOCK = 600.0
BIG = "{% for i in range(1100) %}{{ 'x' * 1000 }}{% endfor %}"


@pytest.mark.parametrize(
    "template",
    [
        BIG,
        "{{ 'x' * 10**9 }}",
        "{{ 'x' * 600000 }}{{ 'y' * 600000 }}",
        "{{ [1] * 10**9 }}",
        "{{ 10 ** (10 ** 10) }}",
    ],
)
def test_an_assembled_prompt_over_1_mib_is_one_line_and_nothing_is_written(
    tmp_path: Path, template: str
) -> None:
    seed(tmp_path, "build", "ok\n")
    before = prompts.assemble(tmp_path, "build", {}).read_bytes()
    (tmp_path / ".sgf/prompts/build.md").write_text(f"# Build\n{template}\n")
    with pytest.raises(PromptError) as caught:  # the size is the point, not the time budget
        prompts.assemble(tmp_path, "build", {}, budget=NO_CLOCK)
    assert str(caught.value) == (
        ".sgf/prompts/build.md: the assembled prompt would pass 1048576 bytes (1 MiB); "
        "nothing was written"
    )
    assert (tmp_path / ".sgf/prompts/.assembled/build.md").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / ".sgf/prompts/.assembled").iterdir()) == ["build.md"]


def test_a_prompt_of_just_under_1_mib_is_written(tmp_path: Path) -> None:
    seed(tmp_path, "build", "{{ 'x' * (1048576 - 1) }}\n")
    assert prompts.assemble(tmp_path, "build", {}, budget=NO_CLOCK).stat().st_size == 1048576


def test_a_template_that_runs_past_its_time_budget_is_one_line(tmp_path: Path) -> None:
    seed(tmp_path, "build", "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}"
         "{% endfor %}\n")  # fmt: skip
    with pytest.raises(PromptError) as caught:
        prompts.render(tmp_path, "build", {}, budget=0.2)
    assert str(caught.value) == (
        ".sgf/prompts/build.md: rendering took over 0.2 s (a loop without end?); nothing was "
        "written"
    )


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ range(10**8) }}", ".sgf/prompts/build.md:2: Range too big."),
        (
            "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
            ".sgf/prompts/build.md:2: maximum recursion depth exceeded",
        ),
    ],
)
def test_a_huge_range_or_endless_recursion_is_one_line(
    tmp_path: Path, template: str, message: str
) -> None:
    seed(tmp_path, "build", f"# Build\n{template}\n")
    with pytest.raises(PromptError) as caught:
        prompts.assemble(tmp_path, "build", {})
    assert str(caught.value).startswith(message)
    assert str(caught.value).endswith("; nothing was written")
    assert "\n" not in str(caught.value)


@pytest.mark.process
def test_sgf_build_with_a_runaway_template_is_one_line_not_a_crash_log(
    project: Path, sgf: Run, fake_ralph: FakeRalph, isolated_home: Path
) -> None:
    (project / ".sgf/prompts/build.md").write_text(BIG + "\n")
    done = sgf(project, "build", "-a", "1", env=fake_ralph.env())
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "error: .sgf/prompts/build.md: the assembled prompt would pass 1048576 bytes (1 MiB); "
        "nothing was written"
    ]
    assert not (project / ".sgf/prompts/.assembled/build.md").exists()
    assert not fake_ralph.record.exists()  # ralph never started
    assert not (isolated_home / ".cache" / "springfield" / "crashes").exists()

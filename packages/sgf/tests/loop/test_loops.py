"""Loop ids and the exact ralph command line for every stage and configuration."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from sgf import resources
from sgf.config import Config, Review, SandboxKind
from sgf.errors import SpecNotFound
from sgf.loop.loops import Launch, LoopId, check_spec
from sgf.stages import STAGES, Stage

T = datetime(2026, 2, 26, 14, 30, 0)
CONFIG = Config(stack="python", docker_template="springfield-sandbox:latest")
PROMPT = Path("/p/.sgf/prompts/.assembled/build.md")


@pytest.mark.parametrize(
    ("stage", "spec", "expected"),
    [
        (Stage.BUILD, "auth", "build-auth-20260226T143000"),
        (Stage.VERIFY, None, "verify-20260226T143000"),
        (Stage.ISSUES_PLAN, None, "issues-plan-20260226T143000"),
        (Stage.TEST_PLAN, None, "test-plan-20260226T143000"),
        (Stage.TEST, "cli-parsing", "test-cli-parsing-20260226T143000"),
    ],
)
def test_loop_id_has_stage_spec_and_timestamp_and_parses_back(
    stage: Stage, spec: str | None, expected: str
) -> None:
    loop_id = LoopId(stage, spec, T)
    assert str(loop_id) == expected
    assert LoopId.parse(expected) == loop_id


def test_parse_rejects_what_is_not_a_loop_id() -> None:
    assert LoopId.parse("history") is None
    assert LoopId.parse("deploy-20260226T143000") is None


def argv(request: Launch, config: Config = CONFIG) -> list[str]:
    return request.ralph_argv("ralph", config, LoopId(request.stage, request.spec, T), PROMPT)


PYTHON_REGISTRIES = ("pypi.org", "files.pythonhosted.org")


def tail(
    loop_id: str,
    template: str,
    push: str,
    limit: int,
    n: int,
    sandbox: str = "docker",
    allow: Sequence[str] = PYTHON_REGISTRIES,
) -> list[str]:
    stage = max((s for s in Stage if loop_id.startswith(s.value + "-")), key=len)
    checks = ",".join(stage.spec.stop_checks) or "none"  # the stage's stop checklist
    # in Docker, without a network: the allow-list of the stack's registries
    allowed = [f for host in allow for f in ("--allow", host)] if sandbox == "docker" else []
    return [
        "--loop-id", loop_id, "--template", template, "--auto-push", push,
        "--max-iterations", str(limit), "--sandbox", sandbox, "--checks", checks, *allowed,
        *(REVIEW if stage is Stage.BUILD else []), str(n), str(PROMPT),
    ]  # fmt: skip


# the build loop's reviews, by default (docs/guardrails.md "Reviews")
FOCUS = str(resources.path("prompts", "review-focus.md"))
REVIEW = ["--review", "feature", "--reviewers", "3", "--review-focus", FOCUS]
CUT = -2 - len(REVIEW)  # a tail without its review flags, count and prompt


IMG = "springfield-sandbox:latest"


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (Launch(Stage.SPEC), ["ralph", *tail("spec-20260226T143000", IMG, "true", 100, 1)]),
        (Launch(Stage.BUILD), ["ralph", *tail("build-20260226T143000", IMG, "true", 100, 25)]),
        (
            Launch(Stage.BUILD, spec="auth", afk=True, iterations=7),
            ["ralph", "-a", *tail("build-auth-20260226T143000", IMG, "true", 100, 7)],
        ),
        (
            Launch(Stage.VERIFY),
            ["ralph", "-a", *tail("verify-20260226T143000", IMG, "true", 100, 25)],
        ),
        (
            Launch(Stage.TEST_PLAN, iterations=3),
            ["ralph", "-a", *tail("test-plan-20260226T143000", IMG, "true", 100, 3)],
        ),
        (
            Launch(Stage.TEST, spec="cli", afk=True),
            ["ralph", "-a", *tail("test-cli-20260226T143000", IMG, "true", 100, 25)],
        ),
        (
            Launch(Stage.ISSUES_LOG),
            ["ralph", *tail("issues-log-20260226T143000", IMG, "true", 100, 1)],
        ),
        (
            Launch(Stage.ISSUES_PLAN, afk=True, auto_push=False, template="mine:1"),
            ["ralph", "-a", *tail("issues-plan-20260226T143000", "mine:1", "false", 100, 25)],
        ),
    ],
)
def test_each_stage_translates_into_the_contract_argv(
    request_: Launch, expected: list[str]
) -> None:
    assert argv(request_) == expected


def test_config_keys_become_flags() -> None:
    config = Config(
        stack="go",
        docker_template="go-sandbox:2",
        auto_push=False,
        default_iterations=5,
        max_iterations=50,
        sandbox=SandboxKind.NONE,
        network="host",
    )
    assert argv(Launch(Stage.BUILD, afk=True), config) == [
        "ralph", "-a", *tail("build-20260226T143000", "go-sandbox:2", "false", 50, 5, "none")[:CUT],
        "--network", "host", *REVIEW, "5", str(PROMPT),
    ]  # fmt: skip


def test_guardrail_keys_become_flags_and_each_stage_has_its_checklist() -> None:
    config = Config(
        stack="python",
        docker_template="a",
        stop_blocks=5,
        command_guard=False,
        format_command="ruff format",
        check_command="run-silent tests -- pytest",
    )
    got = argv(Launch(Stage.VERIFY), config)
    assert got[got.index("--checks") + 1] == "clean,bugs"
    assert got[got.index("--stop-blocks") + 1] == "5"
    assert got[got.index("--guard") + 1] == "false"
    assert got[got.index("--format-command") + 1] == "ruff format"
    assert got[got.index("--check-command") + 1] == "run-silent tests -- pytest"
    off = Config(stack="python", docker_template="a", stop_checklist=False)
    got = argv(Launch(Stage.BUILD), off)
    assert got[got.index("--checks") + 1] == "none"
    assert "--guard" not in argv(Launch(Stage.BUILD), Config(stack="go", docker_template="a"))
    assert set(STAGES) == set(Stage)


def test_options_override_config() -> None:
    config = Config(stack="go", docker_template="a", auto_push=False, sandbox=SandboxKind.NONE)
    request = Launch(
        Stage.BUILD, auto_push=True, template="b", sandbox=SandboxKind.DOCKER, network="n"
    )
    assert argv(request, config)[1:] == [
        *tail("build-20260226T143000", "b", "true", 100, 25, allow=())[:CUT], "--network", "n",
        *REVIEW, "25", str(PROMPT),
    ]  # fmt: skip


def test_only_the_build_loop_reviews_and_the_config_says_how() -> None:
    assert "--review" not in argv(Launch(Stage.VERIFY))
    config = Config(stack="go", docker_template="a", review=Review.TASK, reviewers=2)
    assert argv(Launch(Stage.BUILD), config)[-8:-2] == [
        "--review", "task", "--reviewers", "2", "--review-focus", FOCUS,
    ]  # fmt: skip
    off = Config(stack="go", docker_template="a", review=Review.OFF)
    assert argv(Launch(Stage.BUILD), off)[-4:-2] == ["--review", "off"]
    assert argv(Launch(Stage.BUILD))[-8:-2] == REVIEW  # on unless the config says off


def test_the_sandbox_is_always_explicit_so_no_stray_variable_picks_it() -> None:
    docker = argv(Launch(Stage.BUILD, afk=True))
    assert docker[docker.index("--sandbox") + 1] == "docker"
    config = Config(stack="go", docker_template="a", sandbox=SandboxKind.NONE)
    none = argv(Launch(Stage.BUILD, afk=True), config)
    assert none[none.index("--sandbox") + 1] == "none"


def test_an_explicit_n_above_the_safety_limit_is_never_clamped() -> None:
    config = Config(stack="go", docker_template="a", max_iterations=10)
    got = argv(Launch(Stage.BUILD, iterations=40), config)
    assert got[got.index("--max-iterations") + 1] == "40"
    assert got[-2] == "40"


def test_check_spec_accepts_an_existing_spec_and_lists_them_otherwise(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "README.md").write_text("index")
    (tmp_path / "specs" / "auth.md").write_text("spec")
    assert check_spec(tmp_path, "auth") == "auth"
    with pytest.raises(SpecNotFound, match=r"no spec specs/billing\.md; existing specs: auth"):
        check_spec(tmp_path, "billing")


@pytest.mark.process
def test_a_taken_loop_id_moves_on_by_a_second(tmp_path: Path) -> None:
    from sgf.loop import launch

    logs = tmp_path / ".sgf" / "logs"
    logs.mkdir(parents=True)
    (logs / "build-20260226T143000.log").touch()
    (tmp_path / ".sgf" / "run").mkdir()
    (tmp_path / ".sgf" / "run" / "build-20260226T143001.pid").touch()
    got = launch.unused_loop_id(tmp_path, LoopId(Stage.BUILD, None, T))
    assert str(got) == "build-20260226T143002"


def test_budgets_from_flags_and_config_reach_ralph() -> None:
    from sgf.config import parse

    config = parse('stack = "python"\nmax_cost = 2.5\nmax_time = "8h"\nmax_failed_iterations = 5\n')
    request = Launch(stage=Stage.BUILD, afk=True, iterations=3, max_tokens=50_000)
    argv = request.ralph_argv("ralph", config, LoopId(Stage.BUILD, None, T), PROMPT)
    joined = " ".join(argv)
    assert "--max-cost 2.5" in joined
    assert "--max-tokens 50000" in joined
    assert "--max-time 8h" in joined
    assert "--max-failed-iterations 5" in joined
    flag = Launch(stage=Stage.BUILD, max_cost=0.5)
    assert "--max-cost 0.5" in " ".join(
        flag.ralph_argv("ralph", config, LoopId(Stage.BUILD, None, T), PROMPT)
    )


def test_each_stage_passes_the_agent_its_config_names() -> None:
    from sgf.config import parse

    config = parse('stack = "python"\n[stages.build]\nagent = "codex"\n')
    build = argv(Launch(stage=Stage.BUILD, afk=True), config)
    assert build[build.index("--agent") + 1] == "codex"
    assert "--agent" not in argv(Launch(stage=Stage.VERIFY), config)  # ralph's default: claude


def test_each_stage_passes_the_check_agent_and_model_its_config_names() -> None:
    from sgf.config import parse

    config = parse(
        'stack = "python"\ncheck_model = "opus"\n[stages.build]\ncheck_agent = "claude"\n'
    )
    build = argv(Launch(stage=Stage.BUILD, afk=True), config)
    assert build[build.index("--check-agent") + 1 :][:3] == ["claude", "--check-model", "opus"]
    assert "--check-agent" not in argv(Launch(stage=Stage.VERIFY), config)


def test_the_stacks_registries_and_the_configs_hosts_are_the_allow_list() -> None:
    config = Config(stack="rust", docker_template="a", allow=["docs.rs", "crates.io"])
    rust = ("crates.io", "static.crates.io", "index.crates.io", "docs.rs")
    assert argv(Launch(Stage.BUILD), config) == [
        "ralph", *tail("build-20260226T143000", "a", "true", 100, 25, allow=rust),
    ]  # fmt: skip
    generic = Config(stack="generic", docker_template="a", allow=["docs.python.org"])
    assert argv(Launch(Stage.BUILD), generic) == [
        "ralph", *tail("build-20260226T143000", "a", "true", 100, 25, allow=("docs.python.org",)),
    ]  # fmt: skip
    opened = Config(stack="python", docker_template="a", network="open", allow=["x.org"])
    assert "--allow" not in argv(Launch(Stage.BUILD), opened)
    assert argv(Launch(Stage.BUILD), opened)[-4 - len(REVIEW) : -2 - len(REVIEW)] == [
        "--network",
        "open",
    ]

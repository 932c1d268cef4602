"""`.sgf/config.toml` parsing: defaults, types, unknown keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgf import config
from sgf.config import Config, SandboxKind
from sgf.errors import ConfigError, NotInitialised


def test_written_config_reads_back_with_defaults() -> None:
    written = Config(stack="rust", docker_template="img").to_toml()
    assert written == (
        'stack = "rust"\ndocker_template = "img"\nauto_push = true\n'
        "default_iterations = 25\nmax_iterations = 100\n"
    )
    assert config.parse(written) == Config(stack="rust", docker_template="img")


def test_optional_keys_parse() -> None:
    parsed = config.parse('stack = "go"\nsandbox = "none"\nnetwork = "host"\n')
    assert parsed.sandbox is SandboxKind.NONE
    assert parsed.network == "host"
    assert 'sandbox = "none"' in parsed.to_toml()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("auto_push = 1\n", "auto_push must be a bool"),
        ("default_iterations = true\n", "default_iterations must be a int"),
        ('max_iterations = "9"\n', "max_iterations must be a int"),
        ("max_iterations = 0\n", "max_iterations must be at least 1"),
        ('sandbox = "vm"\n', 'sandbox must be "docker" or "none"'),
        ("colour = 1\n", "unknown keys colour"),
        ('agent = "aider"\n', 'agent must be "claude" or "codex" or "gemini" or "opencode"'),
        ('[stages.build]\nagent = "gpt"\n', "stages.build.agent must be"),
        ('[stages.build]\nmodel = "x"\n', r"\[stages\.build\] may only set agent"),
        ("stack = \n", r"\.sgf/config\.toml"),
    ],
)
def test_bad_config_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config.parse(text)


def test_the_check_agent_is_set_for_all_stages_and_overridden_per_stage() -> None:
    parsed = config.parse(
        'stack = "go"\ncheck_agent = "claude"\ncheck_model = "opus"\n'
        '[stages.build]\nagent = "codex"\ncheck_agent = "gemini"\n'
    )
    assert parsed.check_agent_for("build") == ("gemini", "opus")
    assert parsed.check_agent_for("verify") == ("claude", "opus")
    assert config.parse('stack = "go"\n').check_agent_for("build") == (None, None)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('check_agent = "gpt"\n', "check_agent must be"),
        ('[stages.build]\ncheck_agent = "gpt"\n', "stages.build.check_agent must be"),
        ("check_model = 3\n", "check_model must be a model name"),
        ('[stages.build]\ncheck_model = ""\n', "stages.build.check_model must be a model name"),
    ],
)
def test_a_bad_check_agent_or_model_is_refused(text: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        config.parse(text)


def test_agent_is_set_for_all_stages_and_overridden_per_stage() -> None:
    parsed = config.parse('stack = "go"\nagent = "gemini"\n[stages.build]\nagent = "codex"\n')
    assert parsed.agent_for("build") == "codex"
    assert parsed.agent_for("verify") == "gemini"
    assert config.parse(parsed.to_toml()) == parsed
    assert config.parse('stack = "go"\n').agent_for("build") is None


def test_missing_config_says_run_sgf_init(tmp_path: Path) -> None:
    with pytest.raises(NotInitialised, match="sgf init"):
        config.load(tmp_path)


def test_docker_template_defaults_to_the_stack_image() -> None:
    assert config.parse('stack = "go"\n').docker_template == "springfield-sandbox-go:latest"
    assert config.parse("").docker_template == "springfield-sandbox:latest"  # generic
    old = config.parse('stack = "python"\ndocker_template = "springfield-sandbox:latest"\n')
    assert old.docker_template == "springfield-sandbox:latest"  # older configs keep working


def test_a_config_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".sgf").mkdir()
    (tmp_path / ".sgf/config.toml").write_bytes(b'\xff\xfestack = "python"\n')
    with pytest.raises(ConfigError, match=r"config\.toml: not UTF-8 text"):
        config.load(tmp_path)


def test_every_config_field_is_a_key_and_round_trips() -> None:
    """The keys, types and defaults are Config's fields, written once."""
    from dataclasses import fields

    full = config.Config(
        stack="go",
        docker_template="img:1",
        base="springfield-base:bookworm",
        auto_push=False,
        default_iterations=5,
        max_iterations=50,
        sandbox=config.SandboxKind.NONE,
        network="host",
        max_cost=2.5,
        max_tokens=1000,
        max_time="8h",
        max_failed_iterations=4,
        stuck_threshold=2,
        isolation=config.Isolation.WORKTREE,
        memory="4g",
        pids=100,
        claims=config.Claims.GIT,
        protected=["ci/", "Makefile"],
        allow=["docs.python.org"],
        stop_checklist=False,
        stop_blocks=5,
        command_guard=False,
        format_command="ruff format",
        check_command="run-silent test -- pytest -q",
        notify="notify-send sgf",
        check_agent="codex",
        check_model="scripted-1",
        agent="gemini",
        stages={"build": {"agent": "codex", "check_agent": "claude"}},
        review=config.Review.TASK,
        reviewers=2,
    )
    assert all(getattr(full, f.name) != f.default for f in fields(config.Config))
    assert config.parse(full.to_toml()) == full
    assert config.parse('stack = "go"\n') == config.Config(
        stack="go", docker_template="springfield-sandbox-go:latest"
    )


def test_remember_base_sets_and_clears_the_key_keeping_the_rest(tmp_path: Path) -> None:
    path = tmp_path / ".sgf" / "config.toml"
    path.parent.mkdir()
    path.write_text('stack = "go"\nnetwork = "host"\n\n[stages.build]\nagent = "codex"\n')
    assert config.remember_base(tmp_path, "springfield-base:bookworm")
    kept = config.load(tmp_path)
    assert kept.base == "springfield-base:bookworm"
    assert (kept.stack, kept.network, kept.stages) == ("go", "host", {"build": {"agent": "codex"}})
    assert not config.remember_base(tmp_path, "springfield-base:bookworm")  # nothing to change
    assert config.remember_base(tmp_path, None)
    assert config.load(tmp_path).base is None
    assert "base" not in path.read_text()


def test_remember_base_refuses_a_broken_config_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / ".sgf" / "config.toml"
    path.parent.mkdir()
    path.write_text("stack = \n")
    with pytest.raises(ConfigError):
        config.remember_base(tmp_path, "x:1")
    assert path.read_text() == "stack = \n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max_tokens = 0", "max_tokens must be at least 1"),
        ("max_tokens = true", "max_tokens must be a int, not True"),
        ("auto_push = 1", "auto_push must be a bool, not 1"),
        ("max_cost = -1", "max_cost must be a positive number of USD, not -1"),
        ('sandbox = "vm"', 'sandbox must be "docker" or "none", not \'vm\''),
    ],
)
def test_a_wrong_value_names_its_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        config.parse(text)


@pytest.mark.parametrize("value", ['"ci/"', "[1]", '[""]', "true"])
def test_protected_must_be_a_list_of_paths(value: str) -> None:
    with pytest.raises(ConfigError, match="protected must be a list of paths"):
        config.parse(f"protected = {value}\n")

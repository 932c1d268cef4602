"""Short options spelled long before click parses: every command parses any words to the same
values, the same leftover words and the same error as it would from the words as given."""

from __future__ import annotations

import contextlib
import importlib
import io
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click
from hypothesis import given, settings
from hypothesis import strategies as st

from pensa.cli.base import COMMAND_MODULES, Env, PlainHelp, cli
from pensa.cli.longform import long_forms
from pensa.errors import PensaError

Parse = Callable[[click.Context, list[str]], list[str]]


def commands() -> Iterator[click.Command]:
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    waiting: list[click.Command] = [cli]
    while waiting:
        command = waiting.pop()
        yield command
        if isinstance(command, click.Group):
            waiting += command.commands.values()


ALL = sorted(commands(), key=lambda c: c.name or "")
NAMES = {
    c.name: [
        n for p in c.params if isinstance(p, click.Option) for n in (*p.opts, *p.secondary_opts)
    ]
    for c in ALL
}
AWKWARD = ["--", "-", "-ab", "-n5", "-x", "--nope", "--json=1", "--priority=p1", "-tbug"]
VALUES = ["task", "bug", "1", "p0", "x", "open", "-t", "--json", "a b", "pn-1"]


def outcome(command: click.Command, args: Sequence[str], parse: Parse) -> tuple[Any, ...]:
    env = Env(cwd=".", environ={}, as_json=False, color=False)
    ctx = click.Context(command, info_name=command.name, obj=env)
    printed = io.StringIO()
    try:
        with ctx, contextlib.redirect_stdout(printed):
            rest = parse(ctx, list(args))
    except click.exceptions.Exit as e:
        return ("exit", e.exit_code, printed.getvalue())
    except click.ClickException as e:
        return ("error", type(e).__name__, e.format_message())
    except PensaError as e:  # a value pensa's own types refuse
        return ("refused", type(e).__name__, str(e))
    return ("parsed", ctx.params, rest, env.actor_flag)


@st.composite
def invocations(draw: st.DrawFn) -> tuple[click.Command, list[str]]:
    command = draw(st.sampled_from(ALL))
    word = st.sampled_from(NAMES[command.name] or ["--help"]) | st.sampled_from(AWKWARD + VALUES)
    return command, draw(st.lists(word, max_size=8))


@settings(max_examples=600, deadline=None)
@given(invocation=invocations())
def test_spelling_short_options_long_never_changes_what_a_command_parses(
    invocation: tuple[click.Command, list[str]],
) -> None:
    command, args = invocation
    clicks_own = super(PlainHelp, command).parse_args  # type: ignore[misc]
    as_given = outcome(command, args, clicks_own)
    assert outcome(command, args, command.parse_args) == as_given


def test_certain_short_options_are_spelled_long_and_the_rest_left_as_given() -> None:
    create = next(c for c in ALL if c.name == "create")
    spelled = long_forms(create.params, ["t", "-t", "bug", "-p", "1", "--json"], interspersed=True)
    assert spelled == ["t", "--type", "bug", "--priority", "1", "--json"]
    # a value that looks like an option stays a value; after `--` nothing is an option
    assert long_forms(create.params, ["-a", "-t", "x"], interspersed=True) == [
        "--assignee",
        "-t",
        "x",
    ]
    assert long_forms(create.params, ["--", "-t", "x"], interspersed=True) == ["--", "-t", "x"]
    # a cluster or an attached value ends the rewriting: click parses the rest as given
    assert long_forms(create.params, ["-tbug", "-p", "1"], interspersed=True) == [
        "-tbug",
        "-p",
        "1",
    ]
    # a missing value is left for click to name in the words it was given
    assert long_forms(create.params, ["x", "-t"], interspersed=True) == ["x", "-t"]
    # a group's options end at its subcommand's name
    assert long_forms(cli.params, ["create", "-t", "bug"], interspersed=False) == [
        "create",
        "-t",
        "bug",
    ]

"""Short options are filed among the long ones too (cli.base.short_options_found_first): every
command line parses to what click's own parser makes of it, without its failed lookup."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import click
import pytest

from pensa.cli.base import COMMAND_MODULES, PnCommand, PnGroup, cli


def every_command() -> Iterator[tuple[str, click.Command]]:
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    todo: list[tuple[str, click.Command]] = [("pn", cli)]
    while todo:
        path, command = todo.pop()
        yield path, command
        if isinstance(command, click.Group):
            todo.extend((f"{path} {n}", c) for n, c in command.commands.items())


COMMANDS = sorted(every_command(), key=lambda pair: pair[0])


def command_lines(command: click.Command) -> Iterator[list[str]]:
    """Whole and attached short options, combined flags, values that look like options."""
    options = [p for p in command.params if isinstance(p, click.Option)]
    shorts = [(o, n) for o in options for n in o.opts if len(n) == 2]
    flags = [n for o, n in shorts if o.is_flag]
    for option, name in shorts:
        if option.is_flag:
            yield [name]
            yield [name, "x"]
        else:
            yield [name, "p1"]
            yield [name + "p1"]
            yield [name]  # the value is missing
            yield ["--", name, "v"]
            for other, other_name in shorts:
                if other is not option:
                    yield [name, other_name]  # an option's value that is another's name
    if len(flags) >= 2:
        yield ["-" + "".join(f[1] for f in flags[:2])]
    yield ["-z"]
    yield ["--nonsense", "v"]


def parse(parser: Any, args: list[str]) -> object:
    try:
        opts, largs, order = parser.parse_args(list(args))
    except click.UsageError as e:
        return type(e).__name__, e.format_message().split(" (Did you mean")[0]
    return opts, largs, [p.name for p in order]


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_command_line_parses_as_clicks_own_parser_parses_it(
    path: str, command: click.Command
) -> None:
    assert isinstance(command, PnCommand | PnGroup), f"{path} is a plain {type(command)}"
    ctx = click.Context(command, info_name=path)
    base = click.Group if isinstance(command, click.Group) else click.Command
    for args in command_lines(command):
        ours = parse(command.make_parser(ctx), args)
        clicks = parse(base.make_parser(command, ctx), args)
        assert ours == clicks, (path, args)


def test_an_equals_sign_after_a_short_option_gives_it_its_value(pnj: Any) -> None:
    """The one change: click read `-p=p1` as the value `=p1` (an error); it is `--priority=p1`."""
    issue = pnj("create", "t", "-t=bug", "-p=p1")
    assert (issue["issue_type"], issue["priority"]) == ("bug", "p1")

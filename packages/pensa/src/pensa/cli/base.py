"""What every command shares: the run environment, the root group and option bundles."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pensa.errors import InvalidArgument
from pensa.models import Vocabulary, utcnow
from pensa.render import Output

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from pensa.session import Session

F = TypeVar("F", bound="Callable[..., Any]")

# Commands agents guessed upstream (springfield notes §5), and what they meant.
NEAR_MISSES: dict[str, tuple[str, ...]] = {
    "claim": ("claim-next", "update ID --claim"),
    "take": ("claim-next", "update ID --claim"),
    "start": ("claim-next", "update ID --claim"),
    "next": ("claim-next",),
    "unclaim": ("release",),
    "new": ("create",),
    "add": ("create",),
    "ls": ("list",),
    "get": ("show",),
    "view": ("show",),
    "rm": ("delete",),
    "remove": ("delete",),
    "done": ("close",),
    "finish": ("close",),
    "resolve": ("close",),
    "complete": ("close",),
    "open": ("reopen",),
    "deps": ("dep",),
    "diagram": ("graph",),
    "depend": ("dep add",),
    "block": ("dep add",),
    "comments": ("comment",),
    "labels": ("label",),
    "tag": ("label add",),
    "note": ("comment add",),
    "stats": ("status",),
    "info": ("status",),
    "log": ("history",),
    "find": ("search",),
    "grep": ("search",),
    "pull": ("sync",),
    "merge": ("sync", "merge-driver"),
    "setup": ("init",),
    "set": ("update",),
}


class Env:
    """What belongs to the terminal for one run: how to print, the `--actor` flag, and the
    library's front door (`pensa.session.Session`), made on first use."""

    def __init__(
        self,
        *,
        cwd: str,
        environ: Mapping[str, str],
        as_json: bool,
        color: bool,
        width: int | None = None,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        self.cwd = cwd
        self.environ = environ
        self.out = Output(as_json=as_json, color=color, width=width)
        self.now = now
        self.actor_flag: str | None = None
        self._session: Session | None = None

    @property
    def session(self) -> Session:
        """The run's session; made after parsing, so `--actor` anywhere on the line counts."""
        if self._session is None:
            from pensa.session import Session

            self._session = Session(
                cwd=self.cwd,
                environ=self.environ,
                actor=self.actor_flag,
                now=self.now,
                say=lambda line: click.echo(line, err=True),
            )
        return self._session

    def write_back(self) -> None:
        """The session's write-back, if a command opened one."""
        if self._session is not None:
            self._session.write_back()

    def close(self) -> None:
        """Close the session, if a command opened one."""
        if self._session is not None:
            self._session.close()


pass_env = click.make_pass_decorator(Env)


def _set_actor(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value:
        ctx.ensure_object(Env).actor_flag = value


def priority_option(*, only: bool = False, default: str | None = None) -> Callable[[F], F]:
    """`-p/--priority`, declared once: a filter (`only`) or a value to set."""
    from pensa.models import Priority

    what = "Only this priority" if only else "The priority"
    return click.option(
        "-p",
        "--priority",
        type=VocabType(Priority),
        default=default,
        show_default=default is not None,
        help=f"{what}: p0 (critical) … p3 (low); 1 and P1 mean p1.",
    )


def label_option(*, only: bool = False) -> Callable[[F], F]:
    """`--label`, repeatable, declared once: a filter (`only`: all of them) or labels to add."""
    what = "Only issues with this label (repeat: all of them)" if only else "A label to add"
    return click.option(
        "--label", "labels", multiple=True, metavar="L", help=f"{what}; repeatable."
    )


def require_verify_option(func: F) -> F:
    """`--require-verify` (PN_REQUIRE_VERIFY), declared once for ready and claim-next."""
    return click.option(
        "--require-verify",
        is_flag=True,
        envvar="PN_REQUIRE_VERIFY",
        show_envvar=True,
        help="Only issues that carry verify commands (a project that wants a Ready Contract).",
    )(func)


def common(func: F) -> F:
    """`--json` and `--actor`, accepted after the subcommand as well as before it.

    `--json` itself is read from argv before click parses (so usage errors are JSON too);
    the option is declared here so click accepts it and `--help` shows it."""
    func = click.option(
        "--json", "json_", is_flag=True, expose_value=False, help="Print JSON on stdout."
    )(func)
    return click.option(
        "--actor",
        expose_value=False,
        callback=_set_actor,
        help="Who is acting (default: PN_ACTOR, git user.name, $USER).",
    )(func)


class VocabType(click.ParamType[Vocabulary, Any]):
    """A click parameter for one of pensa's vocabularies, with did-you-mean hints."""

    def __init__(self, vocab: type[Vocabulary]) -> None:
        self.vocab = vocab
        self.name = vocab.kind()

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """Show the allowed values in --help."""
        return "[" + "|".join(m.value for m in self.vocab) + "]"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Vocabulary:
        """Parse the value, or fail with the allowed values and a did-you-mean hint."""
        if isinstance(value, self.vocab):
            return value
        try:
            return self.vocab.parse(str(value))
        except InvalidArgument as e:
            flag = param.opts[-1] if param is not None and param.opts else self.name
            raise InvalidArgument(f"{flag}: {e}") from None


# Which module defines each top-level command: `pn ready` imports only pensa.cli.views, so
# start-up pays for one command module, not all of them (start-up is a feature: STYLE.md).
COMMAND_MODULES = {
    **dict.fromkeys(
        ("create", "q", "update", "close", "reopen", "release", "delete"), "pensa.cli.issues"
    ),
    **dict.fromkeys(("show", "history", "comment"), "pensa.cli.show"),
    "claim-next": "pensa.cli.claim",
    **dict.fromkeys(("list", "ready", "blocked", "search"), "pensa.cli.views"),
    **dict.fromkeys(("count", "status"), "pensa.cli.stats"),
    "dep": "pensa.cli.deps",
    "label": "pensa.cli.labels",
    "edit": "pensa.cli.edit",
    "graph": "pensa.cli.picture",
    **dict.fromkeys(
        ("export", "import", "sync", "merge-driver", "init", "doctor", "where", "prime"),
        "pensa.cli.data",
    ),
}


def _show_help(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()


def _show_version(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from pensa import __version__

        click.echo(f"pn {__version__}", color=ctx.color)
        ctx.exit()


class PlainHelp(click.Command):
    """`-h/--help` with its text in plain English. click's own help and version options
    translate their text through gettext, whose first lookup imports `locale` and searches
    for message catalogs: a cost every `pn` call would pay for a translation pn does not
    ship (the O(1) rows of bench/bench_pensa.py at 100k issues have no room for it)."""

    _plain_help: click.Option | None = None

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        """The help option, made once (click orders eager callbacks by the object)."""
        names = self.get_help_option_names(ctx)
        if not names or not self.add_help_option:
            return None
        if self._plain_help is None:
            self._plain_help = click.Option(
                names,
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=_show_help,
                help="Show this message and exit.",
            )
        return self._plain_help


class PnGroup(PlainHelp, click.Group):
    """A group that loads command modules on demand, and whose unknown subcommands fail
    with a "did you mean" hint; its commands and groups are made with the plain help."""

    command_class = PlainHelp
    group_class = type

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, loaded or not."""
        if ctx.parent is None:
            return sorted({*self.commands, *COMMAND_MODULES})
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import the command's module on first use."""
        module = COMMAND_MODULES.get(cmd_name) if ctx.parent is None else None
        if module is not None and cmd_name not in self.commands:
            importlib.import_module(module)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Resolve the subcommand; unknown ones fail with a did-you-mean hint."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            hints = NEAR_MISSES.get(name.lower()) if ctx.parent is None else None
            if hints is None:
                import difflib

                hints = tuple(
                    difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.5)
                )
            path = ctx.command_path
            suggestion = " or ".join(f"`{path} {h}`" for h in hints)
            raise InvalidArgument(
                f"unknown command `{path} {name}`"
                + (f"; did you mean {suggestion}?" if suggestion else "")
                + " (`pn prime` lists every command)"
            )
        return super().resolve_command(ctx, args)


@click.group(
    cls=PnGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@common
@click.option(
    "--version",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_show_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """pensa: the agents' issue tracker (SQLite, with JSONL in git).

    \b
    Example:
        pn create "login crash on empty password" -t bug -p p0
        pn claim-next --json
    Run `pn prime` for the cheat sheet of every command.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())

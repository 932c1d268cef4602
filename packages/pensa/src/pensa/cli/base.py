"""What every command shares: the run environment, the root group and option bundles."""

from __future__ import annotations

import contextlib
import importlib
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pensa import project as projects
from pensa.errors import InvalidArgument
from pensa.models import Vocabulary, utcnow
from pensa.render import Output

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from pensa.graph import Graph
    from pensa.project import Project
    from pensa.store import Store
    from pensa.tracker import Tracker

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
    """One run: where we are, how to print, and the database opened on first use."""

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
        self._actor: Callable[[], str] | None = None
        self._resources = contextlib.ExitStack()
        self._written: tuple[Store, Project] | None = None

    def close(self) -> None:
        """Close the database and anything else opened for this run."""
        self._resources.close()

    @property
    def actor(self) -> str:
        """Who is acting, resolved on first use (reads never pay for it)."""
        return self.expect_actor()()

    def expect_actor(self) -> Callable[[], str]:
        """Start finding the actor (once): a command that logs events calls this before it
        opens the database, so that `git config user.name` runs meanwhile
        (`projects.actor_lookup`). The run's end collects git if nothing asked after all."""
        if self._actor is None:
            self._actor = projects.actor_lookup(self.actor_flag, self.cwd, self.environ)
            self._resources.callback(self._actor)
        return self._actor

    def project(self, *, create: bool) -> Project | None:
        """The project in use; with `create`, where a first write would put it."""
        if create:
            return projects.locate_or_new(self.cwd, self.environ)
        return projects.locate(self.cwd, self.environ)

    def store(self, *, write: bool = False, catch_up: bool = True, tracked: bool = True) -> Store:
        """The project database, opened and caught up as `pensa.opening` says. A `write`
        store is `tracked` unless the command only brings the files in (`pn sync`): then
        `write_back` keeps the files current after the command."""
        from pensa import opening
        from pensa.store import Store

        found = self.project(create=write)
        # A worktree loop's database is the main checkout's (pensa.shared): never caught up.
        shared = self.environ.get("PN_SHARED_DB")
        choice = opening.choose(found, write=write, shared=shared)
        if found is None or not choice.on_disk:
            return self._resources.enter_context(Store.open(None))
        found.ensure()
        store = self._resources.enter_context(Store.open(choice.db))
        if (
            catch_up
            and not shared
            and (
                said := opening.catch_up(
                    store, found, first_use=choice.first_use, write=write, env=self.environ
                )
            )
        ):
            click.echo(said, err=True)
        if write and tracked:
            self._written = (store, found)
        return store

    def write_back(self) -> None:
        """After a command that changed the tracker: in a repository set up for pensa, the
        JSONL written out and staged (`pensa.writeback`)."""
        if self._written is None:
            return
        store, found = self._written
        if store.conn.total_changes == 0:
            return
        from pensa import writeback

        if not writeback.set_up(found):
            return
        from pensa.errors import PensaError

        shared = bool(self.environ.get("PN_SHARED_DB"))
        try:
            said = writeback.write_back(store, found, cwd=self.cwd, env=self.environ, shared=shared)
        except (PensaError, OSError) as e:  # the write itself is done: say why the files lag
            said = f"pn: warning: .pensa/*.jsonl not written: {e}"
        if said:
            from pensa.inert import inert

            click.echo(inert(said), err=True)

    def tracker(self, *, write: bool = False) -> Tracker:
        """The issue lifecycle over this run's store."""
        if write:
            self.expect_actor()
        from pensa.tracker import Tracker

        return Tracker(self.store(write=write), now=self.now)

    def graph(self, *, write: bool = False) -> Graph:
        """The dependency graph over this run's store."""
        if write:
            self.expect_actor()
        from pensa.graph import Graph

        return Graph(self.store(write=write), now=self.now)


pass_env = click.make_pass_decorator(Env)


def _set_actor(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value:
        ctx.ensure_object(Env).actor_flag = value


def priority_option(*, only: bool = False, default: str | None = None) -> Callable[[F], F]:
    """`-p/--priority`, declared once: a filter (`only`) or a value to set (issue 12)."""
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


class PnGroup(click.Group):
    """A group that loads command modules on demand, and whose unknown subcommands fail
    with a "did you mean" hint."""

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
@click.version_option(package_name="pensa", prog_name="pn", message="%(prog)s %(version)s")
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

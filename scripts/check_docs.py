"""Check the manual (README.md and docs/*.md) against the repository and the code.

Every relative link must name a file that exists and, with `#anchor`, a heading of the page it
points at (GitHub's anchor rules). Every `pn`, `ralph` and `sgf` command in a `sh` or `console`
block must parse against the real click command (its subcommands, options and arguments),
every `make` target must be the Makefile's, every `python` block must compile and every `toml`
block must parse. One line per problem, `path:line: what`; exit 1 when there is one.

    python scripts/check_docs.py [ROOT]
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
import tomllib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import click

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^`]*)$")
_CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_LANGUAGES = {"sh", "console", "shell", "bash"}
_SEPARATORS = {"&&", "||", "|", ";", "&", "(", ")"}


class Block(NamedTuple):
    """A fenced code block: its language, the line its first body line is on, its body."""

    language: str
    line: int
    text: str


class Page(NamedTuple):
    path: Path
    outside: str  # the page with every code block blanked, line breaks kept
    prose: str  # the same with every code span blanked too: what links are looked for in
    blocks: list[Block]


def read_page(path: Path) -> Page:
    lines = path.read_text(encoding="utf-8").split("\n")
    prose: list[str] = []
    blocks: list[Block] = []
    fence = ""
    language = ""
    start = 0
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        if not fence:
            opening = _FENCE.match(line)
            if opening:
                fence, info = opening.groups()
                language, start, body = (info.split() or [""])[0].lower(), number + 1, []
                prose.append("")
            else:
                prose.append(line)
            continue
        prose.append("")
        if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            blocks.append(Block(language, start, "\n".join(body)))
            fence = ""
        else:
            body.append(line)
    if fence:
        blocks.append(Block(language, start, "\n".join(body)))
    outside = "\n".join(prose)
    text = _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), outside)
    return Page(path, outside, text, blocks)


def anchor(heading: str) -> str:
    """The id GitHub gives a heading: its text in lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>|[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Page) -> set[str]:
    """Every heading's anchor; a repeated one gets -1, -2... as on GitHub."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for line in page.outside.split("\n"):
        heading = re.match(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", line)
        if heading:
            base = anchor(heading.group(1))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def check_links(page: Page, root: Path, pages: dict[Path, Page]) -> Iterator[str]:
    targets = [(m.start(2), m.group(2)) for m in _LINK.finditer(page.prose)]
    targets += [(m.start(1), m.group(1)) for m in _REFERENCE.finditer(page.prose)]
    for offset, target in sorted(targets):
        where = f"{page.path.relative_to(root)}:{page.prose.count(chr(10), 0, offset) + 1}"
        if not target or _SCHEME.match(target):
            continue
        name, _, fragment = target.partition("#")
        path = (page.path.parent / name).resolve() if name else page.path
        if not path.exists():
            yield f"{where}: link to {target}: {name} does not exist"
        elif fragment and path.suffix == ".md":
            linked = pages.get(path) or read_page(path)
            if fragment not in anchors(linked):
                yield f"{where}: link to {target}: {path.name} has no heading #{fragment}"


def commands(block: Block) -> Iterator[tuple[int, list[str]]]:
    """Each simple command of a shell block, with its line: continuations joined, comments,
    redirections and VAR= prefixes gone. In a console block only `$ ` lines are commands."""
    logical: list[tuple[int, str]] = []
    pending = ""
    first = 0
    for number, line in enumerate(block.text.split("\n"), block.line):
        if not pending:
            first = number
            if block.language == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append((first, pending + line))
        pending = ""
    for number, line in logical:
        if "[OPTIONS]" in line or "_COMPLETE=" in line:
            continue  # a synopsis, or a shell-completion line (the variable prints a script)
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        argv: list[str] = []
        redirect = False
        for word in [*lexer, ";"]:
            if redirect:
                redirect = False
            elif word and set(word) <= set("<>&") and word not in _SEPARATORS:
                redirect = True
            elif word in _SEPARATORS:
                while argv and _ASSIGNMENT.match(argv[0]):
                    argv.pop(0)
                if argv:
                    yield number, argv
                argv = []
            else:
                argv.append(word)


def parse(command: click.Command, name: str, args: list[str], parent: click.Context | None) -> None:
    """Parse `args` as click would before running them, without running anything."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            ctx = command.make_context(name, list(args), parent=parent)
    except click.exceptions.Exit:  # --version, --help: printed, then done
        return
    if isinstance(command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        if rest:
            sub_name, sub, sub_args = command.resolve_command(ctx, rest)
            if sub is None or sub_name is None:  # resolve_command raises first; for mypy
                raise click.UsageError(f"no such command {rest[0]}")
            parse(sub, sub_name, sub_args, ctx)


def programs() -> dict[str, click.Command]:
    from pensa.cli.base import cli as pn
    from ralph.cli import cli as ralph
    from sgf.cli import cli as sgf

    return {"pn": pn, "ralph": ralph, "sgf": sgf}


def make_targets(root: Path) -> set[str]:
    makefile = root / "Makefile"
    text = makefile.read_text(encoding="utf-8") if makefile.is_file() else ""
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.MULTILINE))


def check_block(block: Block, where: str, root: Path, seen: Counter[str]) -> Iterator[str]:
    if block.language in _SHELL_LANGUAGES:
        tools = programs()
        for line, argv in commands(block):
            program, *args = argv
            at = f"{where}:{line}: `{shlex.join(argv)}`"
            if program in tools:
                seen["commands"] += 1
                try:
                    parse(tools[program], program, args, None)
                except click.ClickException as e:
                    yield f"{at} does not parse: {e.format_message()}"
                except Exception as e:  # a tool's own usage error (pn's InvalidArgument)
                    yield f"{at} does not parse: {e}"
            elif program == "make":
                seen["commands"] += 1
                missing = {a for a in args if "=" not in a and not a.startswith("-")}
                missing -= make_targets(root)
                if missing:
                    yield f"{at}: the Makefile has no target {', '.join(sorted(missing))}"
    elif block.language == "python":
        seen["python blocks"] += 1
        try:
            compile(block.text, f"{where}:{block.line}", "exec")
        except SyntaxError as e:
            yield f"{where}:{block.line + (e.lineno or 1) - 1}: python does not compile: {e.msg}"
    elif block.language == "toml":
        seen["toml blocks"] += 1
        yield from check_toml(block, where)


def check_toml(block: Block, where: str) -> Iterator[str]:
    """The block parses, or else each of its parts does: a block of alternatives (`notify =`
    three ways, each under its own comment line) is no one file."""
    try:
        tomllib.loads(block.text)
        return
    except tomllib.TOMLDecodeError:
        pass
    line = block.line
    for part in re.split(r"\n(?=#)", block.text):
        try:
            tomllib.loads(part)
        except tomllib.TOMLDecodeError as e:
            yield f"{where}:{line}: toml does not parse: {e}"
            return
        line += part.count("\n") + 1


def check(root: Path) -> tuple[list[str], Counter[str]]:
    root = root.resolve()
    paths = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    pages = {p: read_page(p) for p in paths if p.is_file()}
    problems: list[str] = []
    seen: Counter[str] = Counter(pages=len(pages))
    for page in pages.values():
        where = str(page.path.relative_to(root))
        problems += check_links(page, root, pages)
        seen["links"] += len(_LINK.findall(page.prose))
        for block in page.blocks:
            problems += check_block(block, where, root, seen)
    return problems, seen


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else Path(__file__).resolve().parents[1])
    problems, seen = check(root)
    for problem in problems:
        print(problem, file=sys.stderr)
    counts = ", ".join(f"{n} {what}" for what, n in seen.items())
    print(f"docs: {counts}: {f'{len(problems)} problem(s)' if problems else 'ok'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A command's short options spelled long before click parses them (`-t task` → `--type task`).

click's parser tries every option word as a long option first; for a short one that miss
builds a "no such option" error with its spelling suggestions, which imports difflib and looks
up a message translation (importing `locale` and searching for catalogs), and then throws the
error away. Agents pass short options on most writes (`pn create … -t task`), and at 10k issues
that cost alone put `pn create` past its target in bench/bench_pensa.py. The long spelling
parses to the same values: click's own parser still does all the parsing.

Only words that are certainly options are rewritten: a short option click knows, standing
alone, with all the values it takes after it. Anything this cannot follow for certain (a
cluster like `-ab`, an attached value like `-n5`, an unknown option, `--`) ends the rewriting,
and click sees the rest as it was given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import click


def _values_taken(option: click.Option) -> int:
    return 0 if option.is_flag or option.count else option.nargs


def long_forms(
    params: Iterable[click.Parameter], args: Sequence[str], *, interspersed: bool
) -> list[str]:
    """`args` with each certain short option spelled long. `interspersed`: positional
    arguments may come between options (a command's); otherwise options end at the first
    positional argument (a group's, whose first positional is its subcommand's name)."""
    long_of: dict[str, tuple[str, int]] = {}
    takes: dict[str, int] = {}
    for param in params:
        if not isinstance(param, click.Option):
            continue
        spelled_long = [name for name in param.opts if name.startswith("--")]
        for name in param.opts:
            takes[name] = _values_taken(param)
            if spelled_long and len(name) == 2 and name[0] == "-" and name[1] != "-":
                long_of[name] = (spelled_long[0], _values_taken(param))
        for name in param.secondary_opts:
            takes[name] = 0
    out = list(args)
    i = 0
    while i < len(out):
        word = out[i]
        if word in long_of:
            spelled, count = long_of[word]
            if i + count >= len(out):
                break  # a missing value: click says so in the words it was given
            out[i] = spelled
            i += 1 + count
        elif word in takes:
            i += 1 + takes[word]
        elif word.startswith("--") and word.split("=", 1)[0] in takes:
            i += 1  # `--name=value`: the value is in the word
        elif word.startswith("-") and len(word) > 1:
            break  # `--`, a cluster, an attached value or an unknown option
        elif interspersed:
            i += 1
        else:
            break
    return out

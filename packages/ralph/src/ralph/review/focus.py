"""The reviewers' focuses: what each of them looks at, read from a markdown file whose `## NAME`
sections are the focuses (sgf ships one: templates/prompts/review-focus.md).

Reviewer i takes focus i, round the list again when there are more reviewers than focuses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_HEADING = re.compile(r"^##\s+(?P<name>\S.*?)\s*$")


@dataclass(frozen=True, slots=True)
class Focus:
    """One reviewer's angle on the change: a short name and what to look for."""

    name: str
    text: str


# Without a focus file every reviewer looks at everything.
WHOLE = Focus("the whole change", "Look at everything: correctness, tests and design.")


def parse(text: str) -> tuple[Focus, ...]:
    """The `## NAME` sections of `text`, in order; what comes before the first is left out."""
    found: list[Focus] = []
    name: str | None = None
    lines: list[str] = []
    for line in [*text.splitlines(), "## "]:
        heading = _HEADING.match(line)
        if heading is None and line.strip() != "##":
            lines.append(line)
            continue
        if name is not None and (body := "\n".join(lines).strip()):
            found.append(Focus(name, body))
        name, lines = (heading.group("name") if heading else None), []
    return tuple(found)


def assign(focuses: Sequence[Focus], count: int) -> list[Focus]:
    """The focus of each of `count` reviewers."""
    pool = list(focuses) or [WHOLE]
    return [pool[i % len(pool)] for i in range(count)]

"""`pn graph`: the dependency graph as Mermaid or Graphviz DOT text, for docs and PRs.

Arrows point from the issue that must be done first to the issue waiting for it, so a
diagram reads in the order work happens; a dashed arrow joins a fix to the bug it fixes.
Colour says the status (blocked: open but waiting on something not closed), shape the kind
(a bug is a hexagon, a closed issue has rounded ends), and each label carries the id,
priority and title.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pensa.models import Vocabulary

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pensa.models import Issue

TITLE_WIDTH = 40
# (fill, stroke, text) per shown state: GitHub-friendly pastels that read in dark mode too.
COLOURS = {
    "open": ("#e6f4ea", "#1e8e3e", "#202124"),
    "in_progress": ("#e8f0fe", "#1a73e8", "#202124"),
    "blocked": ("#fef7e0", "#e37400", "#202124"),
    "closed": ("#f1f3f4", "#9aa0a6", "#5f6368"),
}


class Format(Vocabulary):
    """`graph --format`."""

    MERMAID = "mermaid"
    DOT = "dot"

    @classmethod
    def kind(cls) -> str:
        """How the vocabulary is called in messages."""
        return "graph format"


class Picture(NamedTuple):
    """What a diagram shows: issues, `child depends on parent` edges, `fix fixes bug` links,
    which issues wait on something not closed, and `child part of parent` links (the
    parent, an epic or feature, waits for its children)."""

    issues: list[Issue]
    deps: list[tuple[str, str]]
    fixes: list[tuple[str, str]]
    blocked: frozenset[str]
    parts: tuple[tuple[str, str], ...] = ()

    def state(self, issue: Issue) -> str:
        """The state the colour shows."""
        if issue.status.value != "closed" and issue.id in self.blocked:
            return "blocked"
        return issue.status.value


def _title(issue: Issue) -> str:
    text = " ".join(issue.title.split())
    return text if len(text) <= TITLE_WIDTH else text[: TITLE_WIDTH - 1] + "…"


def _node(issue_id: str) -> str:
    return "n_" + "".join(c if c.isalnum() else "_" for c in issue_id)


def mermaid(picture: Picture) -> str:
    """A Mermaid flowchart (GitHub renders it in Markdown inside ```mermaid fences)."""
    lines = ["flowchart TD"]
    for issue in picture.issues:
        label = f"{issue.id} · {issue.priority.value}<br/>{_mermaid_text(_title(issue))}"
        if issue.issue_type.value == "bug":
            shape = '{{"%s"}}'
        elif issue.status.value == "closed":
            shape = '(["%s"])'
        else:
            shape = '["%s"]'
        lines.append(f"  {_node(issue.id)}{shape % label}:::{picture.state(issue)}")
    for child, parent in picture.deps:
        lines.append(f"  {_node(parent)} --> {_node(child)}")
    for fix, bug in picture.fixes:
        lines.append(f"  {_node(fix)} -. fixes .-> {_node(bug)}")
    for child, parent in picture.parts:
        lines.append(f"  {_node(child)} -. part of .-> {_node(parent)}")
    for state, (fill, stroke, text) in COLOURS.items():
        lines.append(f"  classDef {state} fill:{fill},stroke:{stroke},color:{text}")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for what would end or nest it)."""
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return text


def dot(picture: Picture) -> str:
    """A Graphviz digraph (`pn graph --format dot | dot -Tsvg > deps.svg`)."""
    lines = [
        "digraph pensa {",
        "  rankdir=TB;",
        '  node [shape=box, style="filled", fontname="Helvetica", fontsize=11];',
    ]
    for issue in picture.issues:
        fill, stroke, text = COLOURS[picture.state(issue)]
        shape = "hexagon" if issue.issue_type.value == "bug" else "box"
        style = '"filled,rounded"' if issue.status.value == "closed" else "filled"
        label = _dot_text(f"{issue.id} · {issue.priority.value}\n{_title(issue)}")
        lines.append(
            f'  "{issue.id}" [label="{label}", shape={shape}, style={style}, '
            f'fillcolor="{fill}", color="{stroke}", fontcolor="{text}"];'
        )
    for child, parent in picture.deps:
        lines.append(f'  "{parent}" -> "{child}";')
    for fix, bug in picture.fixes:
        lines.append(f'  "{fix}" -> "{bug}" [style=dashed, label="fixes"];')
    for child, parent in picture.parts:
        lines.append(f'  "{child}" -> "{parent}" [style=dotted, label="part of"];')
    lines.append("}")
    return "\n".join(lines)


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(picture: Picture, fmt: Format) -> str:
    """The picture in the chosen format."""
    return mermaid(picture) if fmt is Format.MERMAID else dot(picture)


def edges_among(
    pairs: Sequence[tuple[str, str]], ids: frozenset[str] | set[str]
) -> list[tuple[str, str]]:
    """The pairs whose both ends are shown."""
    return [(a, b) for a, b in pairs if a in ids and b in ids]

"""Turn stream events into the one-line summaries AFK mode prints (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

BASH_WIDTH = 100  # Bash commands are cut here
OTHER_WIDTH = 80  # other tools' most telling argument is cut here
ERROR_WIDTH = 100

_PATH_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path"}
_KEY_ARG = {
    "NotebookEdit": "notebook_path",
    "Glob": "pattern",
    "Grep": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
    "Agent": "description",
    "Task": "description",
    "Skill": "skill",
}


def cut(text: str, width: int) -> str:
    """One line of at most `width` characters, ending in `...` when cut.

    Python slices code points, so a multi-byte UTF-8 character is never split.
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _path(value: object, root: Path | None) -> str:
    text = value if isinstance(value, str) else ""
    if root is not None and text.startswith(str(root) + "/"):
        return text[len(str(root)) + 1 :]
    return text


def _read(args: Mapping[str, object], root: Path | None) -> str:
    path = _path(args.get("file_path"), root)
    offset, limit = args.get("offset"), args.get("limit")
    if offset is not None and limit is not None:
        return f"{path} {offset}:{limit}"
    if offset is not None:
        return f"{path} {offset}"
    if limit is not None:
        return f"{path} :{limit}"
    return path


def _first_string(args: Mapping[str, object]) -> str:
    return next((v for v in args.values() if isinstance(v, str) and v.strip()), "")


def tool_detail(name: str, args: Mapping[str, object], *, root: Path | None = None) -> str:
    """The most telling argument of a tool call, already cut to width."""
    if name == "Read":
        return _read(args, root)
    if name in _PATH_TOOLS:
        return _path(args.get(_PATH_TOOLS[name]), root)
    if name == "Bash":
        return cut(str(args.get("command", "")), BASH_WIDTH)
    if name == "TodoWrite":
        todos = args.get("todos")
        return f"{len(todos) if isinstance(todos, list) else 0} items"
    if name in _KEY_ARG:
        value = args.get(_KEY_ARG[name])
        return cut(_path(value, root) if isinstance(value, str) else "", OTHER_WIDTH)
    return cut(_first_string(args), OTHER_WIDTH)


def tool_line(name: str, args: Mapping[str, object], *, root: Path | None = None) -> str:
    """`-> Read(src/app.py 40:80)`."""
    return f"-> {name}({tool_detail(name, args, root=root)})"


def error_line(text: str) -> str:
    """A tool error, shown briefly on one line (without Claude Code's wrapper tags)."""
    text = text.replace("<tool_use_error>", "").replace("</tool_use_error>", "")
    return f"   ! {cut(text, ERROR_WIDTH) or 'tool failed'}"

"""Positional arguments and the prompt: `[ITERATIONS] [PROMPT]`, file or inline text."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from ralph.errors import PromptNotFound, UsageProblem
from ralph.models import Prompt

DEFAULT_PROMPT = "prompt.md"
_NAME_MAX = 255  # longer than any file name: inline text, not a mistyped path


def positionals(args: Sequence[str]) -> tuple[int, str]:
    """ITERATIONS (default 1) and PROMPT (default prompt.md); one non-numeric arg is PROMPT."""
    if len(args) > 2:
        raise UsageProblem(
            f"expected at most ITERATIONS and PROMPT, got {len(args)} arguments "
            "(agent arguments go after --)"
        )
    if not args:
        return 1, DEFAULT_PROMPT
    if len(args) == 1:
        return (_count(args[0]), DEFAULT_PROMPT) if args[0].isdigit() else (1, args[0])
    if not args[0].isdigit():
        raise UsageProblem(f"ITERATIONS must be a whole number, not {args[0]!r}")
    return _count(args[0]), args[1]


def _count(text: str) -> int:
    count = int(text)
    if count < 1:
        raise UsageProblem("ITERATIONS must be at least 1")
    return count


def load(spec: str, *, cwd: Path) -> Prompt:
    """An existing file is the prompt; anything else is inline prompt text."""
    path = Path(spec) if Path(spec).is_absolute() else cwd / spec
    try:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            return Prompt(text, path.resolve())
    except OSError:  # a name too long to be a file is inline text
        pass
    if spec == DEFAULT_PROMPT or _looks_like_a_path(spec):
        raise PromptNotFound(spec)
    if len(spec) <= _NAME_MAX and not any(ch.isspace() for ch in spec.strip()):
        # `ralph version`, `ralph status` or a typo'd file name would otherwise start a paid
        # agent run with every permission bypassed.
        hint = " (did you mean `ralph --version`?)" if spec in ("version", "-v") else ""
        raise UsageProblem(
            f"{spec!r} is neither a prompt file nor prompt text: PROMPT must be an existing "
            f"file or text with spaces{hint}"
        )
    return Prompt(spec)


def _looks_like_a_path(spec: str) -> bool:
    return not any(ch.isspace() for ch in spec) and (
        "/" in spec or spec.endswith((".md", ".txt", ".prompt"))
    )


def default_loop_id(now: datetime) -> str:
    """`ralph-20260226T143000`, used when --loop-id is not given."""
    return f"ralph-{now:%Y%m%dT%H%M%S}"

"""`sgf init`: lay out a Springfield project in a git work tree, merging into what exists."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sgf import config as config_mod
from sgf import git, merges, proc, resources, safefile
from sgf.config import Config
from sgf.errors import CommandFailed, MergeError, NotAGitRepo, PathRefused
from sgf.stacks import Stack
from sgf.stages import PROMPTS

# Parts the prompts import (`{% import "_shared.md" ... %}`); seeded next to them.
PROMPT_PARTS = ("_shared",)


class Action(StrEnum):
    """What init did to a path."""

    CREATED = "created"
    MERGED = "merged"
    OVERWRITTEN = "overwritten"
    KEPT = "kept"
    INSTALLED = "installed"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class Step:
    """What init did to one path (relative to the project root)."""

    path: str
    action: Action
    note: str = ""


def write_atomic(root: Path, rel: str, text: str) -> None:
    """Write `text` to a temporary sibling and rename it into place (never through a link)."""
    safefile.replace(root / rel, text.encode(), root=root)


def _owned(root: Path, rel: str, text: str, *, force: bool) -> Step:
    """Create a file sgf seeds; keep a user's copy unless `force`."""
    path = root / rel
    if path.exists():
        if not force or path.read_text(encoding="utf-8") == text:
            return Step(rel, Action.KEPT)
        write_atomic(root, rel, text)
        return Step(rel, Action.OVERWRITTEN)
    write_atomic(root, rel, text)
    return Step(rel, Action.CREATED)


def _merged(root: Path, rel: str, new: str, old: str | None) -> Step:
    if old == new:
        return Step(rel, Action.KEPT)
    write_atomic(root, rel, new)
    return Step(rel, Action.CREATED if old is None else Action.MERGED)


def _read(root: Path, rel: str) -> str | None:
    """The text of a file sgf merges into; MergeError when it cannot be read as text."""
    path = root / rel
    if path.is_symlink():  # read and merged, a file of the agent's choosing would be committed
        raise PathRefused(path)
    if not path.exists():
        return None
    if not path.is_file():
        raise MergeError(f"{rel} is not a file; move it aside and run sgf init again")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise MergeError(f"{rel} is not UTF-8 text; fix it and run sgf init again") from e


def _check_dirs(root: Path) -> None:
    """Refuse before writing anything when a file stands where init needs a directory."""
    for rel in (".sgf", ".sgf/prompts", "specs", ".claude", ".pensa"):
        if (root / rel).exists() and not (root / rel).is_dir():
            raise MergeError(f"{rel} is a file, where sgf init needs a directory; move it aside")


def render_scaffold(name: str, **values: object) -> str:
    """Render one scaffold template (memento and friends) with jinja2."""
    import jinja2

    env = jinja2.Environment(  # noqa: S701 - markdown for agents, not HTML
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    return env.from_string(resources.read_text("scaffold", name)).render(**values)


def init(root: Path, stack: Stack, *, force: bool, env: Mapping[str, str]) -> list[Step]:
    """Scaffold the project at `root` (a git work tree) for `stack`; return what was done."""
    # Everything that can refuse is checked before the first write: a failed init leaves
    # the tree as it found it.
    _check_dirs(root)
    merged = []
    old = _read(root, ".gitignore")
    merged.append((".gitignore", merges.gitignore(old, stack.ignores), old))
    old = _read(root, ".claude/settings.json")
    merged.append((".claude/settings.json", merges.claude_settings(old), old))
    _check_pn(env)
    # pn init checks its own inputs before writing, so it runs before sgf's first write.
    pensa_steps = init_pensa(root, env=env)

    steps: list[Step] = []
    config = Config(stack=stack.name, docker_template=stack.project_image(root))
    step = _owned(root, ".sgf/config.toml", config.to_toml(), force=force)
    if step.action is Action.KEPT:
        kept = config_mod.load(root).stack
        if kept != stack.name:
            note = f"stack stays {kept}; --force re-seeds config, backpressure, prompts"
            step = Step(step.path, step.action, note)
    steps.append(step)
    steps.append(_owned(root, ".sgf/backpressure.md", stack.backpressure(), force=force))
    for name in (*PROMPT_PARTS, *PROMPTS):
        text = resources.read_text("prompts", f"{name}.md")
        steps.append(_owned(root, f".sgf/prompts/{name}.md", text, force=force))
    memento = render_scaffold("memento.md", stack=stack)
    steps.append(_owned(root, "memento.md", memento, force=force))
    for rel, name in (("specs/README.md", "specs-README.md"), ("AGENTS.md", "AGENTS.md")):
        steps.append(_owned(root, rel, render_scaffold(name, stack=stack), force=False))
    steps.append(_owned(root, "CLAUDE.md", render_scaffold("CLAUDE.md"), force=False))

    steps.extend(_merged(root, rel, new, old) for rel, new, old in merged)
    return [*steps, *pensa_steps]


def _check_pn(env: Mapping[str, str]) -> None:
    if proc.which("pn", env) is None:
        raise MergeError(
            "pn is not on PATH: sgf init sets pensa up with `pn init`; install pensa "
            "(it comes with sgf) and run sgf init again"
        )


def init_pensa(root: Path, *, env: Mapping[str, str]) -> list[Step]:
    """Set pensa up with `pn init`, the one code path for it.

    `pn init` creates `.pensa/` (database, JSONL, .gitignore), merges pensa's hooks into
    `.pre-commit-config.yaml`, installs the four git hooks, and registers the JSONL merge
    driver; existing JSONL (a cloned project) is merged into the database, never replaced.
    """
    done = proc.run(["pn", "init", "--json"], cwd=root, env=env, check=False)
    if done.returncode != 0:
        raise MergeError(_pn_error(done.stderr))
    out = done.stdout
    try:
        done = json.loads(out)
        return [Step(item["path"], _PN_ACTIONS.get(item["action"], Action.KEPT)) for item in done]
    except (ValueError, KeyError, TypeError) as e:
        raise CommandFailed(["pn", "init", "--json"], 0, f"unexpected output: {out[:200]}") from e


def _pn_error(stderr: str) -> str:
    """pn's one-line `{"error": ...}` as plain text."""
    line = stderr.strip().splitlines()[-1] if stderr.strip() else "pn init failed"
    try:
        return f"pn init: {json.loads(line)['error']}"
    except (ValueError, KeyError, TypeError):
        return f"pn init: {line}"


_PN_ACTIONS = {
    "created": Action.CREATED,
    "updated": Action.MERGED,
    "kept": Action.KEPT,
    "installed": Action.INSTALLED,
}


def ensure_repo(cwd: Path, *, create: bool) -> Path:
    """Return the git work tree root for `cwd`, running `git init` first when `create`."""
    if create:
        try:
            return git.toplevel(cwd)
        except NotAGitRepo:
            return git.init(cwd)
    return git.toplevel(cwd)

"""`sgf init`: lay out a Springfield project in a git work tree, merging into what exists."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sgf import config as config_mod
from sgf import git, merges, proc, resources
from sgf.config import Config
from sgf.errors import MergeError, NotAGitRepo
from sgf.stacks import Stack

PROMPTS = ("spec", "build", "verify", "test-plan", "test", "issues", "issues-plan")
JSONL = ("issues.jsonl", "deps.jsonl", "comments.jsonl")
HOOK_TYPES = ("pre-commit", "post-merge", "post-checkout", "post-rewrite")


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


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary sibling and rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.sgf-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _owned(root: Path, rel: str, text: str, *, force: bool) -> Step:
    """Create a file sgf seeds; keep a user's copy unless `force`."""
    path = root / rel
    if path.exists():
        if not force or path.read_text(encoding="utf-8") == text:
            return Step(rel, Action.KEPT)
        write_atomic(path, text)
        return Step(rel, Action.OVERWRITTEN)
    write_atomic(path, text)
    return Step(rel, Action.CREATED)


def _merged(root: Path, rel: str, new: str, old: str | None) -> Step:
    if old == new:
        return Step(rel, Action.KEPT)
    write_atomic(root / rel, new)
    return Step(rel, Action.CREATED if old is None else Action.MERGED)


def _read(root: Path, rel: str) -> str | None:
    """The text of a file sgf merges into; MergeError when it cannot be read as text."""
    path = root / rel
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
    old = _read(root, ".pre-commit-config.yaml")
    template = resources.read_text("scaffold", "pre-commit-config.yaml")
    merged.append((".pre-commit-config.yaml", merges.precommit_config(old, template), old))

    steps: list[Step] = []
    config = Config(stack=stack.name, docker_template=stack.docker_template)
    step = _owned(root, ".sgf/config.toml", config.to_toml(), force=force)
    if step.action is Action.KEPT:
        kept = config_mod.load(root).stack
        if kept != stack.name:
            note = f"stack stays {kept}; --force re-seeds config, backpressure, prompts"
            step = Step(step.path, step.action, note)
    steps.append(step)
    steps.append(_owned(root, ".sgf/backpressure.md", stack.backpressure(), force=force))
    for stage in PROMPTS:
        text = resources.read_text("prompts", f"{stage}.md")
        steps.append(_owned(root, f".sgf/prompts/{stage}.md", text, force=force))
    memento = render_scaffold("memento.md", stack=stack)
    steps.append(_owned(root, "memento.md", memento, force=force))
    for rel, name in (("specs/README.md", "specs-README.md"), ("AGENTS.md", "AGENTS.md")):
        steps.append(_owned(root, rel, render_scaffold(name, stack=stack), force=False))
    steps.append(_owned(root, "CLAUDE.md", render_scaffold("CLAUDE.md"), force=False))

    steps.extend(_merged(root, rel, new, old) for rel, new, old in merged)

    steps.extend(init_pensa(root, env=env))
    steps.append(install_hooks(root, env=env))
    return steps


def init_pensa(root: Path, *, env: Mapping[str, str]) -> list[Step]:
    """Create `.pensa/` with empty JSONL files and let `pn import` build the database.

    Existing JSONL (a cloned project) is never overwritten: `pn import` builds the database
    from it. An existing database is left alone.
    """
    pensa = root / ".pensa"
    pensa.mkdir(exist_ok=True)
    steps = []
    for name in JSONL:
        path = pensa / name
        if path.exists():
            steps.append(Step(f".pensa/{name}", Action.KEPT))
        else:
            path.touch()
            steps.append(Step(f".pensa/{name}", Action.CREATED))
    if (pensa / "db.sqlite").exists():
        return [*steps, Step(".pensa/db.sqlite", Action.KEPT)]
    if proc.which("pn", env) is None:
        note = "pn not on PATH: the database is built from the JSONL on first use"
        return [*steps, Step(".pensa/db.sqlite", Action.SKIPPED, note)]
    proc.run(["pn", "import"], cwd=root, env={**env, "PN_DIR": str(pensa)})
    if not (pensa / "db.sqlite").exists():
        note = "`pn import` made no database: it is built from the JSONL on first use"
        return [*steps, Step(".pensa/db.sqlite", Action.SKIPPED, note)]
    return [*steps, Step(".pensa/db.sqlite", Action.CREATED)]


def install_hooks(root: Path, *, env: Mapping[str, str]) -> Step:
    """Install the git hooks with the pre-commit package (local hooks only: works offline)."""
    argv = [sys.executable, "-m", "pre_commit", "install", "--overwrite"]
    for hook_type in HOOK_TYPES:
        argv += ["--hook-type", hook_type]
    proc.run(argv, cwd=root, env=env)
    return Step(".git/hooks", Action.INSTALLED, ", ".join(HOOK_TYPES))


def ensure_repo(cwd: Path, *, create: bool) -> Path:
    """Return the git work tree root for `cwd`, running `git init` first when `create`."""
    if create:
        try:
            return git.toplevel(cwd)
        except NotAGitRepo:
            return git.init(cwd)
    return git.toplevel(cwd)

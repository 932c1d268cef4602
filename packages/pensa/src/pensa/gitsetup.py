"""`pn init`: set a git repository up for pensa, idempotently (a second run changes nothing).

What it puts in place, and why:
- `.pensa/` with its `.gitignore`, the database and the committed JSONL files;
- `.pre-commit-config.yaml` entries (merged into an existing file): `pn export` before each
  commit, `pn sync` after commit (which moves the sync's base on to what was committed,
  `pensa.committed.head`), checkout, merge and rewrite. Each entry is a tiny `sh` guard, so a
  commit made where `pn` is not on PATH (an IDE, a teammate without pensa) prints one warning
  line and goes on instead of failing;
- the five git hooks, installed by the pre-commit framework;
- `.gitattributes` `.pensa/*.jsonl merge=pensa` and the `merge.pensa.driver` registration in
  `.git/config`, so two branches that add or edit issues never conflict on `.pensa/`;
- `.git/config` settings that keep git out of nested repositories (SUBMODULE_SAFETY): an
  agent in the sandbox can make a folder of the work tree a repository whose own config runs
  its commands (fsmonitor, filters), and without them your plain `git status`, `git diff` and
  `git commit` run `git status` inside it. `.git/config` is read-only in the sandbox, so the
  agent cannot undo them; sgf ensures them again before every launch.
A fresh clone runs `pn init` once, like `pre-commit install`; `pn doctor` says when it is due.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa import git
from pensa.errors import PensaError
from pensa.shared.hardgit import SUBMODULE_SAFETY

if TYPE_CHECKING:
    from collections.abc import Mapping

HOOK_TYPES = ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite")
ATTRIBUTES_LINE = ".pensa/*.jsonl merge=pensa"
DRIVER_NAME = "pensa JSONL merge (pn merge-driver)"
# The one place the driver command is spelled. git runs it through the shell with %O %A %B
# as temp file names and %P as the quoted path; without pn it falls back to git's own text
# merge (conflict markers), never to a silent "ours".
MERGE_DRIVER = (
    'sh -c \'if command -v pn >/dev/null 2>&1; then exec pn merge-driver "$0" "$1" "$2" '
    '"$3"; fi; echo "pensa: pn is not on PATH: $3 merged as text (install pensa, or resolve '
    'by hand and run pn export)" >&2; exec git merge-file "$1" "$0" "$2"\' %O %A %B %P'
)


def _guarded(command: str, skipped: str) -> str:
    """An entry that runs `pn COMMAND`; when pn is missing, it says so in one line on the
    terminal (pre-commit shows a hook's own output only when it fails, so one line per hook
    when all is well) and lets git go on."""
    return (
        "sh -c 'if command -v pn >/dev/null 2>&1; then exec pn "
        + command
        + '; fi; { echo "pensa: pn is not on PATH: '
        + skipped
        + " (install pensa: see its README)\" >/dev/tty; } 2>/dev/null; exit 0' --"
    )


PRECOMMIT_HOOKS: tuple[dict[str, Any], ...] = (
    {
        "id": "pensa-export",
        "name": "pensa: export the database to .pensa/*.jsonl",
        "entry": _guarded("export", "skipped pn export; .pensa/*.jsonl are committed as they are"),
        "language": "system",
        "always_run": True,
        "pass_filenames": False,
        "stages": ["pre-commit"],
    },
    {
        "id": "pensa-sync",
        "name": "pensa: merge .pensa/*.jsonl into the database",
        "entry": _guarded("sync", "skipped pn sync; the next pn command catches up"),
        "language": "system",
        "always_run": True,
        "pass_filenames": False,
        "stages": ["post-commit", "post-merge", "post-checkout", "post-rewrite"],
    },
)
# Ids earlier versions installed (when the hooks ran `pn import`, which replaced the database).
OLD_HOOK_IDS = ("pensa-import",)


class Step(NamedTuple):
    """One thing `pn init` looked at: the path, and what it did (created, updated, kept)."""

    path: str
    action: str

    def to_json(self) -> dict[str, str]:
        """The JSON object of `pn init --json`."""
        return {"path": self.path, "action": self.action}


def precommit_config(text: str | None) -> str:
    """`.pre-commit-config.yaml` with pensa's hooks: appended when missing, replaced when old.

    An existing file keeps its text and comments when the hooks only need appending; an
    out-of-date pensa entry is rewritten, which re-dumps the file from its data."""
    import yaml

    wanted_ids = {hook["id"] for hook in PRECOMMIT_HOOKS}
    if text is None or not text.strip():
        return yaml.safe_dump({"repos": [_local_repo()]}, sort_keys=False)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PensaError(f".pre-commit-config.yaml is not valid YAML: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("repos", []), list):
        raise PensaError(".pre-commit-config.yaml must be a mapping with a `repos` list")
    repos = data.setdefault("repos", [])
    if not all(isinstance(r, dict) and isinstance(r.get("hooks") or [], list) for r in repos):
        raise PensaError(".pre-commit-config.yaml: each of `repos` must be a mapping with `hooks`")
    current = {
        hook.get("id"): hook
        for repo in repos
        for hook in (repo.get("hooks") or [])
        if isinstance(hook, dict)
    }
    outdated = any(i in current for i in OLD_HOOK_IDS) or any(
        h["id"] in current and current[h["id"]] != h for h in PRECOMMIT_HOOKS
    )
    if not outdated:
        missing = [dict(h) for h in PRECOMMIT_HOOKS if h["id"] not in current]
        if not missing:
            return text
        item = yaml.safe_dump([{"repo": "local", "hooks": missing}], sort_keys=False)
        appended = text.rstrip("\n") + "\n" + _indent(item, _list_indent(text))
        wanted = {**data, "repos": [*repos, {"repo": "local", "hooks": missing}]}
        if "repos:" in text and yaml.safe_load(appended) == wanted:
            return appended
        return yaml.safe_dump(wanted, sort_keys=False)
    drop = {*wanted_ids, *OLD_HOOK_IDS}
    kept = []
    for repo in repos:
        hooks = [
            h
            for h in (repo.get("hooks") or [])
            if not (isinstance(h, dict) and h.get("id") in drop)
        ]
        if hooks or not repo.get("hooks"):
            kept.append({**repo, "hooks": hooks} if "hooks" in repo else repo)
    return yaml.safe_dump({**data, "repos": [*kept, _local_repo()]}, sort_keys=False)


def _local_repo() -> dict[str, Any]:
    return {"repo": "local", "hooks": [dict(h) for h in PRECOMMIT_HOOKS]}


def _list_indent(text: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("repos:"):
            for item in lines[i + 1 :]:
                if item.lstrip().startswith("-"):
                    return item[: len(item) - len(item.lstrip())]
    return "  "


def _indent(block: str, indent: str) -> str:
    return "".join(indent + line if line.strip() else line for line in block.splitlines(True))


def gitattributes(text: str | None) -> str:
    """`.gitattributes` with the pensa merge line."""
    text = text or ""
    if ATTRIBUTES_LINE in {line.strip() for line in text.splitlines()}:
        return text
    sep = "" if not text or text.endswith("\n") else "\n"
    note = "# pensa: merge the tracker's JSONL by issue id (pn merge-driver)"
    return f"{text}{sep}{note}\n{ATTRIBUTES_LINE}\n"


def _update(path: str, new: str, old: str | None) -> Step:
    name = os.path.basename(path)
    if old == new:
        return Step(name, "kept")
    from pensa.safefile import write_atomically

    write_atomically(path, new)
    return Step(name, "created" if old is None else "updated")


# The set-up files are read whole and rewritten: a bound on what a planted one makes pn hold.
SETUP_FILE_MAX = 1 << 20


def _read(path: str) -> str | None:
    """A set-up file's text (None when missing), read as `safefile` reads: a link,
    FIFO or device is refused, and so is a file past SETUP_FILE_MAX."""
    from pensa.safefile import read_regular

    data = read_regular(path, limit=SETUP_FILE_MAX)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PensaError(f"cannot read {path}: {e}; fix or move it and run pn init again") from e


def missing_setup(top: str, env: Mapping[str, str]) -> list[str]:
    """What `pn init` would still have to do in the repository at `top` (empty: nothing)."""
    missing = []
    hooks_dir = git.run(["rev-parse", "--git-path", "hooks"], cwd=top, env=env).out.strip()
    hooks_dir = os.path.join(top, hooks_dir) if hooks_dir else ""
    for hook in HOOK_TYPES:
        if not hooks_dir or not os.path.exists(os.path.join(hooks_dir, hook)):
            missing.append(f"the {hook} hook")
    driver = git.run(["config", "merge.pensa.driver"], cwd=top, env=env).out.strip()
    if driver != MERGE_DRIVER:
        missing.append("the merge driver in .git/config")
    if _unsafe_submodule_settings(top, env):
        missing.append("the submodule settings in .git/config")
    attributes = _read(os.path.join(top, ".gitattributes")) or ""
    if ATTRIBUTES_LINE not in {line.strip() for line in attributes.splitlines()}:
        missing.append(f"`{ATTRIBUTES_LINE}` in .gitattributes")
    config = _read(os.path.join(top, ".pre-commit-config.yaml"))
    if config is None or precommit_config(config) != config:
        missing.append("pensa's entries in .pre-commit-config.yaml")
    return missing


def init(cwd: str, env: Mapping[str, str]) -> list[Step]:
    """Set the git repository around `cwd` up for pensa; return what was done."""
    from pensa import project as projects
    from pensa.committed import sync
    from pensa.project import KINDS
    from pensa.store import Store

    top = git.toplevel(cwd, env)
    if top is None:
        raise PensaError(f"{cwd} is not in a git work tree; run `git init` first, then pn init")
    project = projects.locate(cwd, env) or projects.at(os.path.join(top, projects.DIRNAME))
    config_path = os.path.join(top, ".pre-commit-config.yaml")
    attributes_path = os.path.join(top, ".gitattributes")
    # Everything that can refuse is read and checked before the first write.
    old_config = _read(config_path)
    new_config = precommit_config(old_config)
    old_attributes = _read(attributes_path)
    steps = [Step(".pensa/", "kept" if project.exists() else "created")]
    project.ensure()
    ignore = os.path.join(project.dir, ".gitignore")
    steps.append(
        _update(ignore, projects.GITIGNORE, _read(ignore))._replace(path=".pensa/.gitignore")
    )
    had_db = os.path.exists(project.db)
    before = {n: os.path.exists(os.path.join(project.dir, n)) for n in KINDS}
    with Store.open(project.db) as store:
        sync.export(store, project, env)
    steps.append(Step(".pensa/db.sqlite", "kept" if had_db else "created"))
    for name in KINDS:
        if os.path.exists(os.path.join(project.dir, name)):
            steps.append(Step(f".pensa/{name}", "kept" if before[name] else "created"))
    steps.append(_update(config_path, new_config, old_config))
    steps.append(_update(attributes_path, gitattributes(old_attributes), old_attributes))
    steps.append(_register_driver(top, env))
    steps.append(_keep_out_of_submodules(top, env))
    steps.append(_install_hooks(top, env))
    return steps


def _register_driver(top: str, env: Mapping[str, str]) -> Step:
    current = git.run(["config", "merge.pensa.driver"], cwd=top, env=env).out.strip()
    if current == MERGE_DRIVER:
        return Step(".git/config merge.pensa", "kept")
    for key, value in (("merge.pensa.name", DRIVER_NAME), ("merge.pensa.driver", MERGE_DRIVER)):
        done = git.run(["config", key, value], cwd=top, env=env)
        if done.code != 0:
            raise PensaError(f"git config {key} failed: {done.err.strip()}")
    return Step(".git/config merge.pensa", "created" if not current else "updated")


def _unsafe_submodule_settings(top: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The SUBMODULE_SAFETY pairs `.git/config` does not hold yet."""
    return [
        (key, value)
        for key, value in SUBMODULE_SAFETY
        if git.run(["config", "--local", "--get", key], cwd=top, env=env).out.strip() != value
    ]


def _keep_out_of_submodules(top: str, env: Mapping[str, str]) -> Step:
    missing = _unsafe_submodule_settings(top, env)
    for key, value in missing:
        done = git.run(["config", "--local", key, value], cwd=top, env=env)
        if done.code != 0:
            raise PensaError(f"git config {key} failed: {done.err.strip()}")
    if not missing:
        return Step(".git/config submodules", "kept")
    return Step(".git/config submodules", "updated")


def _install_hooks(top: str, env: Mapping[str, str]) -> Step:
    missing = [h for h in missing_setup(top, env) if h.endswith("hook")]
    if not missing:
        return Step(".git/hooks", "kept")
    # pn init is no hot path, and pre-commit must run in the work tree: subprocess is fine.
    import subprocess

    argv = [sys.executable, "-m", "pre_commit", "install", "--overwrite"]
    for hook_type in HOOK_TYPES:
        argv += ["--hook-type", hook_type]
    done = subprocess.run(argv, cwd=top, env=dict(env), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        raise PensaError(f"pre-commit install failed ({done.returncode}): {why[-1] if why else ''}")
    return Step(".git/hooks", "installed")

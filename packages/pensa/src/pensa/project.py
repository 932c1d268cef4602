"""Where a project's `.pensa/` lives, and who is acting.

Agents `cd` into sub-folders; upstream pn then silently used a new empty database there and
"all issues appeared lost" (springfield notes §5, pn-bc8e349a). So we walk up from the working
directory; `PN_DIR` names the `.pensa` directory itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pensa import git

if TYPE_CHECKING:
    from collections.abc import Mapping

DIRNAME = ".pensa"
GITIGNORE = (
    "# pensa: the database is local; the JSONL files are committed.\n"
    "db.sqlite\ndb.sqlite-journal\n*.tmp\n"
)


class Project(NamedTuple):
    """A `.pensa` directory and the files in it."""

    dir: Path

    @property
    def db(self) -> Path:
        return self.dir / "db.sqlite"

    @property
    def issues_jsonl(self) -> Path:
        return self.dir / "issues.jsonl"

    @property
    def deps_jsonl(self) -> Path:
        return self.dir / "deps.jsonl"

    @property
    def comments_jsonl(self) -> Path:
        return self.dir / "comments.jsonl"

    def jsonl_files(self) -> tuple[Path, Path, Path]:
        return (self.issues_jsonl, self.deps_jsonl, self.comments_jsonl)

    def exists(self) -> bool:
        return self.dir.is_dir()

    def ensure(self) -> None:
        """Create the directory (with a .gitignore for the database) if missing."""
        if not self.dir.is_dir():
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / ".gitignore").write_text(GITIGNORE)


def locate(cwd: Path, env: Mapping[str, str]) -> Project | None:
    """`PN_DIR`, else the nearest `.pensa/` in cwd or a parent; None when there is none."""
    if env.get("PN_DIR"):
        return Project(cwd / env["PN_DIR"])
    for folder in (cwd, *cwd.parents):
        if (folder / DIRNAME).is_dir():
            return Project(folder / DIRNAME)
    return None


def locate_or_new(cwd: Path, env: Mapping[str, str]) -> Project:
    """The project to use for a write: found, or new at the git top level (else cwd)."""
    found = locate(cwd, env)
    if found is not None:
        return found
    top = git.toplevel(cwd, env)
    return Project((Path(top) if top else cwd) / DIRNAME)


def actor(flag: str | None, cwd: Path, env: Mapping[str, str]) -> str:
    """`--actor` > `PN_ACTOR` > `git config user.name` > `$USER` > "unknown"."""
    return flag or env.get("PN_ACTOR") or git.user_name(cwd, env) or env.get("USER") or "unknown"

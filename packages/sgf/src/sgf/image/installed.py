"""A buildable source tree of the installed pensa, for an sgf installed without a clone.

`uv tool install` or `pip install` of the wheels leaves no pensa source behind, yet the sandbox
image must carry the very `pn` the host runs. The installed distribution holds all
it takes: its files, its requirements and its console scripts. `materialise` writes them back
as a small hatchling project that `pip wheel` builds like the workspace checkout.
"""

from __future__ import annotations

import shutil
from importlib import metadata
from pathlib import Path


def pyproject(
    *, name: str, version: str, dependencies: list[str], scripts: dict[str, str], package: str
) -> str:
    """The small hatchling project's pyproject.toml, written with tomli-w."""
    import tomli_w

    return tomli_w.dumps(
        {
            "project": {
                "name": name,
                "version": version,
                "requires-python": ">=3.11",
                "dependencies": dependencies,
                "scripts": scripts,
            },
            "build-system": {"requires": ["hatchling"], "build-backend": "hatchling.build"},
            "tool": {"hatch": {"build": {"targets": {"wheel": {"packages": [f"src/{package}"]}}}}},
        }
    )


def materialise(dest: Path, *, distribution: str = "pensa", package: str = "pensa") -> Path:
    """Write the installed `distribution` to `dest` as a source tree; return `dest`.

    Raises metadata.PackageNotFoundError when it is not installed.
    """
    dist = metadata.distribution(distribution)
    requires = [r for r in dist.requires or [] if "extra ==" not in r]
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "src").mkdir(parents=True)
    for file in dist.files or []:
        parts = Path(str(file)).parts
        if not parts or parts[0] != package or "__pycache__" in parts or file.suffix == ".pyc":
            continue
        target = dest / "src" / Path(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(str(dist.locate_file(file))), target)
    (dest / "pyproject.toml").write_text(
        pyproject(
            name=dist.metadata["Name"],
            version=dist.version,
            dependencies=sorted(requires),
            scripts=dict(sorted(scripts.items())),
            package=package,
        )
    )
    return dest

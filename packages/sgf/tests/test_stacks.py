"""Every stack's default sandbox image and the Debian packages its toolchain needs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgf import resources, stacks
from sgf.errors import UnknownStack

IMAGES = {
    "python": "springfield-sandbox-python:latest",
    "rust": "springfield-sandbox-rust:latest",
    "typescript": "springfield-sandbox-typescript:latest",
    "go": "springfield-sandbox-go:latest",
    "tauri": "springfield-sandbox-tauri:latest",
    "generic": "springfield-sandbox:latest",  # the minimal image; older configs name it too
}
RUST = ("cargo", "rustc", "rustfmt", "rust-clippy")
PACKAGES = {
    "python": ("python3-venv", "python3-pip"),
    "rust": RUST,
    "typescript": ("nodejs", "npm"),
    "go": ("golang-go",),
    "tauri": (
        *RUST,
        "nodejs",
        "npm",
        "build-essential",
        "pkg-config",
        "file",
        "libssl-dev",
        "libgtk-3-dev",
        "libwebkit2gtk-4.0-dev",
        "libwebkit2gtk-4.1-dev",
        "libayatana-appindicator3-dev",
        "librsvg2-dev",
    ),
    "generic": ("make",),
}
# The programs each backpressure.md runs, and the package in the stack's image that provides it.
PROGRAMS = {
    "python": {"python3": "python3-venv", ".venv/bin/": "python3-venv"},
    "rust": {"cargo fmt": "rustfmt", "cargo clippy": "rust-clippy", "cargo ": "cargo"},
    "typescript": {"npm ": "npm", "npx ": "npm"},
    "go": {"gofmt ": "golang-go", "go ": "golang-go"},
    "tauri": {
        "cargo fmt": "rustfmt",
        "cargo clippy": "rust-clippy",
        "cargo ": "cargo",
        "npx ": "npm",
        "npm ": "npm",
    },
    "generic": {"make ": "make"},
}


def test_every_stack_is_covered() -> None:
    assert set(stacks.names()) == set(IMAGES) == set(PACKAGES) == set(PROGRAMS)


@pytest.mark.parametrize("name", stacks.names())
def test_stack_has_its_own_image_and_packages(name: str) -> None:
    stack = stacks.get(name)
    assert stack.docker_template == IMAGES[name]
    assert stack.packages == PACKAGES[name]
    assert resources.names("stacks", name) == ["backpressure.md", "sandbox.toml"]


def commands(text: str) -> list[str]:
    """The first `command` of each row of the backpressure tables."""
    found = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and (m := re.search(r"`([^`]+)`", cells[-1])):
            found.append(m.group(1))
    return found


@pytest.mark.parametrize("name", stacks.names())
def test_backpressure_names_only_programs_its_image_installs(name: str) -> None:
    stack = stacks.get(name)
    run = commands(stack.backpressure())
    assert run, name
    for command in run:
        # run-silent is the image's own (templates/sandbox/run-silent): the command it runs counts
        command = re.sub(r"^run-silent \S+ -- ", "", command)
        command = re.sub(r"^sh -c \"(.*)\"$", r"\1", command)  # one step of several commands
        for part in re.split(r"&&|\|\|", command):
            program = next((p for p in PROGRAMS[name] if part.strip().startswith(p)), None)
            assert program is not None, f"{name}: {part.strip()!r} has no package"
            assert PROGRAMS[name][program] in stack.packages


def test_unknown_stack_lists_the_choices() -> None:
    with pytest.raises(UnknownStack):
        stacks.get("cobol")


def test_project_images_name_the_project_and_differ_between_projects(tmp_path: Path) -> None:
    stack = stacks.get("python")
    first, second = tmp_path / "My Project", tmp_path / "other" / "My Project"
    image = stack.project_image(first)
    assert re.fullmatch(r"springfield-sandbox-python:my-project-[0-9a-f]{8}", image)
    assert stack.project_image(second) != image
    assert stack.project_image(first) == image  # stable for one project
    assert stacks.get("generic").project_image(tmp_path / "..").startswith("springfield-sandbox:")


def test_each_stack_names_the_registries_its_agents_may_reach() -> None:
    assert {name: stacks.get(name).registries for name in stacks.names()} == {
        "python": ("pypi.org", "files.pythonhosted.org"),
        "rust": ("crates.io", "static.crates.io", "index.crates.io"),
        "typescript": ("registry.npmjs.org",),
        "go": ("proxy.golang.org", "sum.golang.org"),
        "tauri": ("crates.io", "static.crates.io", "index.crates.io", "registry.npmjs.org"),
        "generic": (),
    }

"""The sandbox image: content hash, staleness, and a real build (once per session)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import pytest

from sgf import claude, resources, stacks
from sgf.errors import SgfError
from sgf.image import sandboximage

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Image = Callable[..., str]  # the `labelled` fixture (conftest.py)
WORKSPACE = Path(__file__).resolve().parents[4]
PENSA = WORKSPACE / "packages" / "pensa"
TEST_IMAGE = "springfield-sandbox:sgf-test"


def copy_pensa(dest: Path) -> Path:
    shutil.copytree(PENSA, dest, ignore=shutil.ignore_patterns("__pycache__", "tests", ".*"))
    return dest


def test_pensa_source_is_found_from_the_editable_install() -> None:
    assert sandboximage.pensa_source() == PENSA


def test_explicit_pensa_source_must_be_a_project(tmp_path: Path) -> None:
    with pytest.raises(SgfError, match=r"has no pyproject\.toml"):
        sandboximage.pensa_source(tmp_path)
    assert sandboximage.pensa_source(PENSA) == PENSA


def test_content_hash_is_stable_and_follows_every_input(tmp_path: Path) -> None:
    src = copy_pensa(tmp_path / "pensa")
    first = sandboximage.content_hash(base="b", claude_version="1", pensa_src=src)
    assert first == sandboximage.content_hash(base="b", claude_version="1", pensa_src=src)
    assert first != sandboximage.content_hash(base="c", claude_version="1", pensa_src=src)
    assert first != sandboximage.content_hash(base="b", claude_version="2", pensa_src=src)
    (src / "src" / "pensa" / "__init__.py").write_text("# changed\n")
    assert first != sandboximage.content_hash(base="b", claude_version="1", pensa_src=src)


def test_content_hash_follows_the_stack_packages() -> None:
    go = sandboximage.content_hash(
        base="b", claude_version="1", pensa_src=PENSA, packages=["golang-go"]
    )
    assert go != sandboximage.content_hash(base="b", claude_version="1", pensa_src=PENSA)
    assert go != sandboximage.content_hash(
        base="b", claude_version="1", pensa_src=PENSA, packages=["golang-go", "make"]
    )


@pytest.mark.parametrize("name", stacks.names())
def test_the_build_passes_the_stack_packages_and_labels_the_stack(name: str) -> None:
    stack = stacks.get(name)
    assert sandboximage.build_args(stack, "b") == {
        "BASE": "b",
        "PACKAGES": " ".join(stack.packages),
    }
    assert sandboximage.image_labels(stack=stack, base="b", claude_version="9", digest="d") == {
        sandboximage.HASH_LABEL: "d",
        sandboximage.BASE_LABEL: "b",
        sandboximage.CLAUDE_LABEL: "9",
        sandboximage.STACK_LABEL: name,
    }


def test_dockerfile_installs_the_packages_before_the_wheels_and_claude() -> None:
    text = resources.read_text("sandbox", "Dockerfile")
    apt = text.index("apt-get install")
    assert text.index("ARG PACKAGES") < apt < text.index("COPY wheels") < text.index("COPY claude")
    assert "$PACKAGES" in text[text.index("ARG PACKAGES") : apt]


@pytest.mark.parametrize(
    ("configured", "stack", "image", "expected"),
    [
        (None, None, None, ("generic", "springfield-sandbox:latest")),
        (None, "go", None, ("go", "springfield-sandbox-go:latest")),
        (None, "go", "mine:1", ("go", "mine:1")),
        (("rust", "springfield-sandbox-rust:latest"), None, None,
         ("rust", "springfield-sandbox-rust:latest")),
        (("python", "springfield-sandbox:latest"), None, None,
         ("python", "springfield-sandbox:latest")),  # an older config keeps its tag
        (("python", "custom:2"), "python", None, ("python", "custom:2")),
        (("python", "custom:2"), "go", None, ("go", "springfield-sandbox-go:latest")),
        (("python", "custom:2"), None, "other:3", ("python", "other:3")),
    ],
)  # fmt: skip
def test_target_prefers_options_then_the_project_then_the_stack_default(
    configured: tuple[str, str] | None,
    stack: str | None,
    image: str | None,
    expected: tuple[str, str],
) -> None:
    chosen, tag = sandboximage.target(configured=configured, stack=stack, image=image)
    assert (chosen.name, tag) == expected


@pytest.mark.docker
def test_staleness_warns_only_for_our_images_with_changed_inputs(
    tmp_path: Path, labelled: Image
) -> None:
    current = sandboximage.content_hash(base="b", claude_version="1", pensa_src=PENSA)
    ours = {
        sandboximage.HASH_LABEL: current,
        sandboximage.BASE_LABEL: "b",
        sandboximage.CLAUDE_LABEL: "1",
    }
    env = dict(os.environ)
    assert sandboximage.staleness(tmp_path, labelled(**ours), env=env) == []
    old = labelled(**{**ours, sandboximage.HASH_LABEL: "old"})
    (warning,) = sandboximage.staleness(tmp_path, old, env=env)
    assert f"{old} is stale" in warning
    assert "sgf sandbox build" in warning
    assert sandboximage.staleness(tmp_path, labelled(maintainer="someone"), env=env) == []
    assert sandboximage.staleness(tmp_path, "springfield-no-such-image:1", env=env) == []


@pytest.mark.docker
def test_staleness_follows_the_stack_packages_of_the_image(tmp_path: Path, labelled: Image) -> None:
    go = stacks.get("go").packages
    current = sandboximage.content_hash(base="b", claude_version="1", pensa_src=PENSA, packages=go)
    ours = {
        sandboximage.HASH_LABEL: current,
        sandboximage.BASE_LABEL: "b",
        sandboximage.CLAUDE_LABEL: "1",
    }
    env = dict(os.environ)
    go_image = labelled(**{**ours, sandboximage.STACK_LABEL: "go"})
    assert sandboximage.staleness(tmp_path, go_image, env=env) == []
    # the same image seen as another stack's: its package list differs, so it is stale
    rust_image = labelled(**{**ours, sandboximage.STACK_LABEL: "rust"})
    assert len(sandboximage.staleness(tmp_path, rust_image, env=env)) == 1


def test_claude_binary_is_reused_from_the_cache(tmp_path: Path) -> None:
    env = {"SPRINGFIELD_CACHE": str(tmp_path), "PATH": "/nonexistent"}
    path = tmp_path / "claude-code-9.9.9" / "node_modules" / claude.package() / "claude"
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    assert claude.binary("9.9.9", env=env) == path
    with pytest.raises(SgfError, match="npm not found"):
        claude.binary("9.9.8", env=env)


def test_cache_dir_follows_springfield_cache_then_xdg_then_home() -> None:
    assert claude.cache_dir({"SPRINGFIELD_CACHE": "/c"}) == Path("/c")
    assert claude.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/springfield")
    assert claude.cache_dir({"HOME": "/h"}) == Path("/h/.cache/springfield")


def _real_cache() -> dict[str, str]:
    """Where make test's scripts/ensure-claude.sh caches claude (the real home, not a test's)."""
    env = dict(os.environ)
    env.setdefault("SPRINGFIELD_CACHE", str(claude.cache_dir(env)))
    return env


class Built(NamedTuple):
    image: str
    pensa_src: Path  # a snapshot: the workspace's pensa may change while the suite runs


def prune_old_test_images(keep: str, repository: str = "springfield-sandbox") -> None:
    """Remove test images of earlier inputs that are over an hour old (never `keep`).

    Tags carry the content hash so concurrent sessions with different inputs (engineers
    editing pensa while a suite runs) never overwrite each other's image.
    """
    listed = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}} {{.CreatedAt}}",
         repository],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    cutoff = time.time() - 3600
    for line in listed.splitlines():
        tag, created = line.split(" ", 1)
        if not tag.startswith(f"{repository}:sgf-test-") or tag == keep:
            continue
        when = datetime.strptime(" ".join(created.split()[:2]), "%Y-%m-%d %H:%M:%S")
        if when.replace(tzinfo=UTC).timestamp() < cutoff:
            subprocess.run(["docker", "rmi", tag], capture_output=True, check=False)


@pytest.fixture(scope="session")
def sandbox_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The sandbox image built once per session from the real inputs (reused when current)."""
    src = copy_pensa(tmp_path_factory.mktemp("pensa-snapshot") / "pensa")
    generic = stacks.get("generic").packages
    digest = sandboximage.content_hash(
        base=base_image, claude_version=claude.VERSION, pensa_src=src, packages=generic
    )
    image = f"{TEST_IMAGE}-{digest[:12]}"
    argv = [str(Path(sys.executable).parent / "sgf"), "sandbox", "build", "--image", image,
            "--base", base_image, "--pensa-source", str(src)]  # fmt: skip
    binary = os.environ.get("SPRINGFIELD_CLAUDE")
    if binary:
        argv += ["--claude-binary", binary]
    env = {**_real_cache(), "CLAUDE_CODE_VERSION": claude.VERSION}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    prune_old_test_images(keep=image)
    return Built(image, src)


def docker_run(image: str, *command: str) -> str:
    done = subprocess.run(
        ["docker", "run", "--rm", image, *command], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.docker
def test_sandbox_image_has_claude_pn_precommit_and_git(sandbox_image: Built) -> None:
    image = sandbox_image.image
    assert docker_run(image, "claude", "--version").startswith(claude.VERSION)
    assert "claim-next" in docker_run(image, "pn", "--help")
    assert "pre-commit" in docker_run(image, "pre-commit", "--version")
    assert "git version" in docker_run(image, "git", "--version")


@pytest.mark.docker
def test_sandbox_image_is_labelled_and_a_rebuild_is_skipped(
    sandbox_image: Built, base_image: str
) -> None:
    image, src = sandbox_image
    labels = json.loads(
        subprocess.run(
            ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", image],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    expected = sandboximage.content_hash(
        base=base_image,
        claude_version=claude.VERSION,
        pensa_src=PENSA,
        packages=stacks.get("generic").packages,
    )
    assert labels[sandboximage.HASH_LABEL] == expected
    assert labels[sandboximage.BASE_LABEL] == base_image
    assert labels[sandboximage.STACK_LABEL] == "generic"  # outside a project, without --stack
    again = subprocess.run(
        [str(Path(sys.executable).parent / "sgf"), "sandbox", "build", "--image", image,
         "--base", base_image, "--pensa-source", str(src), "--claude-binary", sys.executable],
        env=_real_cache(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"{image} up to date ({sandboximage.HASH_LABEL}={expected})" in again.stdout


GO_PROJECT = {
    "go.mod": "module example.com/greet\n\ngo 1.19\n",
    "greet.go": 'package greet\n\nfunc Greet(name string) string {\nreturn "hello " + name\n}\n',
    "greet_test.go": (
        'package greet\n\nimport "testing"\n\nfunc TestGreet(t *testing.T) {\n'
        '\tif Greet("go") != "hello go" {\n\t\tt.Fatal("wrong greeting")\n\t}\n}\n'
    ),
}


@pytest.mark.docker
@pytest.mark.claude
def test_go_project_builds_its_stack_image_and_backpressure_runs_in_it(
    repo: Path, sgf: Run, base_image: str, claude_bin: Path, tmp_path: Path
) -> None:
    """The cheapest real toolchain: `sgf sandbox build` in a go project, then its backpressure."""
    assert sgf(repo, "init", "--stack", "go").returncode == 0
    for name, text in GO_PROJECT.items():
        (repo / name).write_text(text)
    src = copy_pensa(tmp_path / "pensa")
    go = stacks.get("go")
    digest = sandboximage.content_hash(
        base=base_image, claude_version=claude.VERSION, pensa_src=src, packages=go.packages
    )
    image = f"springfield-sandbox-go:sgf-test-{digest[:12]}"
    # no --stack: the project's config says go
    argv = ["sandbox", "build", "--image", image, "--base", base_image]
    done = sgf(repo, *argv, "--pensa-source", str(src), "--claude-binary", str(claude_bin),
               env={"CLAUDE_CODE_VERSION": claude.VERSION}, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    prune_old_test_images(keep=image, repository="springfield-sandbox-go")
    backpressure = " && ".join(
        [
            "gofmt -w .",
            'test -z "$(gofmt -l .)"',  # the same steps as templates/stacks/go/backpressure.md
            "go build ./...",
            "go vet ./...",
            "go test ./...",
        ]
    )
    for step in ("gofmt -w .", "go build ./...", "go vet ./...", "go test ./..."):
        assert re.search(rf"`(run-silent \S+ -- )?{re.escape(step)}`", go.backpressure()), step
    ran = subprocess.run(
        ["docker", "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp",
         "-v", f"{repo}:/project", "-w", "/project", image,
         "sh", "-c", backpressure],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "ok  \texample.com/greet" in ran.stdout
    assert (repo / "greet.go").read_text().count("\treturn") == 1  # gofmt really formatted it


def test_source_version_is_pensas_pyproject_version() -> None:
    assert sandboximage.source_version(PENSA) == sandboximage.host_pn_version()


def test_source_version_of_a_tree_that_states_its_version(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pensa"\nversion = "9.8.7"\n')
    assert sandboximage.source_version(tmp_path) == "9.8.7"


@pytest.mark.parametrize(("inside", "warned"), [("0.0.1", True), (None, False), ("same", False)])
def test_version_mismatch_warns_only_when_the_images_pn_differs(
    inside: str | None, *, warned: bool
) -> None:
    host = sandboximage.host_pn_version()
    assert host is not None
    found = {} if inside is None else {sandboximage.PN_LABEL: host if inside == "same" else inside}
    warnings = sandboximage.version_mismatch(found, "img:tag")
    assert bool(warnings) is warned
    if warned:
        assert warnings == [
            f"the sandbox image img:tag has pn 0.0.1 but this machine has pn {host}; "
            "run `sgf sandbox build`"
        ]

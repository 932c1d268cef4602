"""sgf's door to the Docker engine (the SDK): builds streamed line by line, the engine's own
words on failure, throw-away containers that never outlive their deadline."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgf.errors import BuildFailed, ImageUnavailable
from sgf.image import engine


@pytest.fixture
def tag(docker_engine: bool) -> Iterator[str]:
    """An image name of this test's own, removed afterwards (and proven gone)."""
    name = f"springfield-engine-test:{uuid.uuid4().hex[:12]}"
    yield name
    subprocess.run(["docker", "rmi", "-f", name], capture_output=True, check=False)
    assert not engine.exists(dict(os.environ), name)


def context(tmp_path: Path, dockerfile: str) -> Path:
    folder = tmp_path / "context"
    folder.mkdir()
    (folder / "Dockerfile").write_text(dockerfile)
    return folder


@pytest.mark.docker
def test_a_build_streams_its_lines_and_labels_the_image(
    tmp_path: Path, base_image: str, tag: str
) -> None:
    ctx = context(tmp_path, "ARG BASE\nFROM ${BASE}\nRUN echo hello from the build\n")
    lines = list(
        engine.build(dict(os.environ), ctx, tag=tag, buildargs={"BASE": base_image},
                     labels={"springfield.test": "yes"})
    )  # fmt: skip
    assert lines[0] == "Step 1/4 : ARG BASE"
    assert "hello from the build" in lines
    assert all("\n" not in line for line in lines)
    assert engine.labels(dict(os.environ), tag) == {"springfield.test": "yes"}


@pytest.mark.docker
def test_a_failed_build_says_why_in_the_engines_words(
    tmp_path: Path, base_image: str, tag: str
) -> None:
    ctx = context(tmp_path, f"FROM {base_image}\nRUN echo about to fail && exit 7\n")
    seen: list[str] = []
    lines = engine.build(dict(os.environ), ctx, tag=tag, buildargs={}, labels={})
    with pytest.raises(BuildFailed) as e:
        seen.extend(lines)
    assert "about to fail" in seen  # what the step printed came before the error
    assert f"docker build of {tag} failed: " in str(e.value)
    assert "returned a non-zero code: 7" in str(e.value)
    assert not engine.exists(dict(os.environ), tag)


@pytest.mark.docker
@pytest.mark.parametrize(
    ("argv", "timeout", "expected"),
    [
        (["sh", "-c", "echo out; echo err >&2"], 60, "out\n"),  # stdout only
        (["sh", "-c", "echo partial; exit 3"], 60, None),
        (["sleep", "60"], 1, None),  # outlived its deadline
    ],
)
def test_output_of_a_throw_away_container_that_never_stays(
    base_image: str, argv: list[str], timeout: float, expected: str | None
) -> None:
    name = f"springfield-engine-test-{uuid.uuid4().hex[:12]}"
    env = dict(os.environ)
    assert engine.output_of(env, base_image, argv, timeout=timeout, name=name) == expected
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"name=^{name}$"], capture_output=True, text=True
    )
    assert left.stdout.strip() == ""


@pytest.mark.docker
def test_output_of_a_missing_image_is_none(docker_engine: bool) -> None:
    assert engine.output_of(dict(os.environ), "springfield-no-such-image:1", ["true"]) is None


@pytest.mark.docker
def test_a_broken_tarball_is_not_imported(tmp_path: Path, tag: str) -> None:
    broken = tmp_path / "rootfs.tar"
    broken.write_bytes(b"not a tar archive" * 100)
    with pytest.raises(ImageUnavailable, match=rf"cannot get the image {tag}: "):
        engine.import_tarball(dict(os.environ), broken, tag)


def test_without_an_engine_nothing_is_found_and_nothing_answers(tmp_path: Path) -> None:
    dead = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    assert not engine.answers(dead)
    assert engine.labels(dead, "debian:bookworm-slim") is None
    assert engine.containers(dead, "springfield.project") == []
    assert not engine.remove_container(dead, "0123456789ab")
    assert engine.output_of(dead, "debian:bookworm-slim", ["true"]) is None


@pytest.mark.parametrize(
    ("event", "line"),
    [
        ({"status": "Pulling from library/debian", "id": "bookworm-slim"},
         "bookworm-slim: Pulling from library/debian"),
        ({"status": "Downloading", "progressDetail": {"current": 1, "total": 2},
          "progress": "[=>   ] 12MB/30MB", "id": "a1b2c3"},
         "a1b2c3: Downloading [=>   ] 12MB/30MB"),
        ({"status": "Digest: sha256:0123"}, "Digest: sha256:0123"),
        ({"progressDetail": {}}, ""),
    ],
)  # fmt: skip
def test_a_pulls_progress_reads_as_docker_pull_draws_it(
    event: dict[str, object], line: str
) -> None:
    assert engine.progress_line(event) == line

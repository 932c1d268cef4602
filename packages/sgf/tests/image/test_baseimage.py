"""The base image: chosen, pulled, or made here from Debian's mirror when no registry answers.

The Docker tests import the root file system scripts/ensure-base-image.sh (`sgf sandbox base`)
keeps in the shared cache, under a tag of their own, and remove what they made.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgf import claude
from sgf.errors import ImageUnavailable
from sgf.image import baseimage, engine

UNREACHABLE = "registry.invalid:5000/springfield/none:1"  # no such host, ever


class Recorded:
    """A Progress that remembers what it was told."""

    def __init__(self) -> None:
        self.phases: list[str] = []
        self.lines: list[str] = []
        self.abandoned: list[str] = []

    def phase(self, title: str, *, key: str | None = None) -> None:
        self.phases.append(title)

    def line(self, text: str) -> None:
        self.lines.append(text)

    def abandon(self, why: str) -> None:
        self.abandoned.append(why)


@pytest.mark.parametrize(
    ("explicit", "remembered", "expected"),
    [
        (None, None, (baseimage.DEFAULT, baseimage.MADE)),  # only the default has a stand-in
        ("mine:1", None, ("mine:1", None)),
        (None, "springfield-base:bookworm", ("springfield-base:bookworm", None)),
        ("mine:1", "springfield-base:bookworm", ("mine:1", None)),  # --base wins
        (baseimage.DEFAULT, None, (baseimage.DEFAULT, None)),  # asked for by name
    ],
)
def test_choose_takes_base_then_the_project_then_the_default(
    explicit: str | None, remembered: str | None, expected: tuple[str, str | None]
) -> None:
    assert baseimage.choose(explicit, remembered) == expected


@pytest.mark.parametrize(
    ("image", "made"),
    [
        ("springfield-base:bookworm", True),
        ("springfield-base:e2e-1a2b", True),
        ("springfield-base", False),  # no tag: not a name sgf gives
        ("debian:bookworm-slim", False),
        ("registry.example:5000/springfield-base:bookworm", False),
    ],
)
def test_made_here_knows_the_images_sgf_makes(image: str, *, made: bool) -> None:
    assert baseimage.made_here(image) is made


def test_what_stops_a_machine_from_making_a_base(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bare = {"PATH": str(bin_dir)}
    cache = tmp_path / "cache"
    assert "debootstrap is not installed" in str(baseimage.cannot_make(bare, cache, euid=0))
    (bin_dir / "debootstrap").write_text("#!/bin/sh\n")
    (bin_dir / "debootstrap").chmod(0o755)
    assert baseimage.cannot_make(bare, cache, euid=0) is None
    assert "debootstrap needs root" in str(baseimage.cannot_make(bare, cache, euid=1000))
    cache.mkdir()
    baseimage.tarball(cache).write_bytes(b"")  # a cached root file system needs neither
    assert baseimage.cannot_make({"PATH": "/nonexistent"}, cache, euid=1000) is None


def test_doctors_advice_for_a_missing_base(tmp_path: Path) -> None:
    able = tmp_path / "able"
    able.mkdir()
    baseimage.tarball(able).write_bytes(b"")
    unable = {"PATH": "/nonexistent"}
    how, alone = baseimage.how_to_get(baseimage.MADE, unable, able)
    assert alone
    assert "makes it again" in how
    how, alone = baseimage.how_to_get(baseimage.DEFAULT, unable, able)
    assert alone
    assert f"makes {baseimage.MADE} instead when no registry answers" in how
    how, alone = baseimage.how_to_get(baseimage.DEFAULT, unable, tmp_path / "empty")
    assert not alone
    assert "debootstrap is not installed" in how
    how, alone = baseimage.how_to_get("mine:1", unable, able)
    assert not alone
    assert "`sgf sandbox base`" in how


def test_making_a_base_without_a_cached_tarball_or_debootstrap_says_so(tmp_path: Path) -> None:
    with pytest.raises(ImageUnavailable, match=r"debootstrap is not installed"):
        baseimage.make(
            "springfield-base:never",
            env={"PATH": "/nonexistent"},
            cache=tmp_path,
            out=Recorded(),
        )


@pytest.mark.process
def test_a_debootstrap_that_fails_leaves_no_tarball_and_names_its_log(tmp_path: Path) -> None:
    """The real debootstrap, pointed at a mirror nobody serves: it fails at once."""
    env = dict(os.environ)
    cache = tmp_path / "cache"
    if why := baseimage.cannot_make(env, cache):
        if os.environ.get("CI") == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    out = Recorded()
    with pytest.raises(ImageUnavailable) as e:
        baseimage.make("springfield-base:never", env=env, cache=cache, out=out,
                       mirror="http://127.0.0.1:9/debian")  # fmt: skip
    log = cache / baseimage.DEBOOTSTRAP_LOG
    assert str(e.value).startswith("cannot get the image springfield-base:never: debootstrap ")
    assert str(e.value).endswith(f"; its output is in {log}")
    assert "127.0.0.1:9" in log.read_text()  # what debootstrap said, kept
    assert out.phases == ["debootstrap: a minimal Debian bookworm from http://127.0.0.1:9/debian"]
    assert sorted(p.name for p in cache.iterdir()) == [baseimage.DEBOOTSTRAP_LOG]  # no rootfs


@pytest.fixture
def cache() -> Path:
    """The shared cache holding the Debian root file system (skips locally without it)."""
    found = claude.cache_dir(os.environ)
    if not baseimage.tarball(found).is_file():
        why = f"no {baseimage.tarball(found)}: run scripts/ensure-base-image.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return found


@pytest.fixture
def made_tag(docker_engine: bool) -> Iterator[str]:
    """A base image name of this test's own (removed afterwards, proven gone)."""
    tag = f"{baseimage.MADE_REPOSITORY}:test-{uuid.uuid4().hex[:12]}"
    yield tag
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
    assert not engine.exists(dict(os.environ), tag)


@pytest.mark.docker
def test_a_missing_base_of_sgfs_own_is_made_again_from_the_cache(
    cache: Path, made_tag: str
) -> None:
    env = dict(os.environ)
    out = Recorded()
    assert baseimage.ensure(made_tag, fallback=None, env=env, cache=cache, out=out) == made_tag
    assert out.phases == [f"importing the Debian root file system as {made_tag}"]
    inside = engine.output_of(env, made_tag, ["sh", "-c", "python3 --version && git --version"])
    assert inside is not None
    assert "Python 3.11" in inside
    assert "git version" in inside
    again = Recorded()  # here now: nothing to do
    assert baseimage.ensure(made_tag, fallback=None, env=env, cache=cache, out=again) == made_tag
    assert again.phases == []


@pytest.mark.docker
def test_the_default_that_cannot_be_pulled_gives_way_to_a_base_made_here(
    cache: Path, made_tag: str
) -> None:
    out = Recorded()
    used = baseimage.ensure(
        UNREACHABLE, fallback=made_tag, env=dict(os.environ), cache=cache, out=out
    )
    assert used == made_tag
    assert out.phases[0] == f"pulling {UNREACHABLE}"
    (why,) = out.abandoned
    assert why.startswith(f"{UNREACHABLE} cannot be pulled (")
    assert why.endswith(f"); building from {made_tag} instead")


@pytest.mark.docker
def test_a_named_base_that_cannot_be_pulled_is_never_swapped(
    tmp_path: Path, docker_engine: bool
) -> None:
    with pytest.raises(ImageUnavailable) as e:
        baseimage.ensure(UNREACHABLE, fallback=None, env=dict(os.environ), cache=tmp_path,
                         out=Recorded())  # fmt: skip
    message = str(e.value)
    assert message.startswith(f"cannot get the image {UNREACHABLE}: ")
    assert f"`sgf sandbox base` makes {baseimage.MADE}" in message
    assert f"`--base {baseimage.MADE}`" in message


def test_without_an_engine_the_error_says_so(tmp_path: Path) -> None:
    from sgf.errors import EngineUnreachable

    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    with pytest.raises(EngineUnreachable, match="Docker engine is not reachable"):
        baseimage.ensure(UNREACHABLE, fallback=None, env=env, cache=tmp_path, out=Recorded())


def sgf_base(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`sgf sandbox base ARGS` as the real console script."""
    sgf = Path(sys.executable).parent / "sgf"
    return subprocess.run(
        [str(sgf), "sandbox", "base", *args], env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip


@pytest.mark.process
def test_sandbox_base_makes_only_images_of_its_own_name() -> None:
    done = sgf_base("--tag", "debian:bookworm-slim", env=dict(os.environ))
    assert done.returncode == 1
    assert done.stderr == (
        "error: Invalid value for --tag: 'debian:bookworm-slim': sgf makes only "
        "springfield-base:TAG images\n"
    )


@pytest.mark.docker
def test_sandbox_base_leaves_an_image_that_is_here(base_image: str) -> None:
    done = sgf_base("--tag", base_image, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{base_image} is here already (--force makes it again)\n"


@pytest.mark.docker
def test_sandbox_base_says_in_one_line_why_it_cannot(made_tag: str, tmp_path: Path) -> None:
    env = {**os.environ, "SPRINGFIELD_CACHE": str(tmp_path / "cache")}
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if not Path(p, "debootstrap").exists()
    )
    done = sgf_base("--tag", made_tag, env=env)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"error: cannot get the image {made_tag}: sgf cannot make it here: debootstrap is not "
        "installed (`apt-get install debootstrap`)"
    )

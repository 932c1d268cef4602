"""The Docker engine, through the Docker SDK: the one module of sgf that imports `docker`.

sgf asks the engine what it has (images and their labels, the loops' containers), pulls,
imports and builds images here, with the engine's answers streamed back as lines. The
`docker` command is ralph's business (it attaches to its containers with it); sgf needs it
for nothing. The engine is found as the SDK finds it: DOCKER_HOST (and DOCKER_TLS_VERIFY,
DOCKER_CERT_PATH) in `env`, else the local socket.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgf.errors import BuildFailed, EngineUnreachable, ImageUnavailable

if TYPE_CHECKING:
    from docker import DockerClient

TIMEOUT = 60.0  # seconds an ordinary request may take (the SDK's default)
PULL_TIMEOUT = 300.0  # between two progress messages of a pull: a slow registry is not dead
IMPORT_TIMEOUT = 900.0  # the engine unpacks a few hundred MB before it answers


def _client(env: Mapping[str, str], *, timeout: float = TIMEOUT) -> DockerClient:
    """A client for the engine `env` names; EngineUnreachable when none answers."""
    import docker
    from docker.errors import DockerException

    try:  # the client asks the engine its API version at once: no answer, no client
        client = docker.from_env(environment=dict(env), timeout=int(timeout))
    except DockerException as e:
        raise EngineUnreachable(_first_line(e)) from e
    except OSError as e:  # the socket's own refusal, before the SDK wraps it
        raise EngineUnreachable(str(e)) from e
    return client


def _first_line(error: BaseException) -> str:
    explanation = getattr(error, "explanation", None)
    text = str(explanation or error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def answers(env: Mapping[str, str]) -> bool:
    """Tell whether a Docker engine answers."""
    try:
        _client(env).close()
    except EngineUnreachable:
        return False
    return True


def labels(env: Mapping[str, str], image: str) -> dict[str, str] | None:
    """An image's labels ({} when it has none), or None when the engine lacks it (or is
    unreachable: then nobody can use the image either)."""
    from docker.errors import DockerException

    try:
        client = _client(env)
    except EngineUnreachable:
        return None
    with closing(client):
        try:
            found = client.images.get(image).labels
        except DockerException:  # ImageNotFound, or a name the engine refuses
            return None
    return dict(found or {})


def exists(env: Mapping[str, str], image: str) -> bool:
    """Tell whether the engine has `image`."""
    return labels(env, image) is not None


def pull(env: Mapping[str, str], image: str) -> Iterator[str]:
    """Pull `image`, yielding the registry's progress lines; ImageUnavailable in the engine's
    words when it cannot (no registry, no such image, no permission)."""
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    with closing(_client(env, timeout=PULL_TIMEOUT)) as client:
        try:
            for event in client.api.pull(image, stream=True, decode=True):
                if "error" in event:
                    raise ImageUnavailable(image, str(event["error"]))
                if line := progress_line(event):
                    yield line
        except (DockerException, RequestException) as e:
            raise ImageUnavailable(image, _first_line(e)) from e


def progress_line(event: Mapping[str, Any]) -> str:
    """A pull's progress message as `docker pull` draws it: `a1b2c3: Downloading [=>  ]
    12MB/30MB`, `Pulling from library/debian`; "" when it says nothing."""
    parts = [str(event.get(k)) for k in ("id", "status", "progress") if event.get(k)]
    if len(parts) > 1 and event.get("id"):
        parts[0] += ":"
    return " ".join(parts)


def build(
    env: Mapping[str, str],
    context: Path,
    *,
    tag: str,
    buildargs: Mapping[str, str],
    labels: Mapping[str, str],
) -> Iterator[str]:
    """Build the image `tag` from the Dockerfile in `context`, yielding the builder's output
    as it comes (`Step 4/14 : RUN ...`, then what that step prints), one line at a time.

    The base image must be here: the build never pulls (the base is chosen, pulled or made
    beforehand, baseimage.py). BuildFailed carries the builder's own error.
    """
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    client = _client(env)
    pending = ""
    try:
        # timeout=None: a step may print nothing for many minutes (apt, pip) and still work
        stream = client.api.build(
            path=str(context),
            tag=tag,
            buildargs=dict(buildargs),
            labels=dict(labels),
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            timeout=None,
        )
        for event in stream:
            if "error" in event:
                if pending:
                    yield pending
                raise BuildFailed(tag, str(event["error"]).strip())
            text = str(event.get("stream") or "")
            if not text and event.get("status"):  # a base pulled after all, or a warning
                text = progress_line(event) + "\n"
            *lines, pending = (pending + text).split("\n")
            yield from (line.rstrip("\r") for line in lines)
        if pending:
            yield pending
    except (DockerException, RequestException) as e:
        raise BuildFailed(tag, _first_line(e)) from e
    finally:
        client.close()


def import_tarball(env: Mapping[str, str], tarball: Path, image: str) -> None:
    """Make the image `image` of a root file system tarball (`docker import`)."""
    from docker.errors import DockerException
    from docker.utils import parse_repository_tag
    from requests.exceptions import RequestException

    repository, tag = parse_repository_tag(image)
    with closing(_client(env, timeout=IMPORT_TIMEOUT)) as client:
        try:
            client.api.import_image_from_file(str(tarball), repository=repository, tag=tag)
        except (DockerException, RequestException) as e:
            raise ImageUnavailable(image, f"importing {tarball} failed: {_first_line(e)}") from e
    if not exists(env, image):  # the engine answers 200 with an error in the body
        raise ImageUnavailable(image, f"the engine did not import {tarball}")


def output_of(
    env: Mapping[str, str],
    image: str,
    argv: list[str],
    *,
    timeout: float = 120.0,
    name: str | None = None,
) -> str | None:
    """What `argv` (its first word the entrypoint) prints in a throw-away container of
    `image` (called `name`, when given), or None when it fails or outlives `timeout`
    seconds. The container is removed in every case."""
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    try:
        client = _client(env)
    except EngineUnreachable:
        return None
    with closing(client):
        container = None
        try:
            container = client.containers.create(image, argv[1:], entrypoint=argv[0], name=name)
            container.start()
            status = container.wait(timeout=timeout)
            if status.get("StatusCode") != 0:
                return None
            return bytes(container.logs(stdout=True, stderr=False)).decode("utf-8", "replace")
        except (DockerException, RequestException):
            return None
        finally:
            if container is not None:
                _remove(client, str(container.id))


@dataclass(frozen=True, slots=True)
class Labelled:
    """A container and its labels."""

    id: str
    labels: dict[str, str]


def containers(
    env: Mapping[str, str], label: str, *, stopped: bool = False, timeout: float = 10.0
) -> list[Labelled]:
    """The containers carrying `label` (`name` or `name=value`), running ones only unless
    `stopped`; none when the engine does not answer (within `timeout` seconds)."""
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    try:
        client = _client(env, timeout=timeout)
    except EngineUnreachable:
        return []
    with closing(client):
        try:
            listed = client.api.containers(all=stopped, filters={"label": label})
        except (DockerException, RequestException):
            return []
    return [Labelled(str(c["Id"]), dict(c.get("Labels") or {})) for c in listed]


def remove_container(env: Mapping[str, str], container_id: str) -> bool:
    """Remove a container, running or not; tell whether it is gone."""
    try:
        client = _client(env)
    except EngineUnreachable:
        return False
    with closing(client):
        return _remove(client, container_id)


def _remove(client: DockerClient, container_id: str) -> bool:
    from docker.errors import DockerException, NotFound
    from requests.exceptions import RequestException

    try:
        client.api.remove_container(container_id, force=True)
    except NotFound:
        return True
    except (DockerException, RequestException):
        return False
    return True

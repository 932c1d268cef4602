"""The allow-list and the key proxy in real Docker, against a hostile agent.

A scripted model server accepts only the real key, a unique canary. The agent's container,
on the run's network with the placeholders the guard hands out, runs hostile_probe.py: it
searches everything it can read for the canary and tries every way out. The canary is found
nowhere, every way out fails and the refusals are listed, an allowed stand-in registry
answers, the model answers through the key proxy, and everything is gone after `close()`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ralph.egress import policy, sidecar
from ralph.egress.guard import OPEN, Guard
from ralph.egress.refusals import Refusal
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import parse_scenario

from ..conftest import Script, run_ralph, stashed

if TYPE_CHECKING:
    from docker import DockerClient

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBE = Path(__file__).parents[1] / "agents" / "hostile_probe.py"
BUILDING_THE_SIDECAR = "warning: building the egress proxy image "
SCENARIO = {"steps": [{"text": "hello"}], "final_text": "hello again"}


class HostService:
    """An HTTP server on every address of the host, counting the requests it gets."""

    def __init__(self, answer: bytes, handler: type[BaseHTTPRequestHandler] | None = None) -> None:
        self.hits: list[str] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                service.hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(
            ("0.0.0.0", 0), handler or Handler
        )  # every address: the point
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def host_service() -> Iterator[HostService]:
    served = HostService(b"a private service on the host")
    yield served
    served.close()


@pytest.fixture
def registry() -> Iterator[HostService]:
    served = HostService(b"a stand-in package registry")
    yield served
    served.close()


@pytest.fixture
def client(docker_engine: bool) -> Iterator[DockerClient]:
    import docker

    found = docker.from_env()
    yield found
    found.close()


def host_address() -> str:
    """The host's address on its default route (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))
        return str(s.getsockname()[0])


def gateway(client: DockerClient, network: str = "bridge") -> str:
    return sidecar.gateway(client, network)


def assert_gone(client: DockerClient, guard: Guard, name: str) -> None:
    where: dict[str, str | list[str] | bool] = {"label": f"{sidecar.ROLE}=egress"}
    assert name not in [c.name for c in client.containers.list(all=True, filters=where)]
    assert name not in [n.name for n in client.networks.list(filters=where)]
    assert not guard.folder.exists()


# What the probe asks each API family for, as the backends that use it would. The key's form
# is each provider's, so the placeholder keeps its kind; the canary is in the real key alone.
MESSAGE = [{"role": "user", "content": "hi"}]
FAMILIES: dict[str, dict[str, Any]] = {
    "claude": {
        "real": "sk-ant-api03-CANARY",
        "env": {"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": ""},
        "api": None,  # the probe's default: the Messages API with x-api-key
    },
    "codex and opencode": {
        "real": "sk-proj-CANARY",
        "env": {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "/v1"},
        "api": {
            "base": "OPENAI_BASE_URL",
            "key": "OPENAI_API_KEY",
            "header": "authorization",
            "prefix": "Bearer ",
            "path": "/chat/completions",
            "body": {"model": "m", "stream": True, "messages": MESSAGE},
        },
    },
    "gemini": {
        "real": "AIzaCANARY",
        "env": {"GEMINI_API_KEY": "", "GOOGLE_GEMINI_BASE_URL": ""},
        "api": {
            "base": "GOOGLE_GEMINI_BASE_URL",
            "key": "GEMINI_API_KEY",
            "header": "x-goog-api-key",
            "path": "/v1beta/models/m:streamGenerateContent?alt=sse",
            "body": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        },
    },
}


@pytest.mark.parametrize("backend", list(FAMILIES))
def test_a_hostile_agent_finds_no_key_and_no_way_out_but_the_allowed_ones(
    client: DockerClient,
    base_image: str,
    host_service: HostService,
    registry: HostService,
    tmp_path: Path,
    backend: str,
) -> None:
    family = FAMILIES[backend]
    canary = f"{family['real']}{uuid.uuid4().hex}"
    allowed = f"registry.test:{registry.port}"
    with ModelServer(parse_scenario(SCENARIO), key=canary) as model:
        # the key's variable holds the canary, the endpoint's the server (plus its API's path),
        # on the host's loopback: no --network host
        [(key_var, _), (url_var, suffix)] = family["env"].items()
        env = {
            key_var: canary,
            url_var: model.url + suffix,
            "HOME": str(tmp_path / "home"),
            "RALPH_EGRESS_HOSTS": "registry.test:host-gateway",
        }
        guard = Guard.plan(network=None, env=env, allow=[policy.parse(allowed)])
        assert canary not in json.dumps(guard.agent_env)
        try:
            guard.start(client, bases=(base_image,), project=tmp_path, note=lambda _: None)
            plan = escapes(client, host_service.port, registry.port)
            if family["api"]:
                plan["model"] = family["api"]
            report, inspected = run_probe(client, base_image, guard, tmp_path, plan)
            refused = guard.refusals()
            sidecar_inspected = json.dumps(client.containers.get(guard.network or "").attrs)
        finally:
            name = guard.network or ""
            guard.close()
        assert_gone(client, guard, name)
        statuses = [r.status for r in model.requests]

    assert report["leaks"] == []
    assert key_var in report["searched_env"]
    assert canary not in inspected
    assert canary not in sidecar_inspected
    assert report["answers"] == {
        "model": 200,
        "no key": 401,
        "wrong key": 401,
        "bearer": 200,
        "unknown path": 404,
        "unknown route": 404,
    }
    assert statuses == [200, 401, 401, 200, 404]  # the unknown route never left the proxy
    assert report["escaped"] == {}
    assert len(report["blocked"]) == 17, report["blocked"]
    assert host_service.hits == []
    assert report["reached"] == {f"http://{allowed}/simple/": 200}
    assert registry.hits == ["/simple/"]
    gw, host = gateway(client), host_address()
    assert set(refused) >= {
        Refusal(gw, host_service.port, "GET", 1),
        Refusal(host, host_service.port, "GET", 1),
        Refusal("1.1.1.1", 80, "GET", 1),
        Refusal("example.com", 80, "GET", 1),
        Refusal("example.com", 443, "CONNECT", 1),
        Refusal("registry.test", 22, "CONNECT", 1),
    }, refused


def escapes(client: DockerClient, port: int, registry: int) -> dict[str, Any]:
    """Every way out the probe tries: the host's service (`port`) by each of its addresses,
    a public address, a raw port, DNS, names not allowed; and the allowed registry."""
    host, gw = host_address(), gateway(client)
    return {
        "tcp": {
            "host loopback": ["127.0.0.1", port],
            "host address": [host, port],
            "docker gateway": [gw, port],
            "public address": ["1.1.1.1", 443],
            "raw port": ["1.1.1.1", 22],
            "sidecar's other port": [sidecar.ALIAS, 22],
        },
        "udp_dns": ["8.8.8.8", gw],
        "resolve": [f"exfil-{uuid.uuid4().hex[:12]}.example.com", "pypi.org"],
        "via_proxy": [
            f"http://{gw}:{port}/",
            f"http://{host}:{port}/",
            f"http://127.0.0.1:{port}/",  # NO_PROXY: tried directly, so no refusal is logged
            "http://1.1.1.1/",
            "http://example.com/",
            "https://example.com/",
            "https://registry.test:22/",
        ],
        "allowed": [f"http://registry.test:{registry}/simple/"],
    }


def run_probe(
    client: DockerClient, image: str, guard: Guard, tmp_path: Path, plan: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """Run the probe as the agent would run (root here, as the tests' uid): its report, and
    `docker inspect` of its container."""
    work = tmp_path / "probe"
    work.mkdir()
    shutil.copy(PROBE, work / "hostile_probe.py")
    (work / "plan.json").write_text(json.dumps(plan))
    container = client.containers.create(
        image,
        ["python3", "-B", f"{work}/hostile_probe.py", f"{work}/plan.json", f"{work}/report.json"],
        environment=guard.agent_env,
        network=guard.network,
        cap_drop=guard.cap_drop,
        dns_opt=guard.dns_options,
        volumes={str(work): {"bind": str(work), "mode": "rw"}},
        working_dir=str(work),
        labels={"springfield.test": "egress"},
    )
    try:
        container.start()
        status = container.wait(timeout=300)
        logs = container.logs().decode(errors="replace")
        assert status["StatusCode"] == 0, logs
        inspected = json.dumps(container.attrs)
    finally:
        container.remove(force=True)
    return json.loads((work / "report.json").read_text()), inspected


@pytest.mark.parametrize("network", ["host", OPEN])
def test_on_an_open_network_the_key_still_stays_on_the_host(
    client: DockerClient, base_image: str, tmp_path: Path, network: str
) -> None:
    canary = f"sk-ant-oat01-CANARY{uuid.uuid4().hex}"
    with ModelServer(parse_scenario(SCENARIO), key=canary) as model:
        env = {"CLAUDE_CODE_OAUTH_TOKEN": canary, "ANTHROPIC_BASE_URL": model.url}
        guard = Guard.plan(network=network, env=env, gateway=lambda name: gateway(client, name))
        try:
            guard.start(client, bases=(base_image,), project=tmp_path, note=lambda _: None)
            assert "open" in guard.describe()
            script = (
                "import os, urllib.request; r = urllib.request.Request("
                "os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=b'{}', headers={"
                "'authorization': 'Bearer ' + os.environ['CLAUDE_CODE_OAUTH_TOKEN']});"
                "print(urllib.request.urlopen(r, timeout=20).status)"
            )
            out = client.containers.run(
                base_image,
                ["python3", "-c", script],
                environment=guard.agent_env,
                network_mode=guard.network,
                remove=True,
            )
        finally:
            guard.close()
        assert out.decode().strip() == "200"
        assert canary not in json.dumps(guard.agent_env)
        assert [r.status for r in model.requests] == [200]
        assert guard.refusals() == []


def test_a_dead_ralphs_sidecar_and_network_are_removed_and_a_live_ones_kept(
    client: DockerClient, base_image: str, tmp_path: Path
) -> None:
    labels = {sidecar.ROLE: "egress", sidecar.PROJECT: str(tmp_path)}
    dead = {**labels, sidecar.OWNER_PID: "999999999", sidecar.OWNER_START: "1"}
    live = {**labels, **sidecar.owner()}
    made = [
        client.networks.create(f"ralph-egress-test-{kind}-{uuid.uuid4().hex[:6]}", labels=owner)
        for kind, owner in (("dead", dead), ("live", live))
    ]
    try:
        removed = sidecar.remove_leftovers(client, tmp_path)
        assert removed == [f"network {made[0].name}"]
        names = [
            n.name for n in client.networks.list(filters={"label": f"{sidecar.PROJECT}={tmp_path}"})
        ]
        assert names == [made[1].name]
    finally:
        for network in made:
            with contextlib.suppress(Exception):  # removed by the code under test
                network.remove()


def test_through_ralph_the_hostile_agent_fails_too_and_the_record_lists_the_refusals(
    client: DockerClient,
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    host_service: HostService,
    registry: HostService,
    tmp_path: Path,
) -> None:
    """The same probe as the agent of a real ralph run: the loop ends normally, and neither
    ralph's output, its log nor its record holds the canary."""
    canary = f"sk-ant-api03-CANARY{uuid.uuid4().hex}"
    (project / "tools").mkdir(exist_ok=True)
    shutil.copy(PROBE, project / "tools" / "hostile_probe.py")
    (project / "plan.json").write_text(
        json.dumps(escapes(client, host_service.port, registry.port))
    )
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)  # the agent works in a
    subprocess.run(["git", "commit", "-qm", "probe"], cwd=project, check=True)  # clone of it
    record, log = tmp_path / "run.jsonl", tmp_path / "ralph.log"
    steps = [["sh", "python3 -B tools/hostile_probe.py plan.json report.json"], ["result"]]
    with ModelServer(parse_scenario(SCENARIO), key=canary) as model:
        env = {**docker_env, "ANTHROPIC_API_KEY": canary, "ANTHROPIC_BASE_URL": model.url}
        env["RALPH_EGRESS_HOSTS"] = "registry.test:host-gateway"
        done = run_ralph(
            project, env, "-a", "--loop-id", loop_id, "--allow", f"registry.test:{registry.port}",
            "--record", str(record), "--log-file", str(log), "1", script(default=steps),
            timeout=600,
        )  # fmt: skip
        statuses = [r.status for r in model.requests]
    assert done.returncode == 2, done.stdout + done.stderr  # one iteration, no sentinel
    report = json.loads(stashed(project, "report.json"))  # left uncommitted: in the stash
    assert report["leaks"] == []
    assert report["escaped"] == {}
    assert report["answers"]["model"] == 200
    assert report["reached"] == {f"http://registry.test:{registry.port}/simple/": 200}
    assert statuses == [200, 401, 401, 200, 404]
    assert host_service.hits == []
    for text in (done.stdout, done.stderr, log.read_text(), record.read_text()):
        assert canary not in text
    [end] = [json.loads(line) for line in record.read_text().splitlines() if '"end"' in line]
    refused = {(r["host"], r["port"], r["method"]) for r in end["refused"]}
    assert {("example.com", 443, "CONNECT"), ("1.1.1.1", 80, "GET")} <= refused
    assert "the egress proxy refused: " in done.stderr + done.stdout
    # the loop's first line, after the note of a first run on this engine that builds the image
    lines = [x for x in done.stdout.splitlines() if not x.startswith(BUILDING_THE_SIDECAR)]
    assert lines[0].startswith("network: allow-list (the model through ralph's key proxy; ")


def test_an_expired_login_is_refreshed_on_the_host_and_the_agent_never_holds_it(
    project: Path,
    docker_env: dict[str, str],
    script: Script,
    loop_id: str,
    isolated_home: Path,
) -> None:
    """`~/.claude/.credentials.json` with an expired access token: the key proxy refreshes it
    against a stand-in token endpoint, writes the rotated pair back, and the model gets the
    fresh token; the agent held only a placeholder."""
    fresh = f"sk-ant-oat01-fresh-{uuid.uuid4().hex}"
    creds = isolated_home / ".claude" / ".credentials.json"
    creds.parent.mkdir()
    login = {"accessToken": "sk-ant-oat01-expired", "refreshToken": "sk-ant-ort01-old",
             "expiresAt": 1000, "scopes": ["user:inference"]}  # fmt: skip
    creds.write_text(json.dumps({"claudeAiOauth": login}))
    token_endpoint = HostService(b"", handler=token_handler(fresh))
    call = (
        'python3 -c "import os, urllib.request; r = urllib.request.Request('
        "os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=b'{}', headers={"
        "'authorization': 'Bearer ' + os.environ['CLAUDE_CODE_OAUTH_TOKEN']}); "
        "print('model said', urllib.request.urlopen(r, timeout=20).status)\""
    )
    steps = [["sh", call], ["env", "CLAUDE_CODE_OAUTH_TOKEN"], ["result"]]
    try:
        with ModelServer(parse_scenario(SCENARIO), key=fresh) as model:
            env = {**docker_env, "ANTHROPIC_BASE_URL": model.url}
            env["RALPH_CLAUDE_TOKEN_URL"] = f"http://127.0.0.1:{token_endpoint.port}/token"
            done = run_ralph(project, env, "-a", "--loop-id", loop_id, "1", script(default=steps))
            statuses = [r.status for r in model.requests]
    finally:
        token_endpoint.close()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "model said 200" in done.stdout, done.stdout
    assert statuses == [200]
    assert "env CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-ralph-placeholder-" in done.stdout
    saved = json.loads(creds.read_text())["claudeAiOauth"]
    assert (saved["accessToken"], saved["refreshToken"]) == (fresh, "sk-ant-ort01-new")
    assert fresh not in done.stdout + done.stderr


def token_handler(fresh: str) -> type[BaseHTTPRequestHandler]:
    """A stand-in OAuth token endpoint that rotates the pair once."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert body["refresh_token"] == "sk-ant-ort01-old"
            data = json.dumps(
                {"access_token": fresh, "refresh_token": "sk-ant-ort01-new", "expires_in": 3600}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler

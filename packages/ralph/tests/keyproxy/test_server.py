"""The key proxy over real sockets: placeholders become the real credential only where
credentials travel, answers stream through as they are sent, and no secret comes back."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ralph.errors import LoginUnusable
from ralph.keyproxy import routes
from ralph.keyproxy.routes import Credential, Route, Static
from ralph.keyproxy.server import KeyProxy
from ralph.testing.model_server import ModelServer
from ralph.testing.scenario import parse_scenario

REAL = "sk-ant-api03-REAL-canary-5f0c2b8e91d4"


class Upstream:
    """A stand-in API: `/echo` answers the headers it got (as a leaky gateway would), `/gated`
    streams one event, waits for the test's go, then a second; it counts its connections."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.connections = 0
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                upstream.connections += 1

            def do_GET(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream.seen.append((self.command, self.path, dict(self.headers.items())))
                if self.path.startswith("/api/echo"):
                    data = json.dumps(dict(self.headers.items())).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("X-Echo", self.headers.get("x-api-key") or "")
                    self.end_headers()
                    self.wfile.write(data)
                elif self.path.startswith("/api/gated"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for event, wait in ((b"data: one\n\n", True), (b"data: two\n\n", False)):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                        self.wfile.flush()
                        if wait:
                            upstream.go.wait(30)
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_response(204)
                    self.end_headers()

            do_POST = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.go.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    served = Upstream()
    yield served
    served.close()


def route(upstream: str, name: str = "anthropic", real: str = REAL) -> tuple[Route, str]:
    placeholder = routes.placeholder(real)
    credential = Credential("ANTHROPIC_API_KEY", placeholder, Static(real))
    return Route(name, "ANTHROPIC_BASE_URL", upstream, (credential,)), placeholder


@pytest.fixture
def proxied(upstream: Upstream) -> Iterator[tuple[KeyProxy, str]]:
    found, placeholder = route(upstream.url)
    with KeyProxy([found], listen=("127.0.0.1", 0)) as proxy:
        yield proxy, placeholder


def connect(proxy: KeyProxy) -> http.client.HTTPConnection:
    host, port = proxy.url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=30)


def test_the_placeholder_becomes_the_real_key_and_the_echo_comes_back_masked(
    upstream: Upstream, proxied: tuple[KeyProxy, str]
) -> None:
    proxy, placeholder = proxied
    conn = connect(proxy)
    conn.request(
        "GET", "/anthropic/echo?x=1", headers={"x-api-key": placeholder, "X-Mine": placeholder}
    )
    response = conn.getresponse()
    body = response.read()
    [(_, path, headers)] = upstream.seen
    assert path == "/api/echo?x=1"
    assert headers["x-api-key"] == REAL
    assert headers["X-Mine"] == placeholder  # only where credentials travel
    assert headers["Accept-Encoding"] == "identity"
    assert REAL.encode() not in body
    assert REAL not in str(response.getheaders())
    assert json.loads(body)["x-api-key"] == "*" * len(REAL)
    conn.close()


def test_an_event_reaches_the_agent_before_the_upstream_sends_the_next(
    upstream: Upstream, proxied: tuple[KeyProxy, str]
) -> None:
    proxy, placeholder = proxied
    conn = connect(proxy)
    conn.request("GET", "/anthropic/gated", headers={"x-api-key": placeholder})
    response = conn.getresponse()
    assert response.status == 200
    assert response.read1(100) == b"data: one\n\n"  # the upstream is still holding the rest
    upstream.go.set()
    assert response.read() == b"data: two\n\n"
    conn.close()


def test_one_agent_connection_keeps_one_upstream_connection(
    upstream: Upstream, proxied: tuple[KeyProxy, str]
) -> None:
    proxy, placeholder = proxied
    conn = connect(proxy)
    for _ in range(5):
        conn.request("POST", "/anthropic/echo", body=b"{}", headers={"x-api-key": placeholder})
        assert conn.getresponse().read()
    conn.close()
    assert upstream.connections == 1


def test_a_request_without_a_placeholder_goes_without_a_credential(
    upstream: Upstream, proxied: tuple[KeyProxy, str]
) -> None:
    proxy, _ = proxied
    conn = connect(proxy)
    conn.request("GET", "/anthropic/echo", headers={"x-api-key": "guessed"})
    conn.getresponse().read()
    assert upstream.seen[0][2]["x-api-key"] == "guessed"
    conn.close()


def test_an_unknown_prefix_or_an_unreachable_upstream_is_an_api_error(tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"
    found, placeholder = route(dead)
    with KeyProxy([found], listen=("127.0.0.1", 0)) as proxy:
        conn = connect(proxy)
        conn.request("GET", "/nowhere/v1/messages")
        missing = conn.getresponse()
        assert (missing.status, json.loads(missing.read())["error"]["type"]) == (
            404,
            "not_found_error",
        )
        conn.close()
        conn = connect(proxy)
        conn.request(
            "POST", "/anthropic/v1/messages", body=b"{}", headers={"x-api-key": placeholder}
        )
        failed = conn.getresponse()
        assert failed.status == 502
        assert "cannot reach" in json.loads(failed.read())["error"]["message"]
        conn.close()


class Expired:
    def current(self) -> str:
        raise LoginUnusable("the Claude login expired: log in again")

    def known(self) -> tuple[str, ...]:
        return ()


def test_an_unusable_login_is_a_401_naming_the_cure(upstream: Upstream) -> None:
    credential = Credential(
        "CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-ralph-placeholder-x", Expired()
    )
    found = Route("anthropic", "ANTHROPIC_BASE_URL", upstream.url, (credential,))
    with KeyProxy([found], listen=("127.0.0.1", 0)) as proxy:
        conn = connect(proxy)
        conn.request("POST", "/anthropic/v1/messages", body=b"{}",
                     headers={"Authorization": f"Bearer {credential.placeholder}"})  # fmt: skip
        response = conn.getresponse()
        assert response.status == 401
        assert "log in again" in json.loads(response.read())["error"]["message"]
        conn.close()
    assert upstream.seen == []


def post_messages(conn: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> bytes:
    body = {"model": "m", "max_tokens": 10, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    conn.request(
        "POST", path, body=json.dumps(body), headers={"content-type": "application/json", **headers}
    )
    response = conn.getresponse()
    data = response.read()
    assert response.status == 200, data
    return data


def test_a_model_server_that_takes_only_the_real_key_answers_through_a_unix_socket(
    tmp_path: Path,
) -> None:
    scenario = parse_scenario({"steps": [{"text": "hello from the model"}]})
    with ModelServer(scenario, key=REAL) as server:
        planned = routes.plan({"ANTHROPIC_API_KEY": REAL, "ANTHROPIC_BASE_URL": server.url})
        env = routes.agent_env(planned, "http://unused")
        sock = tmp_path / "keyproxy.sock"
        with KeyProxy(planned, listen=sock) as proxy:
            assert sock.stat().st_mode & 0o077 == 0
            conn = http.client.HTTPConnection("localhost", timeout=30)
            conn.sock = socket.socket(socket.AF_UNIX)
            conn.sock.connect(str(sock))
            data = post_messages(
                conn, "/anthropic/v1/messages", {"x-api-key": env["ANTHROPIC_API_KEY"]}
            )
            conn.close()
            assert b"message_stop" in data
            assert REAL.encode() not in data
            del proxy
        assert not sock.exists()
        assert [r.status for r in server.requests] == [200]


@pytest.mark.parametrize(
    ("variable", "headers", "query"),
    [
        ("OPENAI_API_KEY", {"Authorization": "Bearer {}"}, ""),
        ("GEMINI_API_KEY", {"x-goog-api-key": "{}"}, ""),
        ("GEMINI_API_KEY", {}, "?alt=sse&key={}"),
    ],
)
def test_each_backends_credential_is_put_where_its_api_wants_it(
    variable: str, headers: dict[str, str], query: str
) -> None:
    scenario = parse_scenario({"steps": [{"text": "hello"}]})
    with ModelServer(scenario, key=REAL) as server:
        base = "OPENAI_BASE_URL" if variable.startswith("OPENAI") else "GOOGLE_GEMINI_BASE_URL"
        planned = routes.plan(
            {variable: REAL, base: server.url + ("/v1" if "OPENAI" in base else "")}
        )
        with KeyProxy(planned, listen=("127.0.0.1", 0)) as proxy:
            env = routes.agent_env(planned, proxy.url)
            placeholder = env[variable]
            prefix = env[base].removeprefix(proxy.url)
            conn = connect(proxy)
            if variable == "OPENAI_API_KEY":
                path, body = f"{prefix}/responses", {"model": "m", "stream": True, "input": "hi"}
            else:
                path = f"{prefix}/v1beta/models/m:streamGenerateContent" + query.format(placeholder)
                body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
            sent = {k: v.format(placeholder) for k, v in headers.items()}
            conn.request(
                "POST",
                path,
                body=json.dumps(body),
                headers={"content-type": "application/json", **sent},
            )
            response = conn.getresponse()
            data = response.read()
            conn.close()
        assert response.status == 200, data
        assert REAL.encode() not in data


def test_connections_past_the_limit_are_closed_at_once_and_a_freed_slot_is_reused(
    upstream: Upstream, wait_for: Callable[..., None]
) -> None:
    found, placeholder = route(upstream.url)
    with KeyProxy([found], listen=("127.0.0.1", 0), max_connections=2) as proxy:
        host, port = proxy.url.removeprefix("http://").split(":")
        held = [socket.create_connection((host, int(port)), timeout=30) for _ in range(2)]
        extra = socket.create_connection((host, int(port)), timeout=30)
        assert extra.recv(1) == b""  # closed by the proxy, not left waiting
        extra.close()
        held.pop().close()

        def answered() -> bool:
            conn = connect(proxy)
            try:
                conn.request("GET", "/anthropic/echo", headers={"x-api-key": placeholder})
                return conn.getresponse().status == 200
            except (OSError, http.client.HTTPException):
                return False
            finally:
                conn.close()

        wait_for(answered, timeout=30, what="a freed slot")
        for sock in held:
            sock.close()


def test_an_http_1_0_client_gets_the_stream_unframed_until_the_close(
    upstream: Upstream, proxied: tuple[KeyProxy, str]
) -> None:
    proxy, placeholder = proxied
    upstream.go.set()
    host, port = proxy.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"GET /anthropic/gated HTTP/1.0\r\nx-api-key: {placeholder}\r\n\r\n".encode())
        answer = b""
        while data := sock.recv(65536):
            answer += data
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"chunked" not in head.lower()
    assert body == b"data: one\n\ndata: two\n\n"


def test_a_chunked_request_body_goes_upstream_with_its_length(
    upstream: Upstream, proxied: tuple[KeyProxy, str]
) -> None:
    proxy, placeholder = proxied
    conn = connect(proxy)
    conn.request(
        "POST", "/anthropic/echo", body=iter([b'{"a": ', b"1}"]),
        headers={"x-api-key": placeholder}, encode_chunked=True,
    )  # fmt: skip
    assert json.loads(conn.getresponse().read())["Content-Length"] == "8"
    conn.close()

"""The key proxy: an HTTP/1.1 server on the host that puts the real credential into the agent's
model requests and streams the answers back as they come.

A request to `/<route>/<rest>` goes to the route's upstream `<upstream>/<rest>` with each of
the route's placeholders replaced, in the auth headers and the `key` query parameter only,
by the real value. A request with no placeholder goes upstream as it came, credential-less:
the proxy adds a credential only where the run's own random placeholder asks for one, so a
process that reaches the proxy without it gets nothing of the user's. The answer is relayed
chunk by chunk as the upstream sends it (server-sent events arrive when they are sent), with
every secret masked (redact.py). Each client connection keeps its own upstream connection, so
the agent's keep-alive is the upstream's too. It listens on a unix socket (the egress
sidecar forwards to it) or on a TCP address.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import socket
import socketserver
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ralph.errors import LoginUnusable
from ralph.keyproxy.redact import Redactor
from ralph.keyproxy.routes import AUTH_HEADERS, AUTH_QUERY, Route

log = logging.getLogger(__name__)

# Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection, never forwarded. Accept-Encoding
# is replaced by `identity`: a compressed body could not be searched for secrets.
_HOP = frozenset(
    ("connection", "keep-alive", "proxy-connection", "proxy-authenticate",
     "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host",
     "content-length", "expect", "accept-encoding")
)  # fmt: skip
_CHUNK = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024  # a request (a prompt) larger than this is refused
MAX_CONNECTIONS = 64
UPSTREAM_TIMEOUT = 900.0  # a model may think this long before its first byte
IDLE_TIMEOUT = 900.0  # an idle agent connection is closed after this long


class _Serving(socketserver.ThreadingMixIn, socketserver.BaseServer):
    """A thread per connection, at most MAX_CONNECTIONS at once: an agent that opens
    thousands gets the rest closed at once, not thousands of threads in ralph."""

    daemon_threads = True
    block_on_close = False
    routes: dict[str, Route]
    slots: threading.BoundedSemaphore

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _TCPServer(_Serving, socketserver.TCPServer):
    allow_reuse_address = True


class _UnixServer(_Serving, socketserver.UnixStreamServer):
    pass


class _Handler(BaseHTTPRequestHandler):
    server: _Serving
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT

    def setup(self) -> None:
        super().setup()
        if self.connection.family != socket.AF_UNIX:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._upstreams: dict[str, http.client.HTTPConnection] = {}

    def finish(self) -> None:
        for conn in self._upstreams.values():
            conn.close()
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)

    def do_GET(self) -> None:
        self._forward()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _forward(self) -> None:
        found = self._route()
        if found is None:
            self._error(404, "not_found_error", f"no model endpoint at {self.path[:200]!r}")
            return
        route, rest = found
        body = self._body()
        if body is None:
            return
        try:
            target, headers = _outgoing(route, rest, self.headers.items(), len(body))
        except LoginUnusable as e:
            self._error(401, "authentication_error", f"ralph's key proxy: {e}")
            return
        try:
            response = self._ask(route, target, headers, body)
        except OSError as e:
            self._error(502, "api_error", f"ralph's key proxy cannot reach {route.upstream}: {e}")
            return
        self._relay(route, response)

    def _route(self) -> tuple[Route, str] | None:
        path = self.path
        if not path.startswith("/"):  # absolute form, from a client that took us for a proxy
            parts = urlsplit(path)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
        name, _, rest = path.lstrip("/").partition("/")
        name, _, query = name.partition("?")
        route = self.server.routes.get(name)
        if route is None:
            return None
        return route, "/" + rest if not query else f"/{rest}?{query}"

    def _body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._chunked_body()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY:
            self._error(400, "invalid_request_error", "bad or oversized Content-Length")
            return None
        return self.rfile.read(length) if length else b""

    def _chunked_body(self) -> bytes | None:
        parts: list[bytes] = []
        size = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                length = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                self._error(400, "invalid_request_error", "bad chunked request body")
                return None
            size += length
            if size > _MAX_BODY:
                self._error(400, "invalid_request_error", "oversized request body")
                return None
            if length == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(self.rfile.read(length))
            self.rfile.readline(3)

    def _ask(
        self, route: Route, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> http.client.HTTPResponse:
        """Send upstream on this connection's own upstream connection; a reused one the
        upstream closed meanwhile is opened again once."""
        for attempt in (1, 2):
            reused = route.name in self._upstreams
            conn = self._upstreams.get(route.name) or _connect(route.upstream)
            self._upstreams[route.name] = conn
            try:
                conn.putrequest(self.command, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    conn.putheader(name, value)
                conn.endheaders(body)
                return conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop(route.name)
                if not reused or attempt == 2:
                    raise
            except (OSError, http.client.HTTPException):
                self._drop(route.name)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _drop(self, name: str) -> None:
        conn = self._upstreams.pop(name, None)
        if conn is not None:
            conn.close()

    def _relay(self, route: Route, response: http.client.HTTPResponse) -> None:
        redactor = Redactor(route.secrets())
        bodyless = self.command == "HEAD" or response.status in (204, 304)
        framed = not bodyless and response.length is None  # chunked or close-delimited
        chunked = framed and self.request_version != "HTTP/1.0"
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in _HOP or (name.lower() == "content-length" and not framed):
                self.send_header(name, redactor.text(value))
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        if framed and not chunked:  # an HTTP/1.0 client: the body ends when we close
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        if bodyless:
            response.close()
            return
        try:
            while data := response.read1(_CHUNK):
                self._write(redactor.feed(data), chunked=chunked)
            self._write(redactor.flush(), chunked=chunked)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            response.close()  # read to its end: the upstream connection is free again
        except (OSError, http.client.HTTPException):
            # the agent hung up, or the upstream broke off: neither connection can go on
            self.close_connection = True
            self._drop(route.name)
        if response.will_close:
            self._drop(route.name)

    def _write(self, data: bytes, *, chunked: bool) -> None:
        if not data:
            return
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

    def _error(self, status: int, kind: str, message: str) -> None:
        """An error in the Anthropic API's shape, which the other CLIs also print."""
        payload = json.dumps({"type": "error", "error": {"type": kind, "message": message}})
        data = payload.encode()
        self.close_connection = True  # what is left of the request, if anything, is unread
        self.send_response_only(status)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def _outgoing(
    route: Route, rest: str, incoming: Sequence[tuple[str, str]], length: int
) -> tuple[str, list[tuple[str, str]]]:
    """The upstream request target and headers: placeholders replaced where credentials go."""
    upstream = urlsplit(route.upstream)
    path, _, query = rest.partition("?")
    target = upstream.path.rstrip("/") + path
    if query:
        target += "?" + "&".join(
            route.real(part) if part.startswith(AUTH_QUERY + "=") else part
            for part in query.split("&")
        )
    headers = [("Host", upstream.netloc)]
    for name, value in incoming:
        lower = name.lower()
        if lower in _HOP:
            continue
        headers.append((name, route.real(value) if lower in AUTH_HEADERS else value))
    headers += [("Accept-Encoding", "identity"), ("Content-Length", str(length))]
    return target, headers


def _connect(upstream: str) -> http.client.HTTPConnection:
    parts = urlsplit(upstream)
    host, port = parts.hostname or "", parts.port
    if parts.scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=UPSTREAM_TIMEOUT)
    return http.client.HTTPConnection(host, port, timeout=UPSTREAM_TIMEOUT)


class KeyProxy:
    """The running proxy; a context manager. `listen` is a unix socket path or (host, port).

    Example:
        with KeyProxy(routes.plan(env), listen=("127.0.0.1", 0)) as proxy:
            env.update(routes.agent_env(proxy.routes, proxy.url))
    """

    def __init__(
        self,
        routes: Sequence[Route],
        *,
        listen: Path | tuple[str, int],
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.routes = tuple(routes)
        server: _Serving
        if isinstance(listen, Path):
            server = _UnixServer(str(listen), _Handler)
            listen.chmod(0o600)  # only the user (and the sidecar, as root) may connect
        else:
            server = _TCPServer(listen, _Handler)
        server.routes = {r.name: r for r in self.routes}
        server.slots = threading.BoundedSemaphore(max_connections)
        self._server = server
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The TCP proxy's base URL (a unix socket has none: the sidecar gives it one)."""
        address = self._server.server_address
        if not isinstance(address, tuple):
            raise ValueError("a unix-socket proxy has no URL of its own")
        host, port = str(address[0]), int(address[1])
        return f"http://{host}:{port}"

    def start(self) -> KeyProxy:
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="keyproxy", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and close the socket (idempotent); open streams end with it."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._server.server_close()
        address = self._server.server_address
        if isinstance(address, str):
            with contextlib.suppress(FileNotFoundError):
                Path(address).unlink()

    def __enter__(self) -> KeyProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

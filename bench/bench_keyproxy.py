"""The key proxy's added latency per model request, against a direct connection, in one run.

A local upstream streams a server-sent-event answer (EVENTS events, as a model streams its
tokens); a client asks for it REQUESTS times over one kept-alive connection, directly and
through the key proxy in turn, and times the first event and the whole answer. On the host the
proxy listens on TCP; with Docker, the same client also runs in a container, once on the
default network straight to the upstream and once on the allow-list network through the
sidecar's forwarder and the proxy's unix socket (the path an agent's requests take). Prints
median and p99 of each and of the difference; exits 1 when a target is missed.

Target: the proxy adds <= 5 ms to the median request (first event and whole answer).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ralph.egress.guard import Guard
from ralph.keyproxy import routes
from ralph.keyproxy.server import KeyProxy

IMAGE = os.environ.get("SPRINGFIELD_BASE_IMAGE", "springfield-base:bookworm")
REQUESTS = 300
EVENTS = 100
KEY = "sk-ant-api03-bench-key-0123456789"
TARGET_MS = 5.0
Timings = dict[str, list[float]]  # "first" and "whole": seconds per request
Row = tuple[str, str, str, bool]  # what, measured, target, met
EVENT = b'event: content_block_delta\ndata: {"type": "content_block_delta", "delta": ' + (
    b'{"type": "text_delta", "text": "token "}}\n\n'
)

# The client, as it runs on the host and in a container: times one kept-alive connection.
CLIENT = r"""
import http.client, json, sys, time
host, port, path, key, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
conn = http.client.HTTPConnection(host, port, timeout=30)
body = json.dumps({"model": "m", "stream": True, "messages": []}).encode()
first, whole = [], []
for _ in range(n + 5):
    t = time.perf_counter()
    headers = {"x-api-key": key, "content-type": "application/json"}
    conn.request("POST", path, body=body, headers=headers)
    r = conn.getresponse()
    assert r.status == 200, r.status
    r.read1(65536)
    f = time.perf_counter()
    r.read()
    w = time.perf_counter()
    first.append(f - t); whole.append(w - t)
print(json.dumps({"first": first[5:], "whole": whole[5:]}))
"""


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # as model APIs do: without it, Nagle holds each event until the last one is acked
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("x-api-key") != KEY:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for _ in range(EVENTS):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def client(host: str, port: int, path: str, key: str) -> Timings:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, host, str(port), path, key, str(REQUESTS)],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    return dict(json.loads(done.stdout))


def in_container(network: str, host: str, port: int, path: str, key: str) -> Timings:
    argv = ["docker", "run", "--rm", "--network", network, "--cap-drop", "NET_RAW"]
    argv += [IMAGE, "python3", "-c", CLIENT, host, str(port), path, key, str(REQUESTS)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=900)
    return dict(json.loads(done.stdout))


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def rows_for(label: str, direct: Timings, proxied: Timings) -> list[Row]:
    rows = []
    for part in ("first", "whole"):
        d, p = direct[part], proxied[part]
        what = "first event" if part == "first" else f"whole answer ({EVENTS} events)"
        added = (statistics.median(p) - statistics.median(d)) * 1000
        rows.append((f"{label}: {what}, direct", ms(d), "", True))
        rows.append((f"{label}: {what}, through the proxy", ms(p), "", True))
        rows.append(
            (f"{label}: {what}, added (median)", f"{added:+.2f} ms", f"<= {TARGET_MS:.0f} ms",
             added <= TARGET_MS)
        )  # fmt: skip
        rows.append(
            (f"{label}: {what}, added (p99)", f"{(p99(p) - p99(d)) * 1000:+.2f} ms", "", True)
        )
    return rows


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} / {p99(values) * 1000:.2f} ms"


def main() -> int:
    upstream = ThreadingHTTPServer(("0.0.0.0", 0), Upstream)  # the containers' direct path too
    upstream.daemon_threads = True
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = int(upstream.server_address[1])
    url = f"http://127.0.0.1:{port}"
    planned = routes.plan({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": url})
    rows: list[Row] = []
    with KeyProxy(planned, listen=("127.0.0.1", 0)) as proxy:
        view = routes.agent_env(planned, proxy.url)
        proxy_port = int(proxy.url.rsplit(":", 1)[1])
        client("127.0.0.1", port, "/v1/messages", KEY)  # warm up both paths
        direct = client("127.0.0.1", port, "/v1/messages", KEY)
        proxied = client(
            "127.0.0.1", proxy_port, "/anthropic/v1/messages", view["ANTHROPIC_API_KEY"]
        )
        rows += rows_for("host, TCP", direct, proxied)
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode == 0:
        rows += container_rows(url, port)
    else:
        rows.append(("container path", "skipped", f"no image {IMAGE}", True))
    upstream.shutdown()
    upstream.server_close()
    width = max(len(r[0]) for r in rows)
    print(
        f"{'key proxy benchmark (median / p99)'.ljust(width)}  {'measured':>22}  {'target':>9}  ok"
    )
    for name, value, target, ok in rows:
        print(f"{name.ljust(width)}  {value:>22}  {target:>9}  {'yes' if ok else 'NO'}")
    return 0 if all(r[3] for r in rows) else 1


def container_rows(url: str, port: int) -> list[Row]:
    import docker
    from ralph.egress import sidecar
    from ralph.egress.policy import KEYPROXY_PORT

    client_ = docker.from_env()
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": url, "HOME": tempfile.gettempdir()}
    guard = Guard.plan(network=None, env=env)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-keyproxy-") as project:
            guard.start(client_, bases=(IMAGE,), project=Path(project), note=print)
            key = guard.agent_env["ANTHROPIC_API_KEY"]
            gw = sidecar.gateway(client_, "bridge")
            direct = in_container("bridge", gw, port, "/v1/messages", KEY)
            assert guard.network is not None
            path = "/anthropic/v1/messages"
            proxied = in_container(guard.network, sidecar.ALIAS, KEYPROXY_PORT, path, key)
    finally:
        guard.close()
        client_.close()
    return rows_for("container, sidecar + unix socket", direct, proxied)


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"({time.perf_counter() - started:.0f} s)")
    sys.exit(code)

"""The scripted model server: `ModelServer` in tests, `python -m` as a process.

It binds 127.0.0.1 only and answers, from one scenario, the Anthropic Messages API
(POST /v1/messages), OpenAI Responses (POST /v1/responses), OpenAI chat completions
(POST /v1/chat/completions) and the Gemini API (POST /v1beta/models/M:generateContent and
:streamGenerateContent); SSE when the request asks to stream, JSON otherwise. It gives harmless
JSON to every other route and records each request as a JSON line. Given a `key`, it answers
401 to any request that does not carry exactly that key where each API carries one
(`x-api-key`, `Authorization: Bearer`, `x-goog-api-key` or `?key=`): a stand-in for a provider
that accepts only the real credential. See testing/AGENTS.md for how to point each CLI at it.

Example:
    python -m ralph.testing.model_server --scenario s.json --port 0 \\
        --ready-file /tmp/ready --record /tmp/requests.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

from ralph.testing.conversation import Request
from ralph.testing.dialects import Dialect
from ralph.testing.dialects.anthropic import Anthropic
from ralph.testing.dialects.chat import ChatCompletions
from ralph.testing.dialects.gemini import Gemini
from ralph.testing.dialects.responses import Responses
from ralph.testing.engine import Decision, Engine
from ralph.testing.scenario import Scenario, load_scenario
from ralph.testing.wire import ErrorReply

log = logging.getLogger("ralph.testing.model_server")

# Every API the server speaks, each on its own paths, all played from the same scenario.
DIALECTS: tuple[Dialect, ...] = (Anthropic(), Responses(), ChatCompletions(), Gemini())


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request as the server saw it."""

    seq: int
    method: str
    path: str
    kind: str
    status: int
    session: str
    script: str | None
    step: int | None
    body: Any
    time: float

    def as_json(self) -> str:
        return json.dumps(
            {
                "seq": self.seq,
                "time": self.time,
                "method": self.method,
                "path": self.path,
                "kind": self.kind,
                "status": self.status,
                "session": self.session,
                "script": self.script,
                "step": self.step,
                "body": self.body,
            }
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    engine: Engine
    stopping: threading.Event
    recorder: _Recorder
    key: str | None


class _Recorder:
    def __init__(self, path: Path | None) -> None:
        self._lock = threading.Lock()
        self._file: IO[str] | None = path.open("a") if path else None
        self.requests: list[Recorded] = []

    def add(self, **fields: Any) -> None:
        with self._lock:
            entry = Recorded(seq=len(self.requests) + 1, time=time.time(), **fields)
            self.requests.append(entry)
            if self._file is not None:
                self._file.write(entry.as_json() + "\n")
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # HTTP/1.0: every response closes its connection, so no idle keep-alive threads linger.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        if self._authorised():
            self._other()

    def do_HEAD(self) -> None:
        if self._authorised(with_body=False):
            self._other(with_body=False)

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self._read_body()
        if not self._authorised(body=body):
            return
        dialect = next((d for d in DIALECTS if d.handles(path)), None)
        if dialect is not None and isinstance(body, dict):
            self._turn(dialect, dialect.request(path, body, self.headers))
        elif path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": len(json.dumps(body)) // 4}, body=body, kind="count")
        else:
            self._other(body=body)

    def _authorised(self, *, body: Any = None, with_body: bool = True) -> bool:
        """Whether the request carries the server's key (always, without one); else a 401."""
        key = self.server.key
        if key is None:
            return True
        bearer = self.headers.get("Authorization") or ""
        offered = {
            self.headers.get("x-api-key"),
            self.headers.get("x-goog-api-key"),
            bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None,
            *parse_qs(urlsplit(self.path).query).get("key", []),
        }
        if key in offered:
            return True
        error = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
        self._json(401, error, body=body, kind="unauthorised", with_body=with_body)
        return False

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return raw.decode(errors="replace")

    def _turn(self, dialect: Dialect, request: Request) -> None:
        decision = self.server.engine.decide(request)
        reply = decision.reply
        if reply.delay:
            self.server.stopping.wait(reply.delay)
        if isinstance(reply, ErrorReply):
            response = dialect.error(reply, request)
        else:
            response = dialect.reply(reply, request)
        self._record(decision, request, response.status)
        log.info(
            "%s %s %s script=%s step=%s status=%d",
            dialect.name,
            decision.kind,
            request.session_key[:8],
            decision.script,
            decision.step,
            response.status,
        )
        if response.events is None:
            self._send(response.status, response.body, response.headers)
        else:
            self._stream(response.events, response.headers)

    def _stream(self, events: Iterable[bytes], headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()

    def _other(self, *, body: Any = None, with_body: bool = True) -> None:
        path = urlsplit(self.path).path
        if path == "/api/hello" or path == "/":
            self._json(200, {}, body=body, kind="other", with_body=with_body)
        elif path == "/v1/models":
            models = {"data": [], "has_more": False, "first_id": None, "last_id": None}
            self._json(200, models, body=body, kind="other", with_body=with_body)
        else:
            error = {"type": "error", "error": {"type": "not_found_error", "message": path}}
            self._json(404, error, body=body, kind="other", with_body=with_body)

    def _json(
        self, status: int, payload: Any, *, body: Any, kind: str, with_body: bool = True
    ) -> None:
        path = urlsplit(self.path).path
        self.server.recorder.add(
            method=self.command,
            path=path,
            kind=kind,
            status=status,
            session="",
            script=None,
            step=None,
            body=body,
        )
        self._send(status, json.dumps(payload).encode() if with_body else b"", {})

    def _record(self, decision: Decision, request: Request, status: int) -> None:
        self.server.recorder.add(
            method=self.command,
            path=urlsplit(self.path).path,
            kind=decision.kind,
            status=status,
            session=request.session_key,
            script=decision.script,
            step=decision.step,
            body=dict(request.body),
        )

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        headers = {"request-id": f"req_scripted_{status}", **headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(payload)


class ModelServer:
    """A running scripted model server; use as a context manager.

    Example:
        with ModelServer(load_scenario(path)) as server:
            env["ANTHROPIC_BASE_URL"] = server.url
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        port: int = 0,
        record: Path | None = None,
        key: str | None = None,
    ) -> None:
        self.engine = Engine(scenario)
        self._recorder = _Recorder(record)
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.engine = self.engine
        self._server.key = key
        self._server.stopping = threading.Event()
        self._server.recorder = self._recorder
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Recorded]:
        """Every request so far, oldest first (a copy)."""
        return list(self._recorder.requests)

    def main_requests(self) -> list[Recorded]:
        """Only the agent's own turns (no side calls or other routes)."""
        return [r for r in self.requests if r.kind == "main"]

    def start(self) -> ModelServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="model-server", daemon=True
        )
        self._thread.start()
        return self

    def serve(self) -> None:
        """Serve in the calling thread until `stop()` or an exception."""
        self._server.serve_forever()

    def stop(self) -> None:
        """Stop serving, close the socket and the record file (idempotent)."""
        self._server.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._server.server_close()
        self._recorder.close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _write_ready(path: Path, url: str) -> None:
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(url + "\n")
    os.replace(temp, path)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a scenario until SIGTERM or Ctrl+C; write the URL to --ready-file once bound."""
    parser = argparse.ArgumentParser(prog="python -m ralph.testing.model_server")
    parser.add_argument("--scenario", type=Path, required=True, help="JSON scenario file")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--ready-file", type=Path, help="receives the base URL once listening")
    parser.add_argument("--record", type=Path, help="append every request here as JSON lines")
    parser.add_argument("--key", help="answer 401 to requests without exactly this key")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="model-server: %(message)s",
        stream=sys.stderr,
    )
    server = ModelServer(
        load_scenario(args.scenario), port=args.port, record=args.record, key=args.key
    )
    signal.signal(signal.SIGTERM, _terminate)
    try:
        if args.ready_file:
            _write_ready(args.ready_file, server.url)
        print(server.url, flush=True)
        server.serve()
    except KeyboardInterrupt:
        return 130
    finally:
        server.stop()
        if args.ready_file:
            args.ready_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

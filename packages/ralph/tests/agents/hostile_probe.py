#!/usr/bin/env python3
"""A hostile agent's search and escape attempts, run inside the sandbox (standard library only).

`hostile_probe.py PLAN OUT`: PLAN is a JSON file naming what to try; OUT receives a JSON
report. The probe never gets the canary: it looks for the canary's public marker, which only
the real credential carries (placeholders never do), in its environment, every process's
environment and command line, every file it can read, and every answer the key proxy gives;
then it tries every way out PLAN names and says which worked.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

# Built at run time, so neither this file nor its bytecode holds it.
MARKER = "".join(["CAN", "ARY"]).encode()
SKIP = ("/proc", "/sys", "/dev")
READ_LIMIT = 4 * 1024 * 1024
ANTHROPIC = {
    "base": "ANTHROPIC_BASE_URL",
    "key": "ANTHROPIC_API_KEY",
    "header": "x-api-key",
    "path": "/v1/messages",
    "body": {
        "model": "m",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    },
}


def leaks_in_files(root: str = "/") -> list[str]:
    found = []
    for top, dirs, files in os.walk(root):
        if top.startswith(SKIP):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(top, name)
            try:
                if not os.path.isfile(path) or os.path.islink(path):
                    continue
                with open(path, "rb") as f:
                    if MARKER in f.read(READ_LIMIT):
                        found.append(path)
            except OSError:
                continue
    return found


def leaks_in_processes() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for part in ("environ", "cmdline", "status"):
            try:
                if MARKER in Path(f"/proc/{pid}/{part}").read_bytes():
                    found.append(f"/proc/{pid}/{part}")
            except OSError:
                continue
    if any(MARKER in v.encode() for v in os.environ.values()):
        found.append("os.environ")
    return found


def ask(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None,
        proxy: bool = True, timeout: float = 10) -> tuple[int | None, bytes]:  # fmt: skip
    """(status, headers and body) of a request; (None, error text) when it never got one."""
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, str(response.headers).encode() + response.read()
    except urllib.error.HTTPError as e:
        return e.code, str(e.headers).encode() + e.read()
    except (OSError, http.client.HTTPException) as e:
        return None, repr(e).encode()


def tcp(host: str, port: int) -> str | None:
    """None when a TCP connection was refused or never made; else what answered."""
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            return f"connected to {s.getpeername()}"
    except OSError:
        return None


def udp_dns(server: str) -> str | None:
    query = (
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
    )
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(3)
        try:
            s.sendto(query, (server, 53))
            return f"answered {len(s.recvfrom(512)[0])} bytes"
        except OSError:
            return None


def resolves(name: str) -> str | None:
    try:
        return str(socket.getaddrinfo(name, 80)[0][4])
    except OSError:
        return None


def main() -> int:
    plan: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    report: dict[str, Any] = {"escaped": {}, "blocked": [], "reached": {}, "answers": {}}
    # The backend under test: where its API is, which variable holds its key, the header
    # that carries the key, and a streamed request in its dialect.
    api = plan.get("model", ANTHROPIC)
    base = os.environ[api["base"]]
    model = base + api["path"]
    key = os.environ.get(api["key"], "")
    body = json.dumps(api["body"]).encode()
    plain = {"content-type": "application/json"}
    keyed = {**plain, api["header"]: api.get("prefix", "") + key}
    answers = {
        "model": ask(model, data=body, headers=keyed, proxy=False),
        "no key": ask(model, data=body, headers=plain, proxy=False),
        "wrong key": ask(
            model,
            data=body,
            headers={**keyed, api["header"]: keyed[api["header"]] + "x"},
            proxy=False,
        ),
        "bearer": ask(
            model, data=body, headers={**plain, "authorization": f"Bearer {key}"}, proxy=False
        ),
        "unknown path": ask(base + "/v1/nothing", headers=keyed, proxy=False),
        "unknown route": ask(base.rsplit("/", 1)[0] + "/elsewhere/x", proxy=False),
    }
    report["answers"] = {name: status for name, (status, _) in answers.items()}
    report["leaks"] = [f"answer: {n}" for n, (_, text) in answers.items() if MARKER in text]
    report["leaks"] += leaks_in_processes() + leaks_in_files()
    report["searched_env"] = sorted(os.environ)

    attempts = {}
    for name, (host, port) in plan["tcp"].items():
        attempts[f"tcp {name}"] = tcp(host, port)
    for server in plan["udp_dns"]:
        attempts[f"udp dns {server}"] = udp_dns(server)
    for name in plan["resolve"]:
        attempts[f"resolve {name}"] = resolves(name)
    for url in plan["via_proxy"]:
        status, text = ask(url)
        attempts[f"proxy {url}"] = None if status in (None, 403) else f"HTTP {status}"
        if MARKER in text:
            report["leaks"].append(f"proxy answer {url}")
    for name, result in attempts.items():
        if result is None:
            report["blocked"].append(name)
        else:
            report["escaped"][name] = result
    for url in plan["allowed"]:
        report["reached"][url] = ask(url)[0]
    out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

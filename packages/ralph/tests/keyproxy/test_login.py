"""A logged-in Claude Code as the key proxy's credential: used while fresh, refreshed on the
host against a stand-in token endpoint, written back so the host's login keeps working."""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ralph.errors import LoginUnusable
from ralph.keyproxy.login import CLIENT_ID, ClaudeLogin

NOW = 1_800_000_000.0


class TokenEndpoint:
    """A stand-in for the OAuth token endpoint: answers each refresh with the next pair."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append(body)
                n = len(endpoint.requests)
                reply = {"access_token": f"sk-ant-oat01-fresh{n}", "refresh_token": f"rt-{n}",
                         "expires_in": 28800, "scope": "user:inference user:profile"}  # fmt: skip
                data = json.dumps(reply if endpoint.status == 200 else {"error": "x"}).encode()
                self.send_response(endpoint.status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/oauth/token"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def endpoint() -> Iterator[TokenEndpoint]:
    served = TokenEndpoint()
    yield served
    served.close()


def write_login(path: Path, *, expires_at: float, refresh: str = "rt-0") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    oauth = {"accessToken": "sk-ant-oat01-old", "refreshToken": refresh,
             "expiresAt": int(expires_at * 1000), "scopes": ["user:inference", "user:profile"],
             "subscriptionType": "max"}  # fmt: skip
    path.write_text(json.dumps({"claudeAiOauth": oauth, "other": {"kept": True}}))
    path.chmod(0o600)
    return path


def test_a_fresh_token_is_used_as_it_is(tmp_path: Path, endpoint: TokenEndpoint) -> None:
    path = write_login(tmp_path / ".credentials.json", expires_at=NOW + 3600)
    login = ClaudeLogin(path, token_url=endpoint.url, now=lambda: NOW)
    assert login.current() == "sk-ant-oat01-old"
    assert endpoint.requests == []


def test_an_expiring_token_is_refreshed_and_written_back(
    tmp_path: Path, endpoint: TokenEndpoint
) -> None:
    path = write_login(tmp_path / ".credentials.json", expires_at=NOW + 60)  # inside the margin
    login = ClaudeLogin(path, token_url=endpoint.url, now=lambda: NOW)
    assert login.current() == "sk-ant-oat01-fresh1"
    assert endpoint.requests == [
        {"grant_type": "refresh_token", "refresh_token": "rt-0", "client_id": CLIENT_ID,
         "scope": "user:inference user:profile"}
    ]  # fmt: skip
    saved = json.loads(path.read_text())
    assert saved["other"] == {"kept": True}
    oauth = saved["claudeAiOauth"]
    assert oauth["accessToken"] == "sk-ant-oat01-fresh1"
    assert oauth["refreshToken"] == "rt-1"  # rotated: the old one is spent
    assert oauth["expiresAt"] == int((NOW + 28800) * 1000)
    assert oauth["subscriptionType"] == "max"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert login.current() == "sk-ant-oat01-fresh1"  # fresh now: no second refresh
    assert len(endpoint.requests) == 1
    assert set(login.known()) == {"sk-ant-oat01-fresh1", "rt-1"}


def test_two_ralphs_sharing_a_login_refresh_it_once(
    tmp_path: Path, endpoint: TokenEndpoint
) -> None:
    path = write_login(tmp_path / ".credentials.json", expires_at=NOW - 1)
    logins = [ClaudeLogin(path, token_url=endpoint.url, now=lambda: NOW) for _ in range(4)]
    got: list[str] = []
    threads = [
        threading.Thread(target=lambda one=login: got.append(one.current())) for login in logins
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == ["sk-ant-oat01-fresh1"] * 4
    assert len(endpoint.requests) == 1


def test_a_refused_refresh_says_to_log_in_again(tmp_path: Path) -> None:
    endpoint = TokenEndpoint(status=400)
    try:
        path = write_login(tmp_path / ".credentials.json", expires_at=NOW - 1)
        login = ClaudeLogin(path, token_url=endpoint.url, now=lambda: NOW)
        with pytest.raises(LoginUnusable, match=r"HTTP 400.*log in again"):
            login.current()
        assert json.loads(path.read_text())["claudeAiOauth"]["refreshToken"] == "rt-0"
    finally:
        endpoint.close()


def test_an_expired_login_without_a_refresh_token_or_file_is_unusable(tmp_path: Path) -> None:
    path = write_login(tmp_path / ".credentials.json", expires_at=NOW - 1, refresh="")
    login = ClaudeLogin(path, token_url="http://127.0.0.1:9/none", now=lambda: NOW)
    with pytest.raises(LoginUnusable, match="expired"):
        login.current()
    path.unlink()
    with pytest.raises(LoginUnusable, match="no Claude login"):
        login.current()


def test_an_unreachable_token_endpoint_is_one_line(tmp_path: Path) -> None:
    path = write_login(tmp_path / ".credentials.json", expires_at=NOW - 1)
    login = ClaudeLogin(path, token_url="http://127.0.0.1:9/none", now=lambda: NOW)
    with pytest.raises(LoginUnusable, match="cannot refresh"):
        login.current()

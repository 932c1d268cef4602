"""A logged-in Claude Code (`~/.claude/.credentials.json`) as the key proxy's credential.

The login is an OAuth access token (hours) and a refresh token (long-lived, rotated on every
use). Both stay on the host: the agent gets a placeholder as `CLAUDE_CODE_OAUTH_TOKEN`, and
the proxy sends the current access token in its place. When that token is about to expire,
the proxy refreshes it here as Claude Code 2.1.330 does (a JSON POST of `grant_type`
`refresh_token`, the refresh token, Claude Code's public client id and the login's scopes to
`https://platform.claude.com/v1/oauth/token`) and writes the rotated pair back to the same
file, so Claude Code on the host, which watches the file's mtime, keeps working. Concurrent
ralphs take a lock beside the file and read it again before refreshing: a refresh token is
good for one use.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph import safefile
from ralph.errors import LoginUnusable
from ralph.keyproxy.routes import placeholder

TOKEN_URL = "https://platform.claude.com/v1/oauth/token"  # noqa: S105  # a URL, not a secret
CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"  # Claude Code's public OAuth client
KEY = "claudeAiOauth"
_HINT = "run `claude` on the host and log in again (/login)"


@dataclass(frozen=True, slots=True)
class Tokens:
    """The login's fields the proxy uses."""

    access: str
    refresh: str
    expires_at: float  # seconds since the epoch (the file holds milliseconds)
    scopes: tuple[str, ...]


def parse(text: str) -> Tokens | None:
    """The tokens in a `.credentials.json`, or None when it holds no usable login."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    oauth = raw.get(KEY) if isinstance(raw, dict) else None
    if not isinstance(oauth, dict):
        return None
    access, refresh = oauth.get("accessToken"), oauth.get("refreshToken")
    expires, scopes = oauth.get("expiresAt"), oauth.get("scopes")
    if not isinstance(access, str) or not access:
        return None
    return Tokens(
        access=access,
        refresh=refresh if isinstance(refresh, str) else "",
        expires_at=expires / 1000 if isinstance(expires, int | float) else float("inf"),
        scopes=tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
    )


def merged(text: str, reply: dict[str, Any], *, now: float, old: Tokens) -> bytes:
    """The file's new content: the refresh's tokens written over the login, the rest kept."""
    raw = json.loads(text)
    oauth = raw[KEY]
    oauth["accessToken"] = reply["access_token"]
    oauth["refreshToken"] = reply.get("refresh_token") or old.refresh
    oauth["expiresAt"] = int((now + float(reply.get("expires_in") or 3600)) * 1000)
    if isinstance(reply.get("scope"), str) and reply["scope"]:
        oauth["scopes"] = reply["scope"].split()
    return json.dumps(raw).encode()


@dataclass
class ClaudeLogin:
    """The host's login file, read when it changes and refreshed before it expires."""

    path: Path
    token_url: str = TOKEN_URL
    now: Callable[[], float] = time.time
    margin: float = 300.0  # refresh this long before expiry: a request may be slow to start
    timeout: float = 30.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seen: tuple[int, int, int] | None = None
    _tokens: Tokens | None = None
    _placeholder: str | None = None

    def present(self) -> bool:
        """Whether the file holds a login."""
        return self._read() is not None

    def placeholder(self) -> str:
        """This login's stand-in for the run (an OAuth token's prefix, then random)."""
        if self._placeholder is None:
            tokens = self._read()
            self._placeholder = placeholder(tokens.access if tokens else "sk-ant-oat01-")
        return self._placeholder

    def known(self) -> tuple[str, ...]:
        tokens = self._tokens
        return (tokens.access, tokens.refresh) if tokens else ()

    def current(self) -> str:
        """A valid access token: the file's, or a fresh one from a refresh."""
        with self._lock:
            tokens = self._valid()
            if self._fresh(tokens):
                return tokens.access
            with self._exclusive():
                tokens = self._valid()  # another ralph may have refreshed it meanwhile
                return tokens.access if self._fresh(tokens) else self._refresh(tokens)

    def _valid(self) -> Tokens:
        tokens = self._read()
        if tokens is None:
            raise LoginUnusable(f"{self.path} holds no Claude login any more: {_HINT}")
        return tokens

    def _fresh(self, tokens: Tokens) -> bool:
        return tokens.expires_at - self.margin > self.now()

    def _read(self) -> Tokens | None:
        try:
            st = os.stat(self.path)
        except OSError:
            self._seen, self._tokens = None, None
            return None
        seen = (st.st_ino, st.st_mtime_ns, st.st_size)
        if seen != self._seen:
            try:
                text = self.path.read_text()
            except OSError:
                return self._tokens
            self._seen, self._tokens = seen, parse(text)
        return self._tokens

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        lock = self.path.with_name(self.path.name + ".ralph-lock")
        fd = safefile.open_plain(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _refresh(self, tokens: Tokens) -> str:
        if not tokens.refresh:
            raise LoginUnusable(f"the Claude login in {self.path} expired: {_HINT}")
        body = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh,
            "client_id": CLIENT_ID,
            "scope": " ".join(tokens.scopes),
        }
        request = urllib.request.Request(  # noqa: S310  # the URL is ours, https by default
            self.token_url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "User-Agent": "ralph"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                reply = json.loads(response.read())
        except urllib.error.HTTPError as e:
            raise LoginUnusable(
                f"refreshing the Claude login in {self.path} failed (HTTP {e.code}): {_HINT}"
            ) from None
        except (OSError, ValueError) as e:
            raise LoginUnusable(f"cannot refresh the Claude login: {e}") from None
        if not isinstance(reply, dict) or not isinstance(reply.get("access_token"), str):
            raise LoginUnusable("the Claude login refresh answered without an access token")
        now = self.now()
        safefile.replace(
            self.path, merged(self.path.read_text(), reply, now=now, old=tokens), mode=0o600
        )
        self._seen = None
        fresh = self._read()
        return fresh.access if fresh else str(reply["access_token"])

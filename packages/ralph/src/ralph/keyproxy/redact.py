"""Masking secrets in what the key proxy sends back to the agent: headers, and bodies cut anywhere.

An upstream may echo a credential (a gateway's "invalid key sk-..." error, a redirect that
carries it), so every secret is masked in every response before the agent sees it. A mask
keeps the secret's length, so a `Content-Length` stays true; a body is masked as it streams,
holding back only a tail that could be the start of a secret (never a whole event, so a
server-sent event still reaches the agent the moment it arrives).
"""

from __future__ import annotations

from collections.abc import Iterable

# Shorter values are not credentials, and masking them would mangle ordinary text.
MIN_SECRET = 8
MASK = b"*"


class Redactor:
    """Masks `secrets` in a byte stream fed in chunks cut anywhere."""

    def __init__(self, secrets: Iterable[str]) -> None:
        found = {s.encode() for s in secrets if len(s) >= MIN_SECRET}
        self._secrets = sorted(found, key=len, reverse=True)
        self._pending = b""

    def text(self, value: str) -> str:
        """`value` (a header) with every secret masked."""
        for secret in self._secrets:
            value = value.replace(secret.decode(), MASK.decode() * len(secret))
        return value

    def feed(self, chunk: bytes) -> bytes:
        """What of the stream so far is safe to send: masked, less a possible secret's start."""
        data = self._pending + chunk
        for secret in self._secrets:
            data = data.replace(secret, MASK * len(secret))
        keep = self._partial(data)
        self._pending = data[len(data) - keep :]
        return data[: len(data) - keep]

    def flush(self) -> bytes:
        """The held-back tail, at the end of the stream (it never completed a secret)."""
        rest, self._pending = self._pending, b""
        return rest

    def _partial(self, data: bytes) -> int:
        """The length of the longest tail of `data` that a secret starts with."""
        if not data:
            return 0
        last = data[-1]
        longest = 0
        for secret in self._secrets:
            # only prefixes ending in the data's last byte can match its tail
            at = secret.find(last, 0, len(secret) - 1)
            while at != -1:
                size = at + 1
                if size > longest and size <= len(data) and data.endswith(secret[:size]):
                    longest = size
                at = secret.find(last, at + 1, len(secret) - 1)
        return longest

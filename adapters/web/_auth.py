"""Bearer authentication: who is calling, and with which GNS3 token.

The token is checked by the :class:`~copilot_core.ports.Authenticator` (against
GNS3) and remembered for a short while under its SHA-256 digest, never in clear.
It then travels in memory only, inside :class:`Caller`, to the project gate and
to the turn's tools.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from copilot_core.errors import AuthenticationError
from copilot_core.ports import Authenticator, Principal

__all__ = ["MAX_TOKEN_CHARS", "CachingAuthenticator", "Caller", "bearer_token"]

#: The longest bearer token accepted (a GNS3 JWT is a few hundred characters).
MAX_TOKEN_CHARS = 8192

_TOKEN = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated principal and the token it came with (hidden from ``repr``)."""

    principal: Principal
    token: str = field(repr=False)

    @property
    def user_id(self) -> str:
        return self.principal.user_id


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header, or AuthenticationError."""
    if not authorization:
        raise AuthenticationError(
            "Missing credentials: send your GNS3 token as 'Authorization: Bearer <token>'."
        )
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationError(
            "Malformed Authorization header: expected 'Authorization: Bearer <token>'."
        )
    if len(token) > MAX_TOKEN_CHARS:
        raise AuthenticationError(
            f"Malformed bearer token: longer than {MAX_TOKEN_CHARS} characters."
        )
    if not _TOKEN.fullmatch(token):
        # A GNS3 token is a JWT (base64url and dots); anything outside printable ASCII
        # could not even be sent on to GNS3 in a header.
        raise AuthenticationError(
            "Malformed bearer token: a GNS3 token is printable ASCII (letters, digits, "
            "punctuation) without spaces."
        )
    return token


class CachingAuthenticator:
    """An :class:`~copilot_core.ports.Authenticator` that remembers successes briefly.

    Entries are keyed by the token's SHA-256 digest and expire after ``ttl``
    seconds; at most ``size`` are kept (oldest evicted first). Failures are never
    cached, so a token that GNS3 starts accepting works at once.
    """

    def __init__(
        self,
        inner: Authenticator,
        *,
        ttl: float = 30.0,
        size: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[float, Principal]] = OrderedDict()

    async def authenticate(self, token: str) -> Principal:
        key = hashlib.sha256(token.encode("utf-8")).digest()
        now = self._clock()
        cached = self._entries.get(key)
        if cached is not None:
            expires, principal = cached
            if now < expires:
                return principal
            del self._entries[key]
        principal = await self._inner.authenticate(token)
        if self._ttl > 0:
            self._entries[key] = (now + self._ttl, principal)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return principal

    def forget_all(self) -> None:
        self._entries.clear()

"""Connecting to Redis: one client per service, checked at start-up, clear errors."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from copilot_core.errors import ServiceUnavailableError
from copilot_core.ports import redact_secrets

__all__ = ["connect_redis", "describe_redis_url"]

_SCHEMES = ("redis://", "rediss://", "unix://")


def describe_redis_url(url: str) -> str:
    """The URL without its password, for messages and logs (never raises)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable Redis URL)"
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def _scrub(text: str, url: str) -> str:
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    match = re.match(r"^[a-z]+://[^:/@]*:([^@]*)@", url)
    text = redact_secrets(text, (password, match.group(1) if match else None))
    return " ".join(text.split())


async def connect_redis(url: str, *, connect_timeout: float = 5.0) -> aioredis.Redis:
    """A client for ``url`` that answered a ``PING``; raises ``ServiceUnavailableError``
    with the reason (never the password) when the URL is bad or Redis cannot be used."""
    if not url.startswith(_SCHEMES):
        raise ServiceUnavailableError(
            "The Redis URL must start with redis://, rediss:// or unix://, "
            "for example redis://redis.lab:6379/0."
        )
    target = describe_redis_url(url)
    try:
        # A pooled connection Redis closed (a restart) fails its next command at once:
        # that command is sent again once, on a new connection, before anything fails.
        # Only on a closed connection, not on a timeout (a command that may have run).
        client = aioredis.Redis.from_url(
            url,
            socket_connect_timeout=connect_timeout,
            health_check_interval=30,
            retry=Retry(NoBackoff(), 1),
            retry_on_error=[RedisConnectionError],
        )
    except (ValueError, RedisError) as exc:
        raise ServiceUnavailableError(
            f"The Redis URL is not valid: {_scrub(str(exc), url)}."
        ) from None
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        await client.aclose()
        raise ServiceUnavailableError(
            f"Cannot connect to Redis at {target}: {_scrub(str(exc), url) or type(exc).__name__}"
        ) from None
    return client

"""Where a user's LLM requests go, checked against the operator's policy.

:func:`endpoint_url` is the URL a provider and ``base_url`` send requests to (a provider's
default when ``base_url`` is empty); :func:`check_endpoint` refuses one the user's
:class:`~copilot_core.policy.UserLimits` do not allow, resolving its host name with
:func:`resolve_host` (the addresses the system resolver gives, as the HTTP client would
connect to them).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence

from adapters.llm._settings import NATIVE_PROVIDERS, OPENAI_COMPATIBLE_PROVIDERS
from copilot_core.policy import HostResolver, UserLimits, check_llm_endpoint

__all__ = ["OPENAI_API", "check_endpoint", "endpoint_url", "resolve_host"]

#: Where ``openai`` sends requests without a ``base_url``.
OPENAI_API = "https://api.openai.com/v1"
_RESOLVE_TIMEOUT = 5.0


def endpoint_url(provider: str, base_url: str | None) -> str:
    if base_url:
        return base_url
    if provider in NATIVE_PROVIDERS:
        return NATIVE_PROVIDERS[provider]
    return OPENAI_COMPATIBLE_PROVIDERS.get(provider) or OPENAI_API


async def resolve_host(host: str) -> Sequence[str]:
    """The addresses ``host`` resolves to (none when it does not, within 5 s)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(_RESOLVE_TIMEOUT):
            found = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        return []
    return sorted({str(info[4][0]) for info in found})


async def check_endpoint(
    provider: str,
    base_url: str | None,
    limits: UserLimits,
    resolve: HostResolver = resolve_host,
) -> None:
    """PermissionDeniedError unless ``limits`` allow the provider's endpoint."""
    await check_llm_endpoint(endpoint_url(provider, base_url), limits, resolve)

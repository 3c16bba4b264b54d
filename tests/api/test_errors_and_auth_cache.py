"""The error → status table, the 500 path, and the token cache."""

from __future__ import annotations

import pytest

from adapters.web import CachingAuthenticator, status_for
from adapters.web.testing import StaticAuthenticator
from copilot_core import errors
from copilot_core.ports import Principal
from tests.api.conftest import OPEN, Service


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.InvalidRequestError("bad"), 422),
        (errors.LLMNotConfiguredError(), 409),
        (errors.LLMSetupError("no client"), 502),
        (errors.LLMContextLengthError("too long"), 400),
        (errors.AuthenticationError("who?"), 401),
        (errors.PermissionDeniedError("no"), 403),
        (errors.SessionNotFoundError("s"), 404),
        (errors.ProjectNotFoundError("p"), 404),
        (errors.AgentNotFoundError("a", ["copilot"]), 404),
        (errors.SessionBusyError("s"), 409),
        (errors.ProjectNotOpenedError("p"), 409),
        (errors.LLMRateLimitedError("slow down", 2.5), 429),
        (errors.LLMAuthenticationError("bad key"), 502),
        (errors.LLMUnavailableError("down"), 502),
        (errors.Gns3Error("gns3 said no", 500), 502),
        (errors.Gns3UnavailableError("GNS3 at http://gns3 cannot be reached", 5), 503),
        (errors.AgentProcessError("crashed"), 502),
        (errors.StoreError("locked"), 503),
        (errors.StoreCorruptedError("p", "bad header"), 503),
        (errors.ConversationInvariantError("unanswered"), 500),
        (errors.CopilotError("anything else"), 500),
    ],
)
def test_every_copilot_error_has_a_status(error: errors.CopilotError, status: int) -> None:
    assert status_for(error) == status


class _BrokenStore:
    async def list_sessions(self, *args: object, **kwargs: object) -> list[object]:
        raise RuntimeError("secret-internal-state /etc/passwd")


async def test_an_unexpected_failure_is_a_500_without_details(service: Service) -> None:
    service.chat._store = _BrokenStore()  # type: ignore[assignment]
    async with service.client() as client:
        response = await client.get(service.chat_url(OPEN) + "/sessions")
    assert response.status_code == 500
    body = response.json()
    assert body["code"] == "internal"
    assert "the incident was logged" in body["detail"] and "tell the operator" in body["detail"]
    assert "secret-internal-state" not in response.text
    assert "Traceback" not in response.text


async def test_rate_limits_carry_retry_after(service: Service) -> None:
    class _Limited:
        async def for_user(self, user_id: str, overrides: object) -> object:
            raise errors.LLMRateLimitedError("The provider asks you to slow down.", 2.2)

    service.chat.runner.starter._models = _Limited()  # type: ignore[assignment]
    async with service.client() as client:
        response = await client.post(service.chat_url() + "/stream", json={"message": "hi"})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_token_cache_expires_and_evicts() -> None:
    inner = StaticAuthenticator({f"t{i}": Principal(f"u{i}", f"user{i}") for i in range(3)})
    clock = _Clock()
    cache = CachingAuthenticator(inner, ttl=10, size=2, clock=clock)
    assert (await cache.authenticate("t0")).user_id == "u0"
    assert (await cache.authenticate("t0")).user_id == "u0"
    assert inner.calls == 1
    clock.now = 11
    await cache.authenticate("t0")
    assert inner.calls == 2  # expired
    await cache.authenticate("t1")
    await cache.authenticate("t2")  # evicts t0, the oldest
    await cache.authenticate("t0")
    assert inner.calls == 5
    assert "t0" not in repr(vars(cache))  # keyed by digest, never by the token


async def test_token_cache_does_not_remember_failures() -> None:
    inner = StaticAuthenticator({})
    cache = CachingAuthenticator(inner, ttl=10)
    for _ in range(2):
        with pytest.raises(errors.AuthenticationError):
            await cache.authenticate("nope")
    assert inner.calls == 2

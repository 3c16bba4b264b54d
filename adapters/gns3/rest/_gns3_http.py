"""The GNS3 v3 API's HTTP plumbing (:class:`Gns3Http`, the base of ``Gns3Client``).

The caller's JWT is passed to every call and never stored. GNS3's errors become
core errors carrying GNS3's own message:

* 401 → :class:`~copilot_core.errors.AuthenticationError`
* 403 → :class:`~copilot_core.errors.PermissionDeniedError`
* 404 on a project → :class:`~copilot_core.errors.ProjectGoneError` (GNS3 says it has
  no such project, which it tells only a caller with rights on it)
* anything else ≥ 400 → :class:`~copilot_core.errors.Gns3Error` with the status code
* an unreachable server (no answer at all) →
  :class:`~copilot_core.errors.Gns3UnavailableError` with ``retry_after`` (the web
  adapter answers 503 with ``Retry-After``)

Requests are retried on connection failures, with exponential backoff and full jitter
(tenacity), within a bounded total time, only where a retry cannot repeat an effect:
any method when the connection could not even be made (nothing was sent); a GET (or
HEAD) also when the connection broke or timed out after the request was sent. A POST,
PUT or DELETE that may have reached GNS3 is never sent twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Self

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from copilot_core.errors import (
    AuthenticationError,
    Gns3Error,
    Gns3UnavailableError,
    PermissionDeniedError,
    ProjectGoneError,
)

__all__ = ["JSON", "RETRY_AFTER", "Gns3Http"]

JSON = dict[str, Any]

_log = logging.getLogger(__name__)

RETRY_AFTER = 5.0
"""Seconds a caller is told to wait when GNS3 cannot be reached."""

# Nothing reached GNS3: safe to send again whatever the method.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
# Methods GNS3 treats as reads: safe to send again even if the first one arrived.
_IDEMPOTENT_READS = frozenset({"GET", "HEAD"})


def _retryable(method: str, error: BaseException) -> bool:
    if isinstance(error, _NOT_SENT):
        return True
    return method in _IDEMPOTENT_READS and isinstance(error, httpx.TransportError)


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    _log.info(
        "GNS3 request failed (%s); retry %d in %.2f s",
        type(error).__name__,
        state.attempt_number,
        state.upcoming_sleep,
    )


def _gns3_message(response: httpx.Response) -> str:
    """GNS3's own words from an error response (``message`` or pydantic's ``detail``)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict):
        if isinstance(body.get("message"), str):
            return str(body["message"])
        detail = body.get("detail")
        if isinstance(detail, str):
            return detail
        if isinstance(detail, list):
            parts = []
            for item in detail[:5]:
                if isinstance(item, dict):
                    where = ".".join(str(x) for x in item.get("loc", []) if x != "body")
                    parts.append(f"{where}: {item.get('msg', '')}".strip(": "))
            if parts:
                return "; ".join(parts)
    return str(body)[:500]


class Gns3Http:
    """The HTTP side of :class:`~adapters.gns3.Gns3Client`: one connection pool, the
    caller's token on each request, retries where they are safe, GNS3's errors as the
    core's.

    ``base_url`` is the server's root (``http://127.0.0.1:3080``); ``/v3`` is added.
    Pass ``http`` to share a connection pool (its lifetime is then yours);
    otherwise :meth:`aclose` closes the client's own.
    """

    def __init__(
        self,
        base_url: str,
        *,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        retry_within: float = 5.0,
        retry_backoff: float = 0.2,
    ) -> None:
        """``retries``: extra attempts after a retryable failure; ``retry_within``: no
        attempt starts once that many seconds passed since the first; ``retry_backoff``:
        the first wait's upper bound (then doubling, each wait random below its bound)."""
        self.base_url = base_url.rstrip("/")
        self._api = f"{self.base_url}/v3"
        self._own = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._timeout = timeout
        self._retries = max(0, retries)
        self._retry_within = retry_within
        self._retry_backoff = retry_backoff

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ plumbing
    @staticmethod
    def _headers(token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    async def _request(
        self,
        method: str,
        path: str,
        token: str | None,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        what: str,
        project_id: str | None = None,
        raw: bool = False,
    ) -> Any:
        """GNS3's JSON answer (``None`` for an empty one); its bytes with ``raw``."""
        try:
            response = await self._send(method, path, token, json_body, content)
        except httpx.TimeoutException as exc:
            raise Gns3UnavailableError(
                f"GNS3 at {self.base_url} did not answer in time while trying to {what}.",
                RETRY_AFTER,
            ) from exc
        except httpx.TransportError as exc:
            raise Gns3UnavailableError(
                f"GNS3 at {self.base_url} cannot be reached ({type(exc).__name__}) "
                f"while trying to {what}.",
                RETRY_AFTER,
            ) from exc
        self._raise_for_status(response, what, project_id)
        if raw:
            return response.content
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    async def _in_project(
        self,
        method: str,
        project_id: str,
        path: str,
        token: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        what: str,
        raw: bool = False,
    ) -> Any:
        """:meth:`_request` on ``path`` under the project, a 404 naming the project."""
        return await self._request(
            method,
            f"/projects/{project_id}{path}",
            token,
            json_body=json_body,
            content=content,
            what=what,
            project_id=project_id,
            raw=raw,
        )

    async def _send(
        self, method: str, path: str, token: str | None, body: Any, content: bytes | None = None
    ) -> httpx.Response:
        """One request, retried where safe (see the module doc); the last failure is raised."""
        retrying = AsyncRetrying(
            retry=retry_if_exception(lambda error: _retryable(method, error)),
            stop=stop_after_attempt(self._retries + 1) | stop_after_delay(self._retry_within),
            wait=wait_random_exponential(multiplier=self._retry_backoff, max=2.0),
            before_sleep=_log_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._http.request(
                    method,
                    f"{self._api}{path}",
                    headers=self._headers(token),
                    json=body,
                    content=content,
                    timeout=self._timeout,
                )
        raise AssertionError("unreachable: tenacity re-raises the last failure")  # pragma: no cover

    @staticmethod
    def _raise_for_status(response: httpx.Response, what: str, project_id: str | None) -> None:
        status = response.status_code
        if status < 400:
            return
        message = _gns3_message(response)
        if status == 401:
            raise AuthenticationError(f"GNS3 rejected the credentials: {message}")
        if status == 403:
            raise PermissionDeniedError(f"GNS3 refused to {what}: {message}")
        if status == 404 and project_id is not None and "Project ID" in message:
            raise ProjectGoneError(project_id)
        raise Gns3Error(f"GNS3 could not {what}: {message}", status)

    # ---------------------------------------------------------------------- auth
    async def _json_lines(
        self,
        path: str,
        token: str,
        *,
        what: str,
        project_id: str | None = None,
        on_open: Callable[[], Awaitable[None]] | None = None,
    ) -> AsyncGenerator[JSON, None]:
        """A stream of JSON lines, each object yielded (anything else skipped), with no read
        timeout; a broken connection is :class:`Gns3UnavailableError`."""
        try:
            async with self._http.stream(
                "GET",
                f"{self._api}{path}",
                headers=self._headers(token),
                timeout=httpx.Timeout(self._timeout, read=None),
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    self._raise_for_status(response, what, project_id)
                if on_open is not None:
                    await on_open()
                async for line in response.aiter_lines():
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(event, dict):
                        yield event
        except httpx.TransportError as exc:
            raise Gns3UnavailableError(
                f"The notification stream from GNS3 at {self.base_url} failed "
                f"({type(exc).__name__}).",
                RETRY_AFTER,
            ) from exc

"""Probes: ``/healthz`` (the process answers) and ``/readyz`` (its dependencies do)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from litestar import Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from adapters.web._contracts import ReadinessCheck, WebSettings
from adapters.web._responses import Health, Readiness
from adapters.web._state import Injected
from copilot_core.errors import CopilotError

__all__ = ["healthz", "readyz"]


@get("/healthz", operation_id="healthz", tags=["probes"], sync_to_thread=False)
def healthz() -> Health:
    """The process is up (no dependency is checked)."""
    return Health()


async def _probe(check: ReadinessCheck, limit: float) -> str:
    try:
        async with asyncio.timeout(limit):
            await check()
    except TimeoutError:
        return f"failed: no answer within {limit:g} s"
    except CopilotError as exc:
        return f"failed: {exc.message}"
    except Exception as exc:  # a probe reports any failure; it never raises
        return f"failed: {type(exc).__name__}"
    return "ok"


async def _readiness(checks: Mapping[str, ReadinessCheck], limit: float) -> Readiness:
    names = list(checks)
    results = await asyncio.gather(*(_probe(checks[name], limit) for name in names))
    ready = all(result == "ok" for result in results)
    return Readiness(
        status="ready" if ready else "not_ready", checks=dict(zip(names, results, strict=True))
    )


@get(
    "/readyz",
    operation_id="readyz",
    tags=["probes"],
    responses={
        503: ResponseSpec(
            Readiness,
            description="A check failed (each says why), or the service is starting.",
            generate_examples=False,
        )
    },
)
async def readyz(
    readiness: Injected[Mapping[str, ReadinessCheck] | None],
    web_settings: Injected[WebSettings],
) -> Response[Readiness]:
    """Every readiness check passes (the store is open, GNS3 answers…): 200, else 503."""
    report = (
        Readiness(status="starting", checks={})
        if readiness is None
        else await _readiness(readiness, web_settings.readiness_timeout)
    )
    ready = report.status == "ready"
    return Response(report, status_code=HTTP_200_OK if ready else HTTP_503_SERVICE_UNAVAILABLE)

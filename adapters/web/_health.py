"""Probes: ``/healthz`` (the process answers) and ``/readyz`` (its dependencies do)."""

from __future__ import annotations

import asyncio

from litestar import Response, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from adapters.web._contracts import ReadinessCheck, WebSettings
from adapters.web._responses import Readiness
from adapters.web._state import installed
from copilot_core.errors import CopilotError

__all__ = ["healthz", "readyz"]


@get("/healthz", operation_id="healthz", tags=["probes"], sync_to_thread=False)
def healthz() -> dict[str, str]:
    """The process is up (no dependency is checked)."""
    return {"status": "ok"}


async def _probe(check: ReadinessCheck, limit: float) -> str:
    try:
        async with asyncio.timeout(limit):
            await check()
    except TimeoutError:
        return f"failed: no answer within {limit:g} s"
    except CopilotError as exc:
        return f"failed: {exc.message}"
    except Exception as exc:
        return f"failed: {type(exc).__name__}"
    return "ok"


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
async def readyz(state: State, web_settings: NamedDependency[WebSettings]) -> Response[Readiness]:
    """Every readiness check passes (the store is open, GNS3 answers…): 200, else 503."""
    deps = installed(state)
    if deps is None:
        return Response(Readiness("starting", {}), status_code=HTTP_503_SERVICE_UNAVAILABLE)
    names = list(deps.readiness)
    results = await asyncio.gather(
        *(_probe(deps.readiness[name], web_settings.readiness_timeout) for name in names)
    )
    checks = dict(zip(names, results, strict=True))
    ready = all(result == "ok" for result in results)
    return Response(
        Readiness("ready" if ready else "not_ready", checks),
        status_code=HTTP_200_OK if ready else HTTP_503_SERVICE_UNAVAILABLE,
    )

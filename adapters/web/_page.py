"""The chat page: ``/`` and its assets under ``/ui/``, shipped inside the package.

Everything is served from ``adapters/web/static`` (no CDN, works offline) with a
strict Content-Security-Policy: scripts, styles and connections only from this
origin, no inline script or style, no frames.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from litestar import Response, Router, get
from litestar.static_files import create_static_files_router

__all__ = ["PAGE_HEADERS", "STATIC_DIR", "page_routes"]

STATIC_DIR: Final = Path(__file__).parent / "static"

PAGE_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@get("/", operation_id="chatPage", tags=["ui"], include_in_schema=False, sync_to_thread=False)
def index() -> Response[bytes]:
    """The single-page chat UI."""
    return Response(
        (STATIC_DIR / "index.html").read_bytes(),
        media_type="text/html; charset=utf-8",
        headers=PAGE_HEADERS,
    )


async def _with_page_headers(response: Response[Any]) -> Response[Any]:
    for name, value in PAGE_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def page_routes() -> list[Any]:
    """``/`` and the static assets (``/ui/...``)."""
    assets: Router = create_static_files_router(
        path="/ui",
        directories=[STATIC_DIR],
        after_request=_with_page_headers,
        include_in_schema=False,
        name="ui-assets",
    )
    return [index, assets]

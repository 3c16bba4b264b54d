"""/healthz, /readyz and the OpenAPI schema."""

from __future__ import annotations

import asyncio

from copilot_core.errors import StoreError
from tests.api.conftest import Service, run_service

ROUTES = {
    ("post", "/v3/copilot/projects/{project_id}/chat/stream"),
    ("get", "/v3/copilot/projects/{project_id}/chat/sessions"),
    ("get", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/history"),
    ("get", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/stream"),
    ("patch", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}"),
    ("delete", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}"),
    ("post", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/abort"),
    (
        "post",
        "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/approvals/{approval_id}",
    ),
    ("get", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/restore-points"),
    (
        "post",
        "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/restore-points/"
        "{restore_point_id}/rollback",
    ),
    ("put", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/pin"),
    ("delete", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/pin"),
    ("post", "/v3/copilot/reload/skills"),
    ("get", "/v3/copilot/capabilities"),
    ("get", "/v3/copilot/agents"),
    ("get", "/v3/copilot/llm-config"),
    ("put", "/v3/copilot/llm-config"),
    ("delete", "/v3/copilot/llm-config"),
    ("post", "/v3/copilot/llm-config/test"),
    ("post", "/v3/copilot/auth/login"),
    ("get", "/v3/copilot/me"),
    ("get", "/v3/copilot/projects"),
    ("post", "/v3/copilot/render"),
    ("get", "/healthz"),
    ("get", "/readyz"),
}


async def test_healthz_needs_no_token(service: Service) -> None:
    async with service.client(token=None) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["x-request-id"]


async def test_request_id_is_echoed_when_safe(service: Service) -> None:
    async with service.client(token=None) as client:
        echoed = await client.get("/healthz", headers={"X-Request-ID": "abc-123"})
        replaced = await client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert echoed.headers["x-request-id"] == "abc-123"
    assert replaced.headers["x-request-id"] != "bad id\twith spaces"


async def test_readyz_reports_each_check() -> None:
    async def ok() -> None:
        return None

    async def broken() -> None:
        raise StoreError("the database is locked")

    async def slow() -> None:
        await asyncio.sleep(10)

    async with run_service(readiness={"store": ok}) as service, service.client(None) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"store": "ok"}}

    async with (
        run_service(readiness={"store": broken, "gns3": ok}) as service,
        service.client(None) as client,
    ):
        not_ready = await client.get("/readyz")
    assert not_ready.status_code == 503
    assert not_ready.json()["checks"] == {"store": "failed: the database is locked", "gns3": "ok"}

    async with (
        run_service(readiness={"gns3": slow}, readiness_timeout=0.1) as service,
        service.client(None) as client,
    ):
        timed_out = await client.get("/readyz")
    assert timed_out.status_code == 503
    assert timed_out.json()["checks"]["gns3"].startswith("failed: no answer within")


async def test_openapi_documents_every_route_with_an_operation_id(service: Service) -> None:
    async with service.client(token=None) as client:
        response = await client.get("/schema/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    listed = {
        (method, path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert listed == ROUTES
    operation_ids = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            assert operation.get("operationId"), (method, path)
            assert operation.get("description"), (method, path)
            operation_ids.append(operation["operationId"])
    assert len(set(operation_ids)) == len(operation_ids)
    assert "BearerToken" in schema["components"]["securitySchemes"]
    stream_body = schema["paths"]["/v3/copilot/projects/{project_id}/chat/stream"]["post"]
    assert "requestBody" in stream_body
    assert "text/event-stream" in stream_body["responses"]["200"]["content"]
    for path, operations in schema["paths"].items():
        if not path.startswith("/v3/copilot"):
            continue
        for method, operation in operations.items():
            error = operation["responses"]["401"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)
    assert schema["components"]["schemas"]["ErrorBody"]["required"] == ["detail"]


async def test_cors_is_off_by_default_and_allows_configured_origins(service: Service) -> None:
    preflight = {
        "Origin": "https://ui.lab",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    async with service.client(token=None) as client:
        closed = await client.options(service.chat_url() + "/stream", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers

    async with (
        run_service(cors_origins=("https://ui.lab",)) as open_service,
        open_service.client() as client,
    ):
        allowed = await client.options(open_service.chat_url() + "/stream", headers=preflight)
        other = await client.options(
            open_service.chat_url() + "/stream", headers={**preflight, "Origin": "https://evil"}
        )
        simple = await client.get(
            open_service.chat_url() + "/sessions", headers={"Origin": "https://ui.lab"}
        )
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == "https://ui.lab"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert other.headers.get("access-control-allow-origin") != "https://evil"
    assert "x-session-id" in simple.headers["access-control-expose-headers"].lower()

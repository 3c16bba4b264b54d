"""/healthz, /readyz and the OpenAPI schema."""

from __future__ import annotations

import asyncio
from typing import Any

from copilot_core.errors import StoreError
from tests.api.conftest import OPEN, Service, run_service

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
    ("post", "/v3/copilot/projects"),
    ("post", "/v3/copilot/projects/{project_id}/open"),
    ("get", "/v3/copilot/policy"),
    (
        "get",
        "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/restore-points/"
        "{restore_point_id}/preview",
    ),
    ("post", "/v3/copilot/render"),
    ("post", "/v3/copilot/render/tools"),
    ("get", "/v3/copilot/projects/{project_id}/topology"),
    ("get", "/v3/copilot/projects/{project_id}/topology/events"),
    ("get", "/v3/copilot/projects/{project_id}/chat/search"),
    ("get", "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/export"),
    ("get", "/v3/copilot/llm-config/models"),
    ("get", "/v3/copilot/projects/{project_id}/intent"),
    ("put", "/v3/copilot/projects/{project_id}/intent"),
    ("post", "/v3/copilot/projects/{project_id}/intent/run"),
    ("get", "/v3/copilot/projects/{project_id}/drills/catalog"),
    ("post", "/v3/copilot/projects/{project_id}/drills"),
    ("get", "/v3/copilot/projects/{project_id}/drills/active"),
    ("post", "/v3/copilot/projects/{project_id}/drills/{drill_id}/hints"),
    ("post", "/v3/copilot/projects/{project_id}/drills/{drill_id}/grade"),
    ("post", "/v3/copilot/projects/{project_id}/drills/{drill_id}/end"),
    ("get", "/v3/copilot/projects/{project_id}/drills/history"),
    ("get", "/v3/copilot/projects/{project_id}/drills/best-scores"),
    ("post", "/v3/copilot/projects/{project_id}/labs/plan"),
    ("get", "/v3/copilot/projects/{project_id}/labs/current"),
    ("post", "/v3/copilot/projects/{project_id}/labs/build"),
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
    assert schema["components"]["schemas"]["ErrorBody"]["required"] == ["detail", "code"]


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


async def _document(service: Service) -> dict[str, Any]:
    async with service.client(token=None) as client:
        response = await client.get("/schema/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


async def test_request_bodies_are_described_as_validation_enforces_them(service: Service) -> None:
    schemas = (await _document(service))["components"]["schemas"]
    for name in (
        "ChatRequest",
        "RenameRequest",
        "DecisionRequest",
        "LLMConfigBody",
        "LoginRequest",
        "RenderRequest",
    ):
        assert schemas[name]["additionalProperties"] is False, name
    chat = schemas["ChatRequest"]["properties"]
    assert chat["message"]["maxLength"] == 1000  # this deployment's limit (ChatSettings)
    assert chat["max_tokens"]["anyOf"][0]["exclusiveMinimum"] == 0
    assert chat["session_id"]["anyOf"][0]["pattern"].startswith("^(?:[0-9A-Fa-f]{8}-")
    for operations in (await _document(service))["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["name"] == "limit":  # this deployment's page size
                    assert parameter["schema"]["maximum"] == service.chat.settings.max_page
    config = schemas["LLMConfigBody"]["properties"]
    assert config["max_tokens"]["anyOf"][0]["exclusiveMinimum"] == 0
    assert config["base_url"]["anyOf"][0]["pattern"].startswith("^https?://")
    assert config["temperature"]["anyOf"][0] == {"type": "number", "minimum": 0.0, "maximum": 2.0}
    assert config["api_key"]["anyOf"][0]["writeOnly"] is True


async def test_every_error_response_has_the_one_error_schema(service: Service) -> None:
    document = await _document(service)
    body_errors = {"400", "413", "415", "422"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            for status, response in responses.items():
                if int(status) < 400 or (path, status) == ("/readyz", "503"):
                    continue
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status)
            if "requestBody" in operation:
                assert body_errors <= set(responses), (method, path)
            elif "400" in responses:  # only where a 400 can happen without a body
                assert operation["operationId"] == "testLlmConfig", (method, path)
            if operation.get("parameters"):
                assert "422" in responses, (method, path)
            if path.startswith("/v3/copilot"):
                assert "503" in responses, (method, path)
    readiness = document["paths"]["/readyz"]["get"]["responses"]["503"]
    assert readiness["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Readiness"
    }


async def test_options_and_405_list_every_method_of_the_path(service: Service) -> None:
    document = await _document(service)
    async with service.client() as client:
        for template, operations in document["paths"].items():
            path = template.replace("{project_id}", OPEN).replace("{session_id}", OPEN)
            documented = {method.upper() for method in operations} | {"OPTIONS"}
            options = await client.options(path)
            assert options.status_code == 204, path
            assert set(options.headers["allow"].split(", ")) == documented, path
            refused = await client.request("TRACE", path)
            assert refused.status_code == 405, path
            assert set(refused.headers["allow"].split(", ")) == documented, path
            assert refused.json() == {"detail": "Method Not Allowed", "code": "method_not_allowed"}


async def test_every_success_response_has_a_typed_schema(service: Service) -> None:
    document = await _document(service)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                content = response["content"]
                assert content, (method, path, status)
                for media_type, body in content.items():
                    schema = body["schema"]
                    if media_type == "application/json":
                        typed = schema.get("$ref") or schema.get("items", {}).get("$ref")
                        assert typed, (method, path, status, schema)
                    else:
                        assert schema, (method, path, status, media_type)
    stream = document["paths"]["/v3/copilot/projects/{project_id}/chat/stream"]["post"]
    reply = stream["responses"]["200"]
    assert set(reply["content"]) == {"application/json", "text/event-stream"}
    assert reply["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/TurnReply"
    }
    assert set(reply["headers"]) == {"X-Session-Id", "X-Turn-Id"}
    assert "getChatHistory" in reply["links"]

"""Bodies are JSON declared as JSON (415 otherwise), and their values have the declared
JSON types: nothing is coerced (a string is not a bool or a number; 422)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.web.testing import StaticGns3Directory
from tests.api.conftest import ALICE, OPEN, Service, run_service

#: Every route that takes a body, with a body it accepts.
BODY_ROUTES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v3/copilot/projects/{project}/chat/stream", {"message": "hi", "stream": False}),
    ("PATCH", "/v3/copilot/projects/{project}/chat/sessions/{session}", {"title": "Lab"}),
    (
        "POST",
        "/v3/copilot/projects/{project}/chat/sessions/{session}/approvals/{approval_id}",
        {"decision": "approve"},
    ),
    ("PUT", "/v3/copilot/llm-config", {"provider": "openai", "model": "m"}),
    ("POST", "/v3/copilot/auth/login", {"username": "admin", "password": "pw"}),
    ("POST", "/v3/copilot/projects", {"name": "lab"}),
    ("PUT", "/v3/copilot/projects/{project}/intent", {"checks": []}),
    ("POST", "/v3/copilot/projects/{project}/drills", {"topic": "ospf"}),
    ("POST", "/v3/copilot/projects/{project}/labs/plan", {"lab_intent": {"routers": ["R1"]}}),
    (
        "POST",
        "/v3/copilot/projects/{project}/labs/build",
        {"plan": {"nodes": []}, "digest": "sha256:0", "session_id": "s-1"},
    ),
    ("POST", "/v3/copilot/render", {"markdown": "**hi**"}),
    (
        "POST",
        "/v3/copilot/render/tools",
        {"items": [{"tool_name": "show", "output": "{}", "status": "success"}]},
    ),
]

UNSUPPORTED = [
    pytest.param({"Content-Type": "text/plain"}, id="text-plain"),
    pytest.param({"Content-Type": "application/x-www-form-urlencoded"}, id="form"),
    pytest.param({}, id="missing"),
    pytest.param({"Content-Type": "application/json; charset=latin-1"}, id="not-utf-8"),
    pytest.param({"Content-Type": "application/jsonx"}, id="lookalike"),
]


async def test_every_route_with_a_body_is_listed_here(service: Service) -> None:
    async with service.client(token=None) as client:
        schema = (await client.get("/schema/openapi.json")).json()
    with_body = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "requestBody" in operation
    }
    listed = {
        (method, path.replace("{project}", "{project_id}").replace("{session}", "{session_id}"))
        for method, path, _ in BODY_ROUTES
    }
    assert with_body == listed


@pytest.mark.parametrize("headers", UNSUPPORTED)
@pytest.mark.parametrize(("method", "path", "body"), BODY_ROUTES)
async def test_a_body_not_declared_as_json_is_415_and_changes_nothing(
    service: Service, method: str, path: str, body: dict[str, Any], headers: dict[str, str]
) -> None:
    url = path.format(
        project=OPEN, session="00000000-0000-4000-8000-000000000001", approval_id="a-1"
    )
    async with service.client() as client:
        response = await client.request(method, url, content=json.dumps(body), headers=headers)
    assert response.status_code == 415, response.text
    assert response.json()["detail"].startswith(
        "Send the body as JSON, with 'Content-Type: application/json'"
    )
    assert await service.store.list_sessions(OPEN, "u-alice") == []
    assert service.llm_config.settings == {}
    assert service.model.calls == []


async def test_json_with_a_charset_or_in_capitals_is_accepted(service: Service) -> None:
    async with service.client() as client:
        for content_type in ("application/json; charset=utf-8", "Application/JSON"):
            response = await client.put(
                "/v3/copilot/llm-config",
                content=json.dumps({"provider": "openai", "model": "m"}),
                headers={"Content-Type": content_type},
            )
            assert response.status_code == 200, (content_type, response.text)


async def test_unauthenticated_requests_are_401_whatever_their_content_type(
    service: Service,
) -> None:
    async with service.client(token=None) as client:
        response = await client.put("/v3/copilot/llm-config", content=b"x")
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": "hi", "stream": "yes"}, "stream"),
        ({"message": "hi", "stream": "true"}, "stream"),
        ({"message": "hi", "stream": 1}, "stream"),
        ({"message": "hi", "temperature": "1"}, "temperature"),
        ({"message": "hi", "temperature": True}, "temperature"),
        ({"message": "hi", "max_tokens": "5"}, "max_tokens"),
        ({"message": "hi", "max_tokens": 5.5}, "max_tokens"),
        ({"message": "hi", "max_tokens": True}, "max_tokens"),
        ({"message": 42}, "message"),
        ({"message": "hi", "session_id": 7}, "session_id"),
        ({"message": "hi", "copilot_mode": 1}, "copilot_mode"),
    ],
)
async def test_a_stream_body_value_of_the_wrong_type_is_422(
    service: Service, body: dict[str, Any], field: str
) -> None:
    async with service.client() as client:
        response = await client.post(service.chat_url() + "/stream", json=body)
    assert response.status_code == 422, response.text
    assert field in response.json()["detail"]
    assert await service.store.list_sessions(OPEN, "u-alice") == []
    assert service.model.calls == []


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("PUT", "/v3/copilot/llm-config", {"provider": "x", "model": "m", "temperature": "1"},
         "temperature"),
        ("PUT", "/v3/copilot/llm-config", {"provider": "x", "model": 3}, "model"),
        ("PUT", "/v3/copilot/llm-config", {"provider": "x", "model": "m", "max_tokens": "9"},
         "max_tokens"),
        ("POST", "/v3/copilot/render", {"markdown": 1}, "markdown"),
        ("POST", "/v3/copilot/auth/login", {"username": 1, "password": "p"}, "username"),
    ],
)  # fmt: skip
async def test_other_bodies_refuse_wrong_types_too(
    method: str, path: str, body: dict[str, Any], field: str
) -> None:
    async with (
        run_service(directory=StaticGns3Directory({"admin": ("pw", ALICE)})) as service,
        service.client() as client,
    ):
        response = await client.request(method, path, json=body)
    assert response.status_code == 422, response.text
    assert field in response.json()["detail"]
    assert service.llm_config.settings == {}


async def test_enum_and_number_fields_take_their_json_types(service: Service) -> None:
    async with service.client() as client:
        stored = await client.put(
            "/v3/copilot/llm-config",
            json={
                "provider": "openai",
                "model": "m",
                "temperature": 1,
                "max_tokens": 64.0,  # JSON Schema's integer: no fraction
                "copilot_mode": "lab_automation_assistant",
            },
        )
    assert stored.status_code == 200, stored.text
    assert stored.json()["temperature"] == 1.0
    assert stored.json()["max_tokens"] == 64
    assert stored.json()["copilot_mode"] == "lab_automation_assistant"

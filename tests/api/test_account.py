"""Capabilities, agents, the caller's LLM settings and the skills reload."""

from __future__ import annotations

from copilot_core.errors import LLMAuthenticationError, LLMRateLimitedError
from copilot_core.testing import Hang, text_reply
from tests.api.conftest import ADMIN, BOB, Service, run_service

SETTINGS = {
    "provider": "openai",
    "model": "gpt-4o-mini",
    "base_url": "http://127.0.0.1:9/v1",
    "api_key": "sk-very-secret-value",
    "temperature": 0.3,
    "max_tokens": 2048,
    "context_limit": 64000,
    "title_model": "gpt-4o-mini",
    "copilot_mode": "lab_automation_assistant",
    "approval": "never",
}


async def test_capabilities_and_agents_describe_the_builtin_agent(service: Service) -> None:
    async with service.client() as client:
        capabilities = await client.get("/v3/copilot/capabilities")
        agents = await client.get("/v3/copilot/agents")
    assert capabilities.status_code == 200
    caps = capabilities.json()
    assert caps["backend"] == "python"
    assert caps["streaming"] is True
    assert {"rag", "mcp", "file_tools", "shell_tools"} <= caps.keys()
    assert [a["id"] for a in caps["agents"]] == ["copilot"]
    body = agents.json()
    assert body["default"] == "copilot"
    assert body["agents"][0]["name"] == "GNS3 Copilot"
    assert body["agents"][0]["uses_llm_settings"] is True


async def test_llm_config_round_trip_never_returns_the_key(service: Service) -> None:
    async with service.client() as client:
        empty = await client.get("/v3/copilot/llm-config")
        stored = await client.put("/v3/copilot/llm-config", json=SETTINGS)
        read = await client.get("/v3/copilot/llm-config")
        other = await client.get(
            "/v3/copilot/llm-config", headers={"Authorization": f"Bearer {BOB}"}
        )
    assert empty.status_code == 404
    assert "choose a provider and a model" in empty.json()["detail"]
    assert "/v3/" not in empty.json()["detail"]  # shown to people: no API route
    assert stored.status_code == 200
    for response in (stored, read):
        body = response.json()
        assert "api_key" not in body
        assert body["api_key_set"] is True
        assert body["model"] == "gpt-4o-mini"
        assert body["copilot_mode"] == "lab_automation_assistant"
        assert body["approval"] == "never"
        assert "sk-very-secret-value" not in response.text
    assert service.llm_config.keys["u-alice"] == "sk-very-secret-value"
    assert other.status_code == 404


async def test_llm_config_without_a_key_keeps_none_set(service: Service) -> None:
    async with service.client() as client:
        stored = await client.put(
            "/v3/copilot/llm-config",
            json={
                "provider": "ollama",
                "model": "llama3.1",
                "base_url": "http://127.0.0.1:11434/v1",
            },
        )
    assert stored.status_code == 200
    assert stored.json()["api_key_set"] is False
    assert "api_key" not in service.llm_config.settings["u-alice"]


async def test_bad_llm_config_is_422_and_changes_nothing(service: Service) -> None:
    async with service.client() as client:
        for body in [
            {"model": "m"},
            {"provider": "openai", "model": ""},
            {"provider": "openai", "model": "m", "temperature": 9},
            {"provider": "openai", "model": "m", "base_url": "ftp://x"},
            {"provider": "openai", "model": "m", "colour": "blue"},
        ]:
            response = await client.put("/v3/copilot/llm-config", json=body)
            assert response.status_code == 422, body
            assert response.json()["detail"].startswith("Invalid request")
    assert service.llm_config.settings == {}


async def test_the_schema_lists_every_provider_the_service_accepts_and_no_other(
    service: Service,
) -> None:
    """``provider`` is an enum in the OpenAPI document, equal to the LLM adapter's list: a
    name the schema allows is stored, one it does not is a 422 that lists them (it was a
    free string that the service then refused: Schemathesis found the 422, issue 29)."""
    from adapters.llm import NATIVE_PROVIDERS, OPENAI_COMPATIBLE_PROVIDERS

    async with service.client() as client:
        document = (await client.get("/schema/openapi.json")).json()
        schema = document["components"]["schemas"]["LLMConfigBody"]["properties"]["provider"]
        if "$ref" in schema:
            schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        listed = schema["enum"]
        assert sorted(listed) == sorted([*OPENAI_COMPATIBLE_PROVIDERS, *NATIVE_PROVIDERS])
        for provider in listed:
            body = {"provider": provider, "model": "m", "base_url": "http://127.0.0.1:9/v1"}
            stored = await client.put("/v3/copilot/llm-config", json=body)
            assert stored.status_code == 200, (provider, stored.text)
        refused = await client.put(
            "/v3/copilot/llm-config", json={"provider": "oracle", "model": "m"}
        )
    assert refused.status_code == 422
    assert "openai_compatible" in refused.json()["detail"]
    assert service.llm_config.settings["u-alice"]["provider"] == listed[-1]


async def test_delete_llm_config(service: Service) -> None:
    async with service.client() as client:
        await client.put("/v3/copilot/llm-config", json=SETTINGS)
        deleted = await client.delete("/v3/copilot/llm-config")
        again = await client.delete("/v3/copilot/llm-config")
        read = await client.get("/v3/copilot/llm-config")
    assert deleted.status_code == again.status_code == 204
    assert read.status_code == 404
    assert service.llm_config.keys == {}


async def test_reload_skills_is_for_superadmins_only(service: Service) -> None:
    async with service.client() as client, service.client(token=ADMIN) as admin:
        refused = await client.post("/v3/copilot/reload/skills")
        done = await admin.post("/v3/copilot/reload/skills")
    assert refused.status_code == 403
    assert "superadmin" in refused.json()["detail"]
    assert done.status_code == 200
    assert done.json() == {
        "status": "ok",
        "skills": 3,
        "forbidden_commands": 12,
        "problems": [],
        "prompts": ["common"],
    }
    assert service.reloads == [1]


async def test_llm_config_test_asks_the_model_once(service: Service) -> None:
    service.model.add(text_reply("pong"))
    async with service.client() as client:
        response = await client.post("/v3/copilot/llm-config/test")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["reply"] == "pong"
    assert body["latency_ms"] >= 0
    assert service.model.calls[0].options.max_tokens == 8
    assert await service.store.list_sessions("project-open", "u-alice") == []


async def test_llm_config_test_reports_the_providers_reason(service: Service) -> None:
    service.model.add([LLMAuthenticationError("The provider rejected the API key.")])
    async with service.client() as client:
        rejected = await client.post("/v3/copilot/llm-config/test")
    assert rejected.status_code == 502
    assert rejected.json()["detail"] == "The provider rejected the API key."


async def test_llm_config_test_is_bounded_in_time(service: Service) -> None:
    service.model.add([Hang()])
    async with service.client() as client:
        silent = await client.post("/v3/copilot/llm-config/test")
    assert silent.status_code == 502
    assert "did not answer within" in silent.json()["detail"]
    assert service.model.closed_early == 1


async def test_llm_config_test_without_settings_is_a_409_that_says_how() -> None:
    # A request the schema says is valid: the state (no settings yet) is what is missing.
    async with run_service(configured=False) as service, service.client() as client:
        response = await client.post("/v3/copilot/llm-config/test")
    assert response.status_code == 409
    assert response.json()["code"] == "llm_not_configured"
    assert "PUT /v3/copilot/llm-config" in response.json()["detail"]


async def test_every_status_the_llm_test_answers_is_in_the_openapi_document() -> None:
    # Schemathesis found an undocumented 400 here (issue 29, item 4): no LLM configured;
    # then a 400 for a valid request (issue 36): it is a 409 now.
    answered: set[int] = set()
    async with run_service(configured=False) as service, service.client() as client:
        answered.add((await client.post("/v3/copilot/llm-config/test")).status_code)
    async with run_service() as service, service.client() as client:
        service.model.add(
            text_reply("pong"),
            [LLMAuthenticationError("The provider rejected the API key.")],
            [LLMRateLimitedError("Slow down.", retry_after=3)],
        )
        for _ in range(3):
            answered.add((await client.post("/v3/copilot/llm-config/test")).status_code)
        document = (await client.get("/schema/openapi.json")).json()
    assert answered == {200, 409, 429, 502}
    responses = document["paths"]["/v3/copilot/llm-config/test"]["post"]["responses"]
    assert answered <= {int(status) for status in responses}, sorted(responses)
    assert responses["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }


async def test_collaborators_a_deployment_lacks_are_501_that_say_so() -> None:
    async with (
        run_service(with_models=False, with_skills=False) as service,
        service.client(token=ADMIN) as client,
    ):
        tested = await client.post("/v3/copilot/llm-config/test")
        reloaded = await client.post("/v3/copilot/reload/skills")
        projects = await client.get("/v3/copilot/projects")
        login = await client.post(
            "/v3/copilot/auth/login", json={"username": "admin", "password": "pw"}
        )
    assert tested.status_code == 501
    assert tested.json()["detail"] == "Testing LLM settings is not available in this deployment."
    assert reloaded.status_code == 501
    assert reloaded.json()["detail"] == "Reloading skills is not available in this deployment."
    for response in (projects, login):
        assert response.status_code == 501
        assert response.json()["detail"] == (
            "Signing in through the copilot is not available in this deployment."
        )

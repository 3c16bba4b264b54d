"""What the MCP endpoint is given is one provider of the service's container
(``container.mcp_dependencies``), built from the same objects the web API gets: one
cache of GNS3's answers to tokens behind both, the web's project gate, the agent's gate,
its prompts and the user's saved approval setting."""

from __future__ import annotations

from pathlib import Path

from dependency_injector import providers
from litestar.testing import AsyncTestClient

from adapters.web import CachingAuthenticator, create_web_app
from adapters.web.testing import StaticAuthenticator
from copilot_core.ports import ApprovalPolicy, Principal
from entrypoints.container import build_container, resolve
from entrypoints.settings import Settings


async def test_the_mcp_endpoint_and_the_web_api_share_one_authenticator(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, gns3={"url": "http://127.0.0.1:9"})
    container = build_container(settings)
    gns3 = StaticAuthenticator({"tok": Principal("u1", "alice")})
    container.gateways.authenticator.override(providers.Object(gns3))
    await container.init_resources()  # type: ignore[misc]
    try:
        web = await resolve(container.web.collaborators())
        mcp = await resolve(container.mcp_dependencies())
        assert isinstance(mcp.authenticator, CachingAuthenticator)
        assert mcp.authenticator is web.authenticator
        app = create_web_app(web, settings=container.web.settings())
        async with AsyncTestClient(app) as client:
            answered = await client.get(
                "/v3/copilot/capabilities", headers={"Authorization": "Bearer tok"}
            )
        assert answered.status_code == 200, answered.text
        assert gns3.calls == 1  # the web API asked GNS3 once
        assert (await mcp.authenticator.authenticate("tok")).user_id == "u1"
        assert gns3.calls == 1  # and the MCP endpoint found the answer in the same cache
        assert mcp.tools is await resolve(container.core.gate())
        assert mcp.projects is web.projects
        assert mcp.prompts() is (await resolve(container.core.agent())).prompts
        assert await mcp.approval("u1") is ApprovalPolicy.CHANGES  # nothing saved yet
        assert await resolve(container.mcp_dependencies()) is mcp
    finally:
        await container.shutdown_resources()  # type: ignore[misc]

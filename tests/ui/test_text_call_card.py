"""The approval card of a call read from the model's text (issue 35, item 3): under
approval ``never`` such a change still asks, and the card says where the call came from."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.fakes.copilot_service import ServedCopilot as Service
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer
from tests.ui.conftest import API_KEY, Lab, choose_project, sign_in

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]


@pytest.fixture
def text_calls_never_asked(
    service: Service, configured: Lab, llm: ScriptedOpenAIServer
) -> Iterator[Lab]:
    """The admin's settings: text calls read, approval ``never``; put back afterwards."""
    settings = {"provider": "openai", "model": "gpt-ui", "base_url": llm.base_url}
    with service.api(configured.token) as api:
        put = {**settings, "api_key": API_KEY, "approval": "never", "text_tool_calls": True}
        assert api.put("/llm-config", json=put).status_code == 200
        try:
            yield configured
        finally:
            assert api.put("/llm-config", json={**settings, "api_key": API_KEY}).status_code == 200


def test_a_change_written_in_the_models_text_asks_and_the_card_says_so(
    page: Page, text_calls_never_asked: Lab, llm: ScriptedOpenAIServer
) -> None:
    create = {"nodes": [{"template_name": "VPCS", "name": "FromText9"}]}
    call = json.dumps({"name": "create_gns3_node", "arguments": create})
    llm.clear()
    llm.add(
        Reply(text=f"I will add it.\n<tool_call>{call}</tool_call>"),
        Reply(text="Understood, nothing was created."),
        Reply(text="Text call"),
    )
    sign_in(page)
    choose_project(page, text_calls_never_asked.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill("Add a PC named FromText9")
    page.get_by_label("Message", exact=True).press("Enter")
    card = page.get_by_role("region", name="Approval for create_gns3_node")
    expect(card).to_have_attribute("data-from-text", "true")
    expect(card.locator(".approval-from-text")).to_contain_text(
        "Read from the model's text, not a tool call it made"
    )
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".approval-outcome")).to_contain_text("Rejected by you")
    expect(page.locator(".message.assistant").last).to_contain_text("nothing was created")

"""Each chat shows its mode and the user changes it for the next messages (issue 29, item 2):
the turns after the change run in the new mode (the tools the model is offered say so), the
history shows where it changed, after a reload too; the operator's policy bounds the choice
(the page offers only what ``GET /policy`` allows, as the service refuses the rest)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Route, expect

from tests.fakes.openai_server import Reply, ScriptedOpenAIServer
from tests.ui.conftest import Lab, choose_project, sign_in

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]

# Offered in lab automation mode only, and in its everyday (compact, the default) set.
AUTOMATION_ONLY_TOOL = "execute_multiple_device_config_commands"


def ask(page: Page, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible(timeout=15_000)
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)


def offered(llm: ScriptedOpenAIServer) -> set[str]:
    """The tools of the model's latest call that had tools (not the title's)."""
    calls = [r for r in llm.requests if r.tools]
    return {tool["function"]["name"] for tool in calls[-1].tools}


def test_a_chat_switched_to_lab_automation_runs_in_it_from_the_next_message(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Reply(text="First."), Reply(text="Mode chat"), Reply(text="Second."), Reply("Third."))
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    switch = page.get_by_label("Chat mode")
    switch.select_option("teaching_assistant")
    ask(page, "one")
    assert AUTOMATION_ONLY_TOOL not in offered(llm)
    expect(switch).to_have_value("teaching_assistant")  # the session's mode
    expect(page.locator("#mode-note")).to_be_hidden()

    switch.select_option("lab_automation_assistant")
    expect(page.locator("#mode-note")).to_have_text("Lab automation from your next message")
    ask(page, "two")
    assert AUTOMATION_ONLY_TOOL in offered(llm)
    expect(page.locator("#mode-note")).to_be_hidden()
    divider = page.locator(".mode-change")
    expect(divider).to_have_count(1)
    expect(divider).to_have_text("Mode changed to Lab automation")
    # The divider stands right before the question it applied to.
    following = divider.evaluate("node => node.nextElementSibling.textContent")
    assert following == "two", following

    page.reload()
    expect(page.get_by_label("Chat mode")).to_have_value("lab_automation_assistant")
    expect(page.locator(".mode-change")).to_have_text("Mode changed to Lab automation")
    ask(page, "three")  # no switch: the chat's mode
    assert AUTOMATION_ONLY_TOOL in offered(llm)
    expect(page.locator(".mode-change")).to_have_count(1)


def test_a_user_the_policy_keeps_in_teaching_mode_is_offered_only_that(
    page: Page, configured: Lab
) -> None:
    # The policy as the service would answer it for a student (the service's own refusal
    # of a higher mode is tested over HTTP in tests/api/test_chat_mode.py).
    def student(route: Route) -> None:
        route.fulfill(
            json={
                "max_mode": "teaching_assistant",
                "modes": ["teaching_assistant"],
                "min_approval": "changes",
                "approvals": ["changes", "all"],
                "llm_endpoints": None,
                "deny_private_llm_endpoints": False,
            }
        )

    page.route("**/v3/copilot/policy", student)
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    switch = page.get_by_label("Chat mode")
    expect(switch).to_have_value("teaching_assistant")
    expect(switch).to_be_disabled()
    hidden = switch.locator("option[value='lab_automation_assistant']")
    expect(hidden).to_be_disabled()

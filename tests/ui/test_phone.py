"""The page at phone width, 390×844 (issue 29, item 8): the project's name is not cut, the
message box's placeholder fits, the lab drawing leaves the conversation most of the screen,
and an approval that arrives below the fold is scrolled to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.ui.conftest import Lab, Service, choose_project, screenshot, sign_in

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]

PHONE = {"width": 390, "height": 844}

#: Whether the text an element shows fits in it: a select's chosen option, or a textarea's
#: placeholder, measured in the element's own font.
FITS = """(element) => {
  const style = getComputedStyle(element);
  const context = document.createElement("canvas").getContext("2d");
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const text = element.tagName === "SELECT"
    ? element.options[element.selectedIndex].text : element.placeholder;
  const room = element.clientWidth - parseFloat(style.paddingLeft)
    - parseFloat(style.paddingRight) - (element.tagName === "SELECT" ? 20 : 0);
  return {text, width: Math.ceil(context.measureText(text).width), room: Math.floor(room)};
}"""


@pytest.fixture
def phone(browser: Browser, service: Service) -> Iterator[Page]:
    context = browser.new_context(
        base_url=service.url, viewport=PHONE, service_workers="block", has_touch=True
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def new_chat(phone: Page) -> None:
    phone.get_by_role("button", name="Show sessions").click()
    phone.get_by_role("button", name="+ New chat").click()
    expect(phone.locator(".empty-chat")).to_be_visible()


def test_the_project_name_the_placeholder_and_the_lab_fit_a_phone(
    phone: Page, configured: Lab
) -> None:
    sign_in(phone)
    choose_project(phone, configured.opened)
    new_chat(phone)
    screenshot(phone, "phone-empty-chat")
    project = phone.evaluate(FITS, phone.get_by_label("GNS3 project").element_handle())
    assert project["text"].startswith(configured.opened_name), project
    assert project["width"] <= project["room"], project
    placeholder = phone.evaluate(FITS, phone.get_by_label("Message", exact=True).element_handle())
    assert placeholder["width"] <= placeholder["room"], placeholder
    lab = phone.locator("#lab").bounding_box()
    assert lab is not None and lab["height"] <= PHONE["height"] * 0.25, lab


def test_an_approval_below_the_fold_is_scrolled_to(
    phone: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    create = {"nodes": [{"template_name": "VPCS", "name": "PhonePC", "x": 0, "y": 150}]}
    llm.add(
        Reply(text="Here is a long explanation first. " * 60, chunk=40),
        Reply(text="Phone chat"),
        Reply(tool_calls=[ToolCallScript("create_gns3_node", create)]),
        Reply(text="Not created."),
    )
    sign_in(phone)
    choose_project(phone, configured.opened)
    new_chat(phone)
    phone.get_by_label("Agent", exact=True).select_option("copilot")
    phone.get_by_label("Message", exact=True).fill("Explain the lab at length")
    phone.get_by_label("Message", exact=True).press("Enter")
    expect(phone.locator("#messages[data-state='saved']")).to_have_count(1, timeout=15_000)
    # Read the long answer from its top: the next reply's approval arrives below the fold.
    phone.locator(".message.assistant").first.scroll_into_view_if_needed()
    phone.locator("#messages").evaluate("pane => { pane.scrollTop = 0; }")
    phone.get_by_label("Message", exact=True).fill("Add a PC named PhonePC")
    phone.get_by_label("Message", exact=True).press("Enter")
    card = phone.get_by_role("region", name="Approval for create_gns3_node")
    approve = card.get_by_role("button", name="Approve")
    expect(approve).to_be_visible()
    expect(approve).to_be_in_viewport()
    screenshot(phone, "phone-approval")
    card.get_by_role("button", name="Reject").click()
    expect(phone.locator(".tool-card .tool-status").last).to_have_text("rejected")

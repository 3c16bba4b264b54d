"""Every tool card is titled by its call in plain words (issue 29, item 7: read-only calls
were titled by the tool's name): the service's title from the tool and the call's
arguments, the tool's name in small print; the same after a reload. At desktop
(1366×860) and phone (390×844) width, against the real product and a real GNS3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.ui.conftest import Lab, Service, choose_project, screenshot, sign_in

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]

WIDTHS = {"desktop": {"width": 1366, "height": 860}, "phone": {"width": 390, "height": 844}}

CHECKS = [
    {"kind": "reachability", "from": "PC1", "to": "PC2"},
    {"kind": "reachability", "from": "PC2", "to": "PC1"},
    {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2"},
]
#: The read-only calls of one answer, and the title each card must show.
CALLS = [
    ("gns3_topology_reader", {}, "Read the lab's topology"),
    ("get_gns3_templates", {}, "List the node templates"),
    (
        "execute_multiple_device_commands",
        {"device_configs": [{"device_name": "R1",
                             "commands": ["show ip route", "show ip ospf neighbor"]}]},
        "Run 2 show commands on R1",
    ),
    ("verify_intent", {"checks": CHECKS, "wait_s": 0}, "Verify 3 checks"),
    ("device_skills", {"action": "list"}, "List the guides"),
]  # fmt: skip


@pytest.fixture(params=sorted(WIDTHS))
def sized(request: pytest.FixtureRequest, browser: Browser, service: Service) -> Iterator[Page]:
    context = browser.new_context(
        base_url=service.url,
        viewport=WIDTHS[request.param],
        service_workers="block",
        has_touch=request.param == "phone",
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


def expect_titled_cards(page: Page) -> None:
    cards = page.locator(".message.assistant").last.locator(".tool-card")
    expect(cards).to_have_count(len(CALLS))
    width = page.viewport_size["width"] if page.viewport_size else 0
    for n, (tool, _, title) in enumerate(CALLS):
        card = cards.nth(n)
        expect(card.locator(".tool-title")).to_have_text(title)
        expect(card.locator(".tool-title")).to_be_visible()
        name = card.locator(".tool-name")
        expect(name).to_have_text(tool)
        expect(name).to_have_class("tool-name small-print")
        box = card.locator(".tool-title").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


def test_read_only_tool_cards_are_titled_in_words_and_keep_their_titles_after_a_reload(
    sized: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript(tool, arguments) for tool, arguments, _ in CALLS]),
        Reply(text="I read the lab."),
        Reply(text="Reading"),
    )
    page = sized
    phone = (page.viewport_size or {}).get("width", 0) < 600
    sign_in(page)
    choose_project(page, configured.opened)
    if phone:
        page.get_by_role("button", name="Show sessions").click()
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill("Read my lab")
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.locator(".message.assistant").last).to_contain_text("I read the lab.")
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    expect_titled_cards(page)
    screenshot(page, f"tool-titles-{'phone' if phone else 'desktop'}")

    page.reload()  # the history keeps each call's title (metadata.title)
    expect(page.locator(".message.assistant").last).to_contain_text("I read the lab.")
    expect_titled_cards(page)

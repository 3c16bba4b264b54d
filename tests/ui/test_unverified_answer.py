"""No device output without a device, on the page (issue 40, case 4): an answer that
states a ping no tool ran is followed by a note that the copilot was asked to run the
tool; an answer that invents it again is marked "Unverified", live and after a reload
(the mark is the stored message's ``metadata.unverified``)."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import Page, expect

from tests.fakes.openai_server import Reply, ScriptedOpenAIServer
from tests.ui.conftest import Lab, choose_project, screenshot, sign_in

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]

INVENTED = (
    "Let me ping PC2 from PC1:\n\n```\nPC1> ping 10.0.0.2\n"
    "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.512 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=2 ttl=64 time=0.401 ms\n```\n\n"
    "PC1 can ping PC2 successfully."
)
AGAIN = "Yes, PC1 can ping PC2 successfully."


def test_an_answer_stating_a_ping_no_tool_ran_is_marked_unverified_live_and_after_a_reload(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    # The second answer waits until the page has shown the note on the first: once the
    # turn is done, the page shows the saved history, where the first reply is not.
    noted = threading.Event()
    llm.add(
        Reply(text=INVENTED),
        Reply(text=AGAIN, first_token_held=noted, keepalive=1.0),
        Reply(text="Ping check"),
    )
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_label("Message", exact=True).fill("can PC1 ping PC2?")
    page.get_by_role("button", name="Send").click()
    answer = page.locator(".message.assistant").last
    try:
        expect(answer.locator(".unseen-note")).to_contain_text("asked to run the tool")
    finally:
        noted.set()
    mark = answer.locator(".unverified-mark")
    expect(mark).to_contain_text("Unverified")
    expect(mark.locator(".unverified-claims li")).to_have_text([AGAIN])
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    screenshot(page, "unverified-answer")

    page.reload()
    expect(page.locator(".message.user").last).to_have_text("can PC1 ping PC2?")
    saved = page.locator(".message.assistant").last
    expect(saved.locator(".text-block")).to_have_text(AGAIN)
    expect(saved.locator(".unverified-mark")).to_contain_text("Unverified")
    expect(saved.locator(".unverified-claims li")).to_have_text([AGAIN])
    # The first, invented reply was not the answer: it is not in the saved history.
    expect(page.locator(".unseen-note")).to_have_count(0)
    expect(page.get_by_text("84 bytes from 10.0.0.2 icmp_seq=1")).to_have_count(0)

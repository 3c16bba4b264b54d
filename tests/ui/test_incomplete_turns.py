"""A turn that ends in an error or is stopped stays on the page (issue 29, item 1): its error
and an "Incomplete" mark are saved with it, shown after the page redraws the saved history
and after a reload, with Retry, which sends the question again in place of the failed turn."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.fakes.openai_server import Failure, Reply, ScriptedOpenAIServer
from tests.ui.conftest import Lab, choose_project, screenshot, sign_in

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]


def ask(page: Page, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_label("Message", exact=True).press("Enter")
    # The turn is over and the page shows the saved history (redrawn).
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)


def test_a_refused_turn_keeps_its_error_after_a_reload_and_retry_answers_it(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Failure.rate_limited(retry_after=30))
    sign_in(page)
    choose_project(page, configured.opened)
    ask(page, "Why does R1 not answer?")

    failed = page.locator(".message.assistant.incomplete")
    expect(failed).to_have_count(1)
    box = failed.locator(".incomplete-box")
    expect(box.locator(".incomplete-mark")).to_have_text("Incomplete")
    expect(box).to_have_attribute("role", "alert")
    expect(box).to_contain_text("Error")
    expect(box.get_by_role("button", name="Retry this question")).to_be_visible()
    error_text = box.locator(".error-text").inner_text()
    assert error_text, "the saved error says nothing"

    page.reload()
    expect(page.locator(".message.user").last).to_have_text("Why does R1 not answer?")
    after = page.locator(".message.assistant.incomplete .incomplete-box")
    expect(after).to_have_count(1)
    expect(after.locator(".error-text")).to_have_text(error_text)
    screenshot(page, "incomplete-turn")

    llm.add(Reply(text="R1 is stopped: start it."))
    after.get_by_role("button", name="Retry this question").click()
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    # The question once, answered; the failed turn is gone (from the page and the history).
    expect(page.locator(".message.user")).to_have_count(1)
    expect(page.locator(".message.user")).to_have_text("Why does R1 not answer?")
    expect(page.locator(".message.assistant")).to_have_count(1)
    expect(page.locator(".message.assistant")).to_contain_text("R1 is stopped: start it.")
    expect(page.locator(".incomplete-box")).to_have_count(0)
    page.reload()
    expect(page.locator(".message.assistant")).to_contain_text("R1 is stopped: start it.")
    expect(page.locator(".incomplete-box")).to_have_count(0)


def test_an_answer_cut_mid_reply_is_kept_with_an_incomplete_mark(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Reply(text="Your lab has two routers and one switch.", chunk=5, error_after=3))
    sign_in(page)
    choose_project(page, configured.opened)
    ask(page, "What is in my network?")
    answer = page.locator(".message.assistant").last
    expect(answer).to_have_class(re.compile(r"\bincomplete\b"))
    expect(answer.locator(".text-block")).to_contain_text("Your lab")
    kept = answer.locator(".text-block").inner_text()
    assert "one switch" not in kept, kept  # cut mid-reply
    expect(answer.locator(".incomplete-mark")).to_have_text("Incomplete")
    expect(answer.get_by_role("button", name="Retry this question")).to_be_visible()
    page.reload()
    answer = page.locator(".message.assistant").last
    expect(answer.locator(".text-block")).to_have_text(kept)
    expect(answer.locator(".incomplete-mark")).to_have_text("Incomplete")


def test_a_stopped_turn_says_so_after_a_reload_and_only_the_last_turn_offers_retry(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Reply(text="slow " * 300, chunk=5, token_delay=0.05))
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_label("Message", exact=True).fill("Tell me everything")
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.locator(".message.assistant").last).to_contain_text("slow")
    page.get_by_role("button", name="Stop", exact=True).click()
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    stopped = page.locator(".message.assistant.incomplete .stopped-box")
    expect(stopped).to_contain_text("Stopped. The partial answer was kept.")
    # Said once, not twice (the saved answer's own "aborted" note gives way to the mark).
    expect(page.locator(".notice-stopped")).to_have_count(1)

    llm.add(Reply(text="A short answer."), Reply(text="unused title"))
    ask(page, "Shorter, please")
    page.reload()
    expect(page.locator(".message.user")).to_have_count(2)
    expect(page.locator(".message.assistant.incomplete .stopped-box")).to_have_count(1)
    # Retry belongs to the last turn only: the stopped one is older now.
    expect(page.get_by_role("button", name="Retry this question")).to_have_count(0)

"""The page with a slow, small local model (issue 30): while the model reads its prompt the
answer says it is waiting, and the small-model settings are saved, shown again and kept.
Every wait is bounded (10 s by default)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.fakes.openai_server import Reply, ScriptedOpenAIServer
from tests.ui.conftest import Lab, Service, choose_project, screenshot, sign_in

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]


def test_while_a_slow_model_reads_its_prompt_the_answer_says_it_is_waiting(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Reply(text="Nothing yet.", first_token_delay=2.5, keepalive=0.5), Reply(text="Wait"))
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_label("Message", exact=True).fill("what is in my lab?")
    page.get_by_role("button", name="Send").click()
    waiting = page.locator(".message.assistant .typing.waiting")
    expect(waiting).to_contain_text(re.compile(r"waiting for the model: \d+ prompt tokens"))
    screenshot(page, "waiting-for-the-model")
    expect(page.locator(".message.assistant .text-block").last).to_contain_text("Nothing yet.")
    expect(waiting).to_have_count(0)
    # Waiting is not an error, and it leaves no trail behind.
    expect(page.locator(".message.assistant .error-box")).to_have_count(0)
    expect(page.locator(".message.assistant .trail-status")).to_have_count(0)


def test_the_small_model_settings_are_saved_shown_again_and_kept_by_a_later_save(
    page: Page, configured: Lab, service: Service, llm: ScriptedOpenAIServer
) -> None:
    sign_in(page)
    page.get_by_role("button", name="LLM settings").click()
    dialog = page.locator("#settings-dialog")
    expect(dialog.get_by_label("Model")).to_have_value("gpt-ui")
    dialog.get_by_text("Small and local models").click()
    dialog.get_by_label("Tool descriptions").select_option("compact")
    dialog.get_by_label("Tool calls written as text").select_option("true")
    dialog.get_by_label("First token within (s)").fill("600")
    dialog.get_by_label("Pause between tokens (s)").fill("90")
    dialog.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-result")).to_contain_text("Saved: openai / gpt-ui")
    with service.api(configured.token) as api:
        stored = api.get("/llm-config").json()
    assert (stored["tool_set"], stored["text_tool_calls"]) == ("compact", True)
    assert (stored["first_token_timeout"], stored["token_timeout"]) == (600, 90)
    assert stored["connect_timeout"] is None

    # Opened again, the form shows them; saving another change keeps them.
    dialog.get_by_role("button", name="Close").click()
    page.get_by_role("button", name="LLM settings").click()
    expect(dialog.get_by_label("Tool descriptions")).to_have_value("compact")
    expect(dialog.get_by_label("Tool calls written as text")).to_have_value("true")
    expect(dialog.get_by_label("First token within (s)")).to_have_value("600")
    dialog.get_by_label("Temperature").fill("0.5")
    dialog.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-result")).to_contain_text("Saved:")
    with service.api(configured.token) as api:
        stored = api.get("/llm-config").json()
        assert stored["temperature"] == 0.5 and stored["tool_set"] == "compact"
        assert stored["first_token_timeout"] == 600
        api.put(  # back to the scripted model for the other tests
            "/llm-config",
            json={"provider": "openai", "model": "gpt-ui", "base_url": llm.base_url},
        )

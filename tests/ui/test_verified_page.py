"""A verified change on the page (Debian Chromium, a real gns3-server): the approval card
lists the check that will decide the change and what happens when it fails; the tool card
shows that check's verdict before, after and after the rollback (the result says it once:
not held before, its error after, not held after the rollback, as before); the lab drawing follows
the rollback. The check asks a VPCS for a configuration line, which a VPCS cannot answer:
an ``error``, so the change is not verified and is rolled back."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.ui.conftest import Lab, Service, choose_project, screenshot, sign_in

pytestmark = [pytest.mark.timeout(180), pytest.mark.gns3]


@pytest.mark.parametrize("width", [1366, 390])
def test_a_verified_change_shows_its_check_on_the_card_and_its_rollback_after(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, service: Service, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 860 if width > 500 else 844})
    # The page tests share one project and user: no standing intent left by another test
    # joins this change (it would be listed on the card and decide too).
    with service.api(configured.token) as api:
        cleared = api.put(f"/projects/{configured.opened}/intent", json={"checks": []})
        assert cleared.status_code == 200, cleared.text
    name = f"Checked{width}"
    check = {"kind": "config_line", "node": name, "line": "ip 10.0.0.9/24",
             "name": f"{name} has its address"}  # fmt: skip
    create = {"nodes": [{"template_name": "VPCS", "name": name, "x": 80, "y": 80}],
              "verify": [check], "verify_wait_s": 0}  # fmt: skip
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("create_gns3_node", create)]),
        Reply(text="The check failed, so the PC was removed again."),
        Reply(text="Verified PC"),
    )
    sign_in(page)
    choose_project(page, configured.opened)
    if width < 500:  # the sessions are a drawer on a phone
        page.get_by_role("button", name="Show sessions").click()
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill(f"Add a PC named {name} with its address")
    page.get_by_label("Message", exact=True).press("Enter")

    card = page.get_by_role("region", name="Approval for create_gns3_node")
    expect(card.locator(".approval-checks-title")).to_contain_text("rolled back if one fails")
    expect(card.locator(".approval-checks li")).to_have_text([f"{name} has its address"])
    screenshot(page, f"verified-approval-{width}")
    card.get_by_role("button", name="Approve").click()

    tool = page.locator(".tool-card").last
    expect(page.locator(".message.assistant").last).to_contain_text("removed again")
    expect(tool.locator(".tool-status")).to_have_text("failed")
    section = tool.locator(".tv-verification")
    expect(section.locator("h5")).to_have_text("Verification: rolled back: a check failed")
    expect(section.locator("thead th")).to_have_text(["check", "before", "after", "after rollback"])
    row = section.locator("tbody tr")
    expect(row.locator("th")).to_have_text(f"{name} has its address")
    # Said once: not held before (the PC was not there), its error after the change, and
    # after the rollback not held, as before.
    expect(row.locator("td .tv-status")).to_have_text(["not held", "error", "not held"])
    expect(row.locator("td").nth(1)).to_contain_text(f"{name} is stopped")
    expect(tool.locator(".tool-reason")).to_contain_text("rolled back")
    expect(page.locator(".message.assistant").last).to_contain_text("removed again")
    # The drawing follows the rollback: the PC made and deleted again is not in the lab.
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    nodes = page.get_by_role("group", name="Topology").locator(".node-name")
    expect(nodes.filter(has_text=name)).to_have_count(0)
    screenshot(page, f"verified-result-{width}")

    page.reload()  # the saved history shows the same verdicts
    section = page.locator(".tool-card").last.locator(".tv-verification")
    expect(section.locator("tbody tr td .tv-status")).to_have_text(
        ["not held", "error", "not held"]
    )

"""Issue 14 in Chromium against the whole product: "Undo this change" on the card of an
approved change rolls it back through the restore point taken before it, live and from
the saved history, and says what state the lab is in afterwards, or why it could not."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.ui.conftest import Lab, choose_project, screenshot, sign_in
from tests.ui.test_lab_cards_and_sessions import _contrast

pytestmark = [pytest.mark.timeout(180), pytest.mark.gns3]

# Records every text and disabled state the Undo buttons go through (too quick to poll).
RECORD_UNDO_BUTTONS = """() => {
  window.undoSeen = [];
  new MutationObserver(() => {
    for (const button of document.querySelectorAll(".undo-button")) {
      const seen = `${button.textContent}|${button.disabled}`;
      if (window.undoSeen[window.undoSeen.length - 1] !== seen) window.undoSeen.push(seen);
    }
  }).observe(document.getElementById("messages"),
             { subtree: true, childList: true, characterData: true, attributes: true });
}"""


def _names(gns3: RealGns3Server, lab: Lab) -> list[str]:
    response = httpx.get(
        f"{gns3.url}/v3/projects/{lab.opened}/nodes",
        headers={"Authorization": f"Bearer {lab.token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return sorted(str(node["name"]) for node in response.json())


def _vpcs_named(gns3: RealGns3Server, lab: Lab, name: str) -> None:
    headers = {"Authorization": f"Bearer {lab.token}"}
    templates = httpx.get(f"{gns3.url}/v3/templates", headers=headers, timeout=30).json()
    vpcs = next(t["template_id"] for t in templates if t["name"] == "VPCS")
    base = f"{gns3.url}/v3/projects/{lab.opened}"
    made = httpx.post(
        f"{base}/templates/{vpcs}",
        json={"x": 200, "y": -160, "compute_id": "local"},
        headers=headers,
        timeout=30,
    )
    assert made.status_code == 201, made.text
    renamed = httpx.put(
        f"{base}/nodes/{made.json()['node_id']}", json={"name": name}, headers=headers, timeout=30
    )
    assert renamed.status_code == 200, renamed.text


def _ask_and_approve(page: Page, lab: Lab, message: str, tool: str) -> None:
    sign_in(page)
    choose_project(page, lab.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill(message)
    page.get_by_label("Message", exact=True).press("Enter")
    page.get_by_role("region", name=f"Approval for {tool}").get_by_role(
        "button", name="Approve"
    ).click()


def _confirm(box: Locator) -> Locator:
    box.get_by_role("button", name="Undo this change").click()
    confirm = box.get_by_role("group", name="Confirm the undo")
    expect(confirm.get_by_role("button", name="Roll back")).to_be_visible()
    return confirm


def test_an_approved_change_is_undone_from_its_card_and_is_gone_from_gns3(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, gns3_server: RealGns3Server
) -> None:
    llm.clear()
    create = {"nodes": [{"template_name": "VPCS", "name": "Undo9", "x": -200, "y": -160}]}
    slow = "PC Undo9 is in the lab now, next to the others; it is stopped until you start it."
    llm.add(
        Reply(tool_calls=[ToolCallScript("create_gns3_node", create)]),
        Reply(text=slow, chunk=4, token_delay=0.5),  # about 10 s: the turn is still running
        Reply(text="Undo"),
    )
    _ask_and_approve(page, configured, "Add a PC named Undo9", "create_gns3_node")
    page.evaluate(RECORD_UNDO_BUTTONS)

    # Live, from the tool_end event: the button is there while the answer still streams;
    # the rollback is refused (409) while the turn runs, said in words, and nothing changes.
    live = page.get_by_role("group", name="Undo create_gns3_node")
    confirm = _confirm(live)
    # The preview names every node the undo touches; nothing else is undone.
    expect(confirm.get_by_role("list", name="What the undo changes")).to_have_text(
        "delete node Undo9 (made by the change)"
    )
    expect(confirm).to_contain_text("Undo create_gns3_node")
    expect(confirm).to_contain_text("what anyone did since stays")
    confirm.get_by_role("button", name="Roll back").click()
    expect(live.locator(".undo-error")).to_have_text(
        "The copilot is still answering in this session: wait for it to finish (or press "
        "Stop), then try again."
    )
    expect(live.get_by_role("button", name="Undo this change")).to_be_enabled()
    assert "Undo9" in _names(gns3_server, configured)

    # The saved history (once the turn is over) has the button on the same change.
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1, timeout=30_000)
    drawing = page.get_by_role("group", name="Topology")
    expect(drawing.locator(".node-name").filter(has_text="Undo9")).to_have_count(1)
    box = page.get_by_role("group", name="Undo create_gns3_node")
    confirm = _confirm(box)
    # Every node is stopped, so the restore point holds a GNS3 snapshot: offered, not chosen.
    expect(confirm.get_by_role("checkbox")).not_to_be_checked()
    screenshot(page, "undo-confirm")
    confirm.get_by_role("button", name="Cancel").click()  # cancelling changes nothing
    expect(box.get_by_role("group", name="Confirm the undo")).to_have_count(0)
    expect(box.get_by_role("button", name="Undo this change")).to_be_focused()

    confirm = _confirm(box)
    with page.expect_response("**/rollback?*") as answered:
        confirm.get_by_role("button", name="Roll back").click()
    assert "use_snapshot=false" in answered.value.url
    assert answered.value.status == 200
    expect(box.locator(".undo-headline")).to_have_text(
        "Undone: everything is as it was before this change."
    )
    expect(box.locator(".undo-results > li")).to_have_text(["Topology: as before the change"])
    assert "Undo9" not in _names(gns3_server, configured)  # GNS3 itself has it no more
    expect(drawing.locator(".node-name").filter(has_text="Undo9")).to_have_count(0)
    expect(box.get_by_role("button", name="Undo this change")).to_have_count(0)
    expect(box.get_by_role("button", name="Undo this rollback")).to_be_visible()
    seen = page.evaluate("window.undoSeen")
    assert "Rolling back…|true" in seen, seen
    assert "/v3/" not in box.inner_text() and "{" not in box.inner_text()
    screenshot(page, "undo")

    # After a reload the change's card says it was undone, by whom, and offers no undo.
    page.reload()
    box = page.get_by_role("group", name="Undo create_gns3_node")
    expect(box.locator(".undo-headline")).to_contain_text("Undone by admin")
    expect(box.locator(".undo-headline")).to_contain_text("this change is no longer in the lab")
    expect(box.get_by_role("button", name="Undo this change")).to_have_count(0)
    expect(box).to_have_attribute("data-state", "undone")


def test_the_undo_button_comes_back_with_the_saved_history_and_says_why_it_failed(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, gns3_server: RealGns3Server
) -> None:
    _vpcs_named(gns3_server, configured, "Keep9")
    rename = {"nodes": [{"node_name": "Keep9", "new_name": "Renamed9"}]}
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("update_gns3_node_name", rename)]),
        Reply(text="Keep9 is Renamed9 now."),
        Reply(text="Rename"),
    )
    _ask_and_approve(page, configured, "Rename Keep9 to Renamed9", "update_gns3_node_name")
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    assert "Renamed9" in _names(gns3_server, configured)

    page.reload()  # the saved history: the tool message names the restore point
    box = page.get_by_role("group", name="Undo update_gns3_node_name")
    expect(box.get_by_role("button", name="Undo this change")).to_be_visible()

    def answer(status: int, detail: str) -> None:
        page.unroute("**/rollback?*")
        page.route(
            "**/rollback?*",
            lambda route: route.fulfill(
                status=status, content_type="application/json", body=json.dumps({"detail": detail})
            ),
        )

    # GNS3 unreachable: said in words, and the button can be pressed again.
    answer(503, "GNS3 at http://127.0.0.1:9 cannot be reached (ConnectError) while trying to "
           "list nodes. See GET /v3/projects for details.")  # fmt: skip
    _confirm(box).get_by_role("button", name="Roll back").click()
    expect(box.get_by_role("alert")).to_have_text(
        "Not undone: GNS3 at http://127.0.0.1:9 cannot be reached (ConnectError) while trying "
        "to list nodes. Check that GNS3 is running, then try again."
    )
    expect(box.get_by_role("button", name="Undo this change")).to_be_enabled()
    # The restore point gone: said, and the button goes.
    answer(404, "There is no restore point '3f0c' in this session.")
    _confirm(box).get_by_role("button", name="Roll back").click()
    expect(box.get_by_role("alert")).to_have_text(
        "This restore point no longer exists, so the change cannot be undone from here."
    )
    expect(box.get_by_role("button")).to_have_count(0)
    assert "Renamed9" in _names(gns3_server, configured)

    # The real thing, in the dark theme at phone width: Keep9 has its name back.
    page.unroute("**/rollback?*")
    page.emulate_media(color_scheme="dark")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    box = page.get_by_role("group", name="Undo update_gns3_node_name")
    _confirm(box).get_by_role("button", name="Roll back").click()
    expect(box.locator(".undo-headline")).to_have_text(
        "Undone: everything is as it was before this change."
    )
    expect(box.locator(".undo-results > li")).to_have_text(["Topology: as before the change"])
    names = _names(gns3_server, configured)
    assert "Keep9" in names and "Renamed9" not in names, names
    right: Any = page.evaluate(
        "Math.max(...[...document.querySelectorAll('.undo-box *')]"
        ".map((n) => n.getBoundingClientRect().right))"
    )
    assert right <= 390, right  # nothing of it sticks out at phone width
    for selector in (".undo-headline", ".undo-results li span"):
        ratio = _contrast(page, selector, ".message.assistant")
        assert ratio >= 4.5, (selector, ratio)


def test_an_undo_in_the_way_of_a_colleagues_link_says_so_and_confirmed_lists_what_it_deletes(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, gns3_server: RealGns3Server
) -> None:
    create = {"nodes": [{"template_name": "VPCS", "name": "Conf9", "x": -300, "y": 100}]}
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("create_gns3_node", create)]),
        Reply(text="Conf9 is there."),
        Reply(text="Conf"),
    )
    _ask_and_approve(page, configured, "Add a PC named Conf9", "create_gns3_node")
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1, timeout=30_000)
    # A colleague, in GNS3 itself: a node of their own, linked to Conf9.
    _vpcs_named(gns3_server, configured, "Others9")
    headers = {"Authorization": f"Bearer {configured.token}"}
    base = f"{gns3_server.url}/v3/projects/{configured.opened}"
    nodes = {n["name"]: n["node_id"] for n in httpx.get(f"{base}/nodes", headers=headers).json()}
    linked = httpx.post(
        f"{base}/links",
        json={"nodes": [{"node_id": nodes[n], "adapter_number": 0, "port_number": 0}
                        for n in ("Others9", "Conf9")]},
        headers=headers,
        timeout=30,
    )  # fmt: skip
    assert linked.status_code == 201, linked.text

    box = page.get_by_role("group", name="Undo create_gns3_node")
    confirm = _confirm_anyway(box)
    conflicts = confirm.locator(".undo-conflicts")
    expect(conflicts).to_contain_text("nothing will be changed unless you roll back anyway")
    expect(conflicts.locator("li")).to_have_text(
        ["Conf9 (made by the change) was linked since: Conf9 Ethernet0 <-> Others9 Ethernet0"]
    )
    confirm.get_by_role("button", name="Roll back anyway").click()
    # Confirmed once: the plan now lists the colleague's link it deletes too.
    again = box.get_by_role("group", name="Confirm the undo")
    expect(again.get_by_role("list", name="What the undo changes")).to_contain_text(
        "delete link Conf9 Ethernet0 <-> Others9 Ethernet0 (made since by someone else)"
    )
    assert "Conf9" in _names(gns3_server, configured)  # nothing touched yet
    with page.expect_response("**/rollback?*") as answered:
        again.get_by_role("button", name="Roll back").click()
    assert "force=true" in answered.value.url and answered.value.status == 200
    expect(box.locator(".undo-headline")).to_have_text(
        "Undone: everything is as it was before this change."
    )
    names = _names(gns3_server, configured)
    assert "Conf9" not in names and "Others9" in names, names
    screenshot(page, "undo-conflict")


def _confirm_anyway(box: Locator) -> Locator:
    box.get_by_role("button", name="Undo this change").click()
    confirm = box.get_by_role("group", name="Confirm the undo")
    expect(confirm.get_by_role("button", name="Roll back anyway")).to_be_visible()
    return confirm

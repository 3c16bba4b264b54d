"""The page against the whole product: the lab drawn and kept current, tool
cards people can read, approval cards, edit and ask again, search and export, the dark
theme, the first run, the sidebar at any title length, and a phone-width run."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from adapters.web import copilot_event
from copilot_core.events import (
    DoneEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
    ToolStartEvent,
    TurnEvent,
)
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.ui.conftest import (
    API_KEY,
    Lab,
    Service,
    choose_project,
    screenshot,
    scripted_stream,
    sign_in,
)

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]


def _gns3(gns3: RealGns3Server, lab: Lab, method: str, path: str, **kwargs: Any) -> Any:
    response = httpx.request(
        method,
        f"{gns3.url}/v3/projects/{lab.opened}{path}",
        headers={"Authorization": f"Bearer {lab.token}"},
        timeout=30,
        **kwargs,
    )
    assert response.status_code < 300, response.text
    return response.json() if response.content else None


def _vpcs(gns3: RealGns3Server, lab: Lab, x: int, y: int) -> dict[str, Any]:
    templates = httpx.get(
        f"{gns3.url}/v3/templates", headers={"Authorization": f"Bearer {lab.token}"}, timeout=30
    ).json()
    vpcs = next(t["template_id"] for t in templates if t["name"] == "VPCS")
    node: dict[str, Any] = _gns3(
        gns3, lab, "POST", f"/templates/{vpcs}", json={"x": x, "y": y, "compute_id": "local"}
    )
    return node


def _turn(api: httpx.Client, lab: Lab, message: str) -> str:
    reply = api.post(
        f"/projects/{lab.opened}/chat/stream", json={"message": message, "stream": False}
    )
    assert reply.status_code == 200, reply.text
    return str(reply.json()["session_id"])


def test_the_lab_is_drawn_kept_current_and_a_node_shows_its_console(
    page: Page, configured: Lab, gns3_server: RealGns3Server
) -> None:
    first = _vpcs(gns3_server, configured, -150, 0)
    second = _vpcs(gns3_server, configured, 150, 40)
    _gns3(
        gns3_server,
        configured,
        "POST",
        "/links",
        json={
            "nodes": [
                {"node_id": first["node_id"], "adapter_number": 0, "port_number": 0},
                {"node_id": second["node_id"], "adapter_number": 0, "port_number": 0},
            ]
        },
    )
    sign_in(page)
    choose_project(page, configured.opened)
    drawing = page.get_by_role("group", name="Topology")
    pc = drawing.locator(f".node[data-node-id='{first['node_id']}']")
    expect(pc).to_have_attribute("data-status", "stopped")
    expect(pc.locator(".node-dot")).to_have_attribute("data-status", "stopped")
    expect(drawing.locator(".link .port-label")).to_have_text(["e0", "e0"])
    expect(page.locator("#lab-summary")).to_contain_text("link")
    # Colours follow the status: a stopped node's dot is red.
    colour = pc.locator(".node-dot").evaluate("d => getComputedStyle(d).fill")
    assert colour == "rgb(198, 40, 40)", colour

    pc.click()
    details = page.get_by_role("complementary", name="Node details")
    expect(details).to_contain_text(first["name"])
    console = details.locator("a.node-console")
    expect(console).to_have_text(f"telnet://127.0.0.1:{first['console']}")
    expect(console).to_have_attribute("href", f"telnet://127.0.0.1:{first['console']}")
    web = details.get_by_role("link", name="Web console in GNS3")
    expect(web).to_have_attribute(
        "href",
        f"{gns3_server.url}/static/web-ui/controller/1/project/{configured.opened}/nodes/"
        f"{first['node_id']}",
    )
    expect(page.locator("#lab-web-ui")).to_have_attribute(
        "href", re.compile(rf"/controller/127\.0\.0\.1/\d+/project/{configured.opened}$")
    )
    screenshot(page, "lab")

    # A change made in GNS3 itself (not by the copilot) reaches the open page.
    third = _vpcs(gns3_server, configured, 0, 160)
    expect(drawing.locator(f".node[data-node-id='{third['node_id']}']")).to_have_count(1)
    _gns3(gns3_server, configured, "PUT", f"/nodes/{third['node_id']}", json={"name": "Lab-PC9"})
    expect(drawing.locator(".node-name").filter(has_text="Lab-PC9")).to_have_count(1)
    _gns3(gns3_server, configured, "DELETE", f"/nodes/{third['node_id']}")
    expect(drawing.locator(f".node[data-node-id='{third['node_id']}']")).to_have_count(0)

    page.get_by_role("button", name="▾ Lab", exact=True).click()  # collapsible
    expect(page.locator("#lab-body")).to_be_hidden()
    page.get_by_role("button", name="▸ Lab", exact=True).click()
    expect(drawing).to_be_visible()


def test_approval_cards_show_the_change_and_the_decision_and_come_back_after_a_reload(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, service: Service
) -> None:
    llm.clear()
    create = {"nodes": [{"template_name": "VPCS", "name": "Approved9", "x": 0, "y": -150}]}
    llm.add(
        Reply(tool_calls=[ToolCallScript("create_gns3_node", create)]),
        Reply(text="PC **Approved9** is in the lab."),
        Reply(text="Approvals"),
        Reply(tool_calls=[ToolCallScript("create_gns3_node", {"nodes": [{"template_name":
              "VPCS", "name": "Rejected9"}]})]),
        Reply(text="Understood, nothing was created."),
    )  # fmt: skip
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill("Add a PC named Approved9")
    page.get_by_label("Message", exact=True).press("Enter")
    card = page.get_by_role("region", name="Approval for create_gns3_node")
    # The approval asks the change in words (from its preview); the tool's card is titled by
    # the call (the service's title); the tool's name is small print on both.
    expect(card.locator("h3")).to_have_text("Create 1 node?")
    expect(card.locator(".approval-tool")).to_have_text("create_gns3_node")
    expect(page.locator(".tool-card .tool-title")).to_have_text("Create Approved9 (VPCS)")
    expect(page.locator(".tool-card .tool-name")).to_have_text("create_gns3_node")
    expect(card.locator(".approval-topology")).to_contain_text("Approved9")
    expect(page.locator(".tool-card .tool-status")).to_have_text("waiting for you")
    screenshot(page, "approval")

    page.reload()  # the pending approval comes back with the re-attached turn
    card = page.get_by_role("region", name="Approval for create_gns3_node")
    expect(card.get_by_role("button", name="Approve")).to_be_visible()
    card.get_by_role("button", name="Approve").click()
    expect(page.locator(".message.assistant").last).to_contain_text("is in the lab")
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    node = page.get_by_role("group", name="Topology").locator(".node-name")
    expect(node.filter(has_text="Approved9")).to_have_count(1)  # the lab follows the change

    # A rejection with a comment: the card says who decided and why; the tool is rejected.
    page.get_by_label("Message", exact=True).fill("Add another PC")
    page.get_by_label("Message", exact=True).press("Enter")
    card = page.get_by_role("region", name="Approval for create_gns3_node").last
    card.get_by_label("Comment on this change").fill("not in this lab")
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".approval-outcome")).to_have_text("Rejected by you: “not in this lab”")
    tool = page.locator(".tool-card").last
    expect(tool.locator(".tool-status")).to_have_text("rejected")
    expect(tool).to_have_attribute("data-viewed", "true")
    # The rejection is said once: by the approval card, not again on the tool's card.
    expect(tool.locator(".tool-reason")).to_be_hidden()
    expect(tool.locator(".tv-error")).to_have_count(0)
    expect(page.get_by_role("button", name="Send")).to_be_visible()

    # After a reload (no approval cards), each tool card says who decided, once.
    page.reload()
    first, last = page.locator(".tool-card").first, page.locator(".tool-card").last
    expect(first.locator(".tool-decision")).to_have_text("Approved by you.")
    expect(first.locator(".tool-title")).to_have_text("Create Approved9 (VPCS)")
    expect(last.locator(".tool-title")).to_have_text("Create Rejected9 (VPCS)")
    expect(last.locator(".tool-decision")).to_have_text("Rejected by you: “not in this lab”")
    expect(last).to_have_attribute("data-viewed", "true")
    expect(last.locator(".tool-reason")).to_be_hidden()
    expect(last.locator(".tv-error")).to_have_count(0)
    said = page.locator(".message.assistant").last.get_by_text("not in this lab")
    expect(said.locator("visible=true")).to_have_count(1)  # (the raw JSON is folded away)


def test_a_decision_already_taken_elsewhere_is_said_on_the_card(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, service: Service
) -> None:
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("create_gns3_node", {"nodes": [{"template_name":
              "VPCS", "name": "Twice9"}]})]),
        Reply(text="Done."),
        Reply(text="Twice"),
    )  # fmt: skip
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill("Add Twice9")
    page.get_by_label("Message", exact=True).press("Enter")
    card = page.get_by_role("region", name="Approval for create_gns3_node")
    expect(card.get_by_role("button", name="Reject")).to_be_visible()
    approval = card.get_attribute("data-approval-id")
    session = page.evaluate("JSON.parse(sessionStorage.getItem('copilot.session'))")
    # "Another tab" decides first; this page's click then gets 409, or sees the outcome.
    page.route(
        "**/approvals/*",
        lambda route: route.fulfill(
            status=409,
            content_type="application/json",
            body=json.dumps({"detail": f"Approval '{approval}' was already decided."}),
        ),
    )
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".approval-note")).to_have_text(
        "This change was already decided (perhaps in another tab)."
    )
    with service.api(configured.token) as api:
        url = f"/projects/{configured.opened}/chat/sessions/{session}/approvals/{approval}"
        assert api.post(url, json={"decision": "approve"}).status_code == 200
    expect(card.locator(".approval-outcome")).to_have_text("Approved by you.")
    expect(page.get_by_role("button", name="Send")).to_be_visible()


def test_tool_cards_show_device_output_tables_and_failures_with_raw_json_a_click_away(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, gns3_server: RealGns3Server
) -> None:
    pc = _vpcs(gns3_server, configured, 200, -120)
    llm.clear()
    llm.add(
        Reply(
            tool_calls=[
                ToolCallScript("gns3_topology_reader", {}),
                ToolCallScript("start_gns3_node", {"node_names": [pc["name"]]}),
            ]
        ),
        Reply(text="Here is the lab:\n\n```cisco\ninterface Gi0/0\n ip address 10.0.0.1 "
              "255.255.255.0\n!\n```\n\nand `show ip` next."),
        Reply(text="Readable tools"),
    )  # fmt: skip
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill("Show me the lab and start my PC")
    page.get_by_label("Message", exact=True).press("Enter")
    # Starting a node is a change: it asks first (approval "changes"), then GNS3 refuses it.
    page.get_by_role("region", name="Approval for start_gns3_node").get_by_role(
        "button", name="Approve"
    ).click()
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1, timeout=20_000)
    reader, start = page.locator(".tool-card").nth(0), page.locator(".tool-card").nth(1)
    reader.locator("summary").first.click()
    table = reader.locator(".tool-view table").first
    expect(table.locator("th").first).to_have_text("name")
    expect(table).to_contain_text(pc["name"])
    # The start fails here (no uBridge): GNS3's reason is on the card, not only in JSON.
    expect(start.locator(".tool-status")).to_have_text("failed")
    expect(start.locator(".tool-reason")).to_contain_text(pc["name"])
    expect(start.locator(".tool-view .tv-item[data-status='failed']")).to_have_count(1)
    start.locator(".tool-raw summary").click()
    assert json.loads(start.locator(".tool-output-json").inner_text())["status"] == "failed"
    # Code is highlighted on the server; copy buttons on code and on the whole answer.
    code = page.locator(".message.assistant .markdown pre code").first
    expect(code.locator("span.tok-k").first).to_have_text("interface")
    expect(code.locator("span.tok-m").first).to_have_text("10.0.0.1")
    page.locator(".message.assistant .copy-button").first.click()
    assert page.evaluate("navigator.clipboard.readText()").startswith("interface Gi0/0")
    page.get_by_role("button", name="Copy the answer").click()
    assert page.evaluate("navigator.clipboard.readText()").startswith("Here is the lab:")
    screenshot(page, "tool-cards")


@pytest.fixture
def scripted_turn(configured: Lab) -> Iterator[str]:
    session = "00000000-0000-4000-8000-00000000abcd"
    output = {"status": "success", "results": [
        {"device_name": "R1", "status": "success", "prompt": "R1#",
         "output": [{"command": "ping 10.0.0.2", "output": "!!!!!"}]},
        {"device_name": "PC1", "status": "success", "prompt": "PC1>",
         "output": [{"command": "ping 10.0.0.1", "output": "84 bytes from 10.0.0.1"}]},
    ]}  # fmt: skip

    def wire(seq: int, event: Any) -> dict[str, Any]:
        return copilot_event(TurnEvent(seq, session, event))

    args = json.dumps({"device_configs": [{"device_name": "R1", "commands": ["ping 10.0.0.2"]}]})
    events = [
        (0, wire(1, ToolCallEvent("c1", "execute_multiple_device_commands", args, True))),
        (0, wire(2, ToolStartEvent("execute_multiple_device_commands", "c1"))),
        *[
            (
                0.6,
                wire(
                    3 + n,
                    ToolProgressEvent(
                        "execute_multiple_device_commands", "c1", f"reply {n}\n", "R1"
                    ),
                ),
            )
            for n in range(4)
        ],
        (0.6, wire(7, ToolEndEvent("execute_multiple_device_commands", "c1", output))),
        (0, wire(8, DoneEvent(None))),
    ]
    with scripted_stream(events, "t-progress") as url:
        yield url


def test_a_running_tool_shows_its_elapsed_time_and_the_console_output_as_it_arrives(
    page: Page, configured: Lab, scripted_turn: str
) -> None:
    # Nodes cannot be started on this machine (no uBridge), so no real console prints here:
    # the turn's stream comes from a scripted server speaking the service's own wire format.
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.route("**/chat/stream", lambda route: route.continue_(url=scripted_turn))
    page.get_by_label("Message", exact=True).fill("ping from R1")
    page.get_by_label("Message", exact=True).press("Enter")
    card = page.locator(".tool-card").first
    live = card.get_by_label("Live output")
    expect(live.locator("h4")).to_have_text("R1")
    expect(live.locator("pre")).to_have_text(re.compile(r"^reply 0\n(reply 1\n)?$"))
    expect(card.locator(".tool-status")).to_have_text("running…")
    expect(card.locator(".tool-elapsed")).to_have_text(re.compile(r"^[1-9] s$"), timeout=5_000)
    expect(live.locator("pre")).to_contain_text("reply 3")
    expect(card.locator(".tool-status")).to_have_text("done")
    # A success with device output stays open; each heading has the device's own prompt.
    expect(card).to_have_attribute("open", "")
    expect(card.locator(".tv-cmd")).to_have_text(["R1# ping 10.0.0.2", "PC1> ping 10.0.0.1"])
    expect(card.locator(".tv-output")).to_have_text(["!!!!!", "84 bytes from 10.0.0.1"])
    expect(card.locator(".tv-output").last).to_be_visible()


def test_the_last_question_is_edited_or_asked_again_and_the_counters_follow(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, service: Service
) -> None:
    llm.clear()
    llm.add(
        Reply(text="First answer.", usage=(10, 2)),
        Reply(text="Edits"),
        Reply(text="Second answer.", usage=(20, 3)),
        Reply(text="Third answer.", usage=(30, 4)),
    )
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Message", exact=True).fill("line one\nline **two**")
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    mine = page.locator(".message.user").last
    assert mine.inner_text() == "line one\nline **two**"  # text, line breaks kept
    page.get_by_role("button", name="Ask your last message again").click()
    expect(page.locator(".message.assistant").last).to_have_text(re.compile("Second answer"))
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    expect(page.locator(".message.assistant")).to_have_count(1)
    page.get_by_role("button", name="Edit your last message").click()
    page.get_by_label("Edit your message").fill("an edited question")
    page.get_by_role("button", name="Send edited message").click()
    expect(page.locator(".message.assistant").last).to_contain_text("Third answer.")
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    expect(page.locator(".message.user")).to_have_text(["an edited question"])
    expect(page.locator("#stat-messages")).to_have_text("2")
    expect(page.locator("#stat-input")).to_have_text("30")  # only what is kept counts
    expect(page.locator("#stat-output")).to_have_text("4")


def test_sessions_are_found_by_their_text_and_exported_as_a_lab_report(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, service: Service
) -> None:
    llm.clear()
    llm.add(Reply(text="OSPF area 51 converged."), Reply(text="Search me"))
    with service.api(configured.token) as api:
        session = _turn(api, configured, "Why is ospf-zebra-42 down?")
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_label("Search sessions").fill("zebra-42")
    hit = page.locator("#search-results .search-hit")
    expect(hit).to_have_count(1)
    expect(hit.locator(".search-snippet")).to_contain_text("ospf-zebra-42")
    hit.click()
    expect(page.locator(".message.assistant")).to_contain_text("area 51")
    page.get_by_label("Search sessions").fill("no-such-words-anywhere")
    expect(page.locator("#search-results")).to_contain_text("No session mentions")
    page.get_by_label("Search sessions").press("Escape")
    expect(page.locator("#session-list")).to_be_visible()

    with page.expect_download() as report:
        page.get_by_role("button", name="Lab report (Markdown)").click()
    text = report.value.path().read_text(encoding="utf-8")
    assert report.value.suggested_filename == f"copilot-session-{session}.md"
    assert text.startswith("# Search me") and "> Why is ospf-zebra-42 down?" in text
    assert "### Answer\n\nOSPF area 51 converged." in text
    with page.expect_download() as dump:
        page.get_by_role("button", name="JSON").click()
    exported = json.loads(dump.value.path().read_text(encoding="utf-8"))
    assert exported["session"]["thread_id"] == session
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant"]


def test_long_titles_ellipsize_and_the_session_buttons_stay_in_the_sidebar(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, service: Service
) -> None:
    llm.clear()
    llm.add(Reply(text="ok"), Reply(text="t"))
    with service.api(configured.token) as api:
        session = _turn(api, configured, "long title")
        long = "A very long session title about OSPF, BGP and the lab " * 2
        url = f"/projects/{configured.opened}/chat/sessions/{session}"
        assert api.patch(url, json={"title": long.strip()}).status_code == 200
    sign_in(page)
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.reload()
        choose_project(page, configured.opened)
        if width < 700:
            page.get_by_role("button", name="Show sessions").click()
            expect(page.locator("#sidebar")).to_be_in_viewport(ratio=1)
            page.wait_for_timeout(300)  # the slide-in transition (0.2 s) is over
        row = page.locator(f".session[data-session-id='{session}']")
        sidebar = page.locator("#sidebar").bounding_box()
        assert sidebar is not None
        for name in ("Rename", "Pin", "Delete"):
            button = row.get_by_role("button", name=re.compile(f"^{name}"))
            expect(button).to_be_visible()
            box = button.bounding_box()
            assert box is not None and box["x"] + box["width"] <= sidebar["x"] + sidebar["width"]
        # No sideways scrolling; the title is cut with an ellipsis.
        assert page.evaluate(
            "(s => s.scrollWidth <= s.clientWidth)(document.getElementById('sidebar'))"
        )
        title = row.locator(".session-title")
        assert title.evaluate("t => t.scrollWidth > t.clientWidth")
        # The title keeps most of the row, not about 12 characters beside the count.
        shown = title.evaluate(
            "t => Math.floor(t.clientWidth / t.scrollWidth * t.textContent.length)"
        )
        print(f"width {width}: about {shown} characters of the title shown")
        assert shown >= 20, shown
        assert title.evaluate("t => getComputedStyle(t).textOverflow") == "ellipsis"
        opacity = row.get_by_role("button", name=re.compile("^Delete")).evaluate(
            "b => getComputedStyle(b.parentElement).opacity"
        )
        assert opacity == "1"
        if width < 700:
            screenshot(page, "phone-sessions")


def _contrast(page: Page, selector: str, background: str) -> float:
    return float(
        page.evaluate(
            """([selector, background]) => {
              const rgb = (css) => css.match(/[\\d.]+/g).slice(0, 3).map(Number);
              const lum = ([r, g, b]) => {
                const c = [r, g, b].map((v) => { v /= 255;
                  return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
              };
              const fg = rgb(getComputedStyle(document.querySelector(selector)).color);
              let node = document.querySelector(background);
              const clear = (n) => getComputedStyle(n).backgroundColor === "rgba(0, 0, 0, 0)";
              while (node.parentElement && clear(node)) {
                node = node.parentElement;
              }
              const bg = rgb(getComputedStyle(node).backgroundColor);
              const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
              return (a + 0.05) / (b + 0.05);
            }""",
            [selector, background],
        )
    )


def test_the_dark_theme_follows_the_system_has_a_toggle_and_keeps_text_readable(
    page: Page, configured: Lab
) -> None:
    page.emulate_media(color_scheme="dark")
    sign_in(page)
    choose_project(page, configured.opened)
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(15, 20, 25)", background  # the system's dark
    toggle = page.get_by_role("button", name="Dark theme")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    checks = [  # text on its background, AA needs 4.5
        (".topbar .user-name", ".topbar"),
        ("#new-chat", "#new-chat"),
        (".empty-chat p", "#messages"),
        ("#session-search", "#session-search"),
    ]
    for theme in ("dark", "light"):
        for selector, behind in checks:
            ratio = _contrast(page, selector, behind if behind != "#messages" else ".chat")
            assert ratio >= 4.5, (theme, selector, ratio)
        if theme == "dark":
            screenshot(page, "dark")
            toggle.click()  # to light, remembered
            expect(toggle).to_have_attribute("aria-pressed", "false")
    light = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert light == "rgb(246, 247, 249)", light
    page.reload()
    expect(page.get_by_role("button", name="Dark theme")).to_have_attribute("aria-pressed", "false")


def test_the_first_run_says_no_llm_is_configured_and_the_settings_offer_the_models(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer, service: Service
) -> None:
    with service.api(configured.token) as api:
        assert api.delete("/llm-config").status_code == 204
    llm.models = ["gpt-ui", "gpt-ui-mini", "qwen-lab"]
    try:
        sign_in(page)
        choose_project(page, configured.opened)
        empty = page.locator(".empty-chat")
        expect(empty).to_contain_text("No language model is configured for your account yet")
        empty.get_by_role("button", name="Open LLM settings").click()
        dialog = page.locator("#settings-dialog")
        expect(dialog.locator("#models-note")).to_contain_text(
            "No LLM is configured yet: save a provider first."
        )
        dialog.get_by_label("Provider").fill("openai")
        dialog.get_by_label("Model").fill("gpt-ui")
        dialog.get_by_label("Base URL").fill(llm.base_url)
        dialog.get_by_label("API key (write-only)").fill(API_KEY)
        dialog.get_by_role("button", name="Save").click()
        expect(dialog.locator("#models-note")).to_contain_text("offers 3 models")
        options = dialog.locator("#models option")
        expect(options).to_have_count(3)
        assert options.evaluate_all("o => o.map(x => x.value)") == [
            "gpt-ui", "gpt-ui-mini", "qwen-lab"
        ]  # fmt: skip
        expect(dialog.get_by_label("Temperature")).to_have_attribute(
            "placeholder", "provider's default"
        )
        expect(dialog.get_by_label("Context limit (tokens)")).to_have_attribute(
            "placeholder", "32000 (default)"
        )
        dialog.get_by_label("Ask me before").select_option("always")
        dialog.get_by_role("button", name="Save").click()
        expect(page.locator("#settings-result")).to_contain_text("Saved")
        with service.api(configured.token) as api:
            assert api.get("/llm-config").json()["approval"] == "always"
        # The key went to the endpoint only: the page never saw it.
        assert API_KEY not in page.content()
        # No message on the page quotes an API route.
        assert not re.search(r"/v3/|PUT /|POST /", page.locator("body").inner_text())
        dialog.get_by_role("button", name="Close").click()
        expect(empty.locator(".llm-missing")).to_have_count(0)
    finally:
        llm.models = None
        with service.api(configured.token) as api:
            api.put(
                "/llm-config",
                json={"provider": "openai", "model": "gpt-ui", "base_url": llm.base_url,
                      "api_key": API_KEY, "approval": "changes"},
            )  # fmt: skip


def test_streamed_markdown_has_no_line_break_at_its_edge_and_a_phone_can_use_it_all(
    page: Page, configured: Lab, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    words = "The link between R1 and R2 is **up** and " + "it carries traffic " * 40 + "END."
    llm.add(Reply(text=words, chunk=3, token_delay=0.02), Reply(text="Edge"))
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_label("Message", exact=True).fill("is the link up?")
    page.get_by_label("Message", exact=True).press("Enter")
    block = page.locator(".message.assistant .text-block").first
    expect(block).to_have_attribute("data-rendered", "true")
    # While it streams, the unrendered tail goes on inside the rendered paragraph.
    tail_inline = block.evaluate(
        "b => { const t = b.querySelector('.plain'); return !t.textContent"
        " || t.parentElement.tagName === 'P'; }"
    )
    assert tail_inline
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=20_000)
    assert "\n" not in block.inner_text().strip()
    expect(page.get_by_role("group", name="Topology")).to_be_visible()
    screenshot(page, "phone")

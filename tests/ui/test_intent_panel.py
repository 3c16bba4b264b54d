"""The Intent panel against the whole product (a real gns3-server), at desktop (1366×860)
and phone (390×844) widths: it shows the checks saved through the API, Run shows each
check's verdict and when the run was (the checks name nodes the lab does not have, so
their real verdict is ``error``), a check added through the form is saved, and a bad one
shows the server's own message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.ui.conftest import Lab, Service, choose_project, screenshot, sign_in
from tests.ui.test_lab_cards_and_sessions import _contrast

pytestmark = [pytest.mark.timeout(180), pytest.mark.gns3]

DESKTOP = {"width": 1366, "height": 860}
PHONE = {"width": 390, "height": 844}
CHECKS: list[dict[str, Any]] = [
    {"name": "PC1 reaches PC2", "kind": "reachability", "from": "NoSuchPC1", "to": "10.0.0.2"},
    {"kind": "ospf_neighbor", "node": "NoSuchR1", "neighbor": "R2"},
]

#: The button's text and state at every change, from the moment it is installed.
WATCH_RUN = """(button) => {
  window.runStates = [];
  new MutationObserver(() => window.runStates.push([button.textContent, button.disabled]))
    .observe(button, {attributes: true, childList: true, characterData: true, subtree: true});
}"""

#: An element's colours, and whether the page is wider than the window.
LOOKS = """(element) => ({
  background: getComputedStyle(element).backgroundColor,
  border: getComputedStyle(element).borderTopColor,
  overflow: document.documentElement.scrollWidth > window.innerWidth,
})"""


#: Each verdict's badge (background, border) per theme: the page's ok, danger, amber and
#: muted colours (app.css).
PALETTE = {
    "light": {
        "pass": ("#e6f4ea", "#1a7430"),
        "fail": ("#fdecec", "#b3261e"),
        "error": ("#fff6db", "#b7791f"),
        "none": ("#f3f4f6", "#d9dde3"),
    },
    "dark": {
        "pass": ("#12301c", "#56d364"),
        "fail": ("#3b1a1a", "#ff7b72"),
        "error": ("#3a2f10", "#d29922"),
        "none": ("#1f262e", "#313a45"),
    },
}


def verdict_colours(page: Page) -> dict[str, tuple[str, str]]:
    """The first badge's colours as each verdict would show it, its text's contrast
    asserted (the run gave ``error``; the others are set on the badge to see them)."""
    badge = page.locator(".intent-check .intent-status").first
    shown: dict[str, tuple[str, str]] = {}
    for status in ("pass", "fail", "error", "none"):
        badge.evaluate("(badge, status) => { badge.dataset.status = status; }", status)
        looks = badge.evaluate(LOOKS)
        ratio = _contrast(page, ".intent-check .intent-status", ".intent-check .intent-status")
        assert ratio >= 4.5, (status, ratio)
        shown[status] = (hex_of(looks["background"]), hex_of(looks["border"]))
    badge.evaluate("(badge) => { badge.dataset.status = 'error'; }")
    return shown


def hex_of(css: str) -> str:
    red, green, blue = (int(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return f"#{red:02x}{green:02x}{blue:02x}"


def rgb(hex_colour: str) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"


@pytest.fixture(params=[DESKTOP, PHONE], ids=["desktop", "phone"])
def screen(request: pytest.FixtureRequest, browser: Browser, service: Service) -> Iterator[Page]:
    phone = request.param is PHONE
    context = browser.new_context(
        base_url=service.url, viewport=request.param, service_workers="block", has_touch=phone
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


def put_checks(service: Service, lab: Lab, checks: list[dict[str, Any]]) -> dict[str, Any]:
    with service.api(lab.token) as api:
        stored = api.put(f"/projects/{lab.opened}/intent", json={"checks": checks})
    assert stored.status_code == 200, stored.text
    body: dict[str, Any] = stored.json()
    return body


def get_intent(service: Service, lab: Lab) -> dict[str, Any]:
    with service.api(lab.token) as api:
        answer = api.get(f"/projects/{lab.opened}/intent")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def open_panel(page: Page, lab: Lab) -> Locator:
    sign_in(page)
    choose_project(page, lab.opened)
    panel = page.get_by_role("region", name="Intent")
    expect(panel).to_be_visible()
    toggle = panel.locator("#intent-toggle")
    if toggle.get_attribute("aria-expanded") != "true":  # a phone starts with it folded
        toggle.click()
    expect(panel.get_by_role("list", name="Checks")).to_be_visible()
    return panel


def test_the_panel_shows_the_saved_checks_and_run_shows_each_verdict_and_when(
    screen: Page, service: Service, lab: Lab
) -> None:
    put_checks(service, lab, [])  # other checks: no last run (the same would keep it)
    put_checks(service, lab, CHECKS)
    panel = open_panel(screen, lab)
    rows = panel.locator(".intent-check")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator(".intent-label")).to_have_text("PC1 reaches PC2")
    expect(rows.nth(1).locator(".intent-label")).to_have_text("NoSuchR1 OSPF neighbour R2 full")
    expect(rows.locator(".intent-status")).to_have_text(["not run", "not run"])
    expect(panel.locator(".intent-summary")).to_have_text("2 checks, not run yet")

    run = panel.get_by_role("button", name="Run")
    run.evaluate(WATCH_RUN)
    run.click()
    expect(rows.locator(".intent-status")).to_have_text(["error", "error"], timeout=60_000)
    expect(run).to_have_text("Run")
    expect(run).to_be_enabled()
    states = screen.evaluate("window.runStates")
    assert ["Running…", True] in states, states  # disabled, saying so, while it ran

    stored = get_intent(service, lab)
    last = stored["last_run"]
    assert last is not None and last["result"]["status"] == "error"
    assert [c["status"] for c in last["result"]["checks"]] == ["error", "error"]
    when = panel.locator(".intent-when time")
    expect(when).to_have_attribute("datetime", last["at"])
    expect(when).to_be_visible()
    expect(panel.locator(".intent-summary")).to_have_text("2 checks: 2 error")

    # the reason on hover, and the whole verdict on expanding the row
    reason = last["result"]["checks"][0]["reason"]
    assert "NoSuchPC1" in reason, reason
    expect(rows.nth(0).locator("summary")).to_have_attribute("title", reason)
    rows.nth(0).locator("summary").click()
    facts = rows.nth(0).locator(".intent-facts")
    expect(facts).to_be_visible()
    expect(facts).to_contain_text(reason)
    expect(facts).to_contain_text("NoSuchPC1 reaches 10.0.0.2")  # what the named check checks
    width = "phone" if screen.viewport_size == PHONE else "desktop"
    screenshot(screen, f"intent-panel-{width}")

    assert not panel.evaluate(LOOKS)["overflow"]  # nothing wider than the window
    for theme in ("light", "dark"):
        if theme == "dark":
            screen.get_by_role("button", name="Dark theme").click()
            assert panel.evaluate(LOOKS)["background"] == rgb("#171c23")  # the dark panel
            screenshot(screen, f"intent-panel-{width}-dark")
        # each verdict its own colours, and its text readable on them (WCAG AA)
        assert verdict_colours(screen) == PALETTE[theme], theme

    # a closed project's checks can be kept but not run
    choose_project(screen, lab.closed)
    expect(panel.get_by_role("button", name="Run")).to_be_disabled()


def test_a_check_added_in_the_form_is_saved_and_a_bad_one_shows_the_servers_message(
    screen: Page, service: Service, lab: Lab
) -> None:
    put_checks(service, lab, CHECKS[:1])
    panel = open_panel(screen, lab)
    expect(panel.locator(".intent-check")).to_have_count(1)
    panel.get_by_text("Add a check").click()
    form = panel.get_by_role("form", name="Add a check")
    form.get_by_label("Kind").select_option("route")
    form.get_by_label("Router").fill("R1")
    form.get_by_label("Prefix").fill("10.0.0/24")
    form.get_by_role("button", name="Add").click()
    bad = {"kind": "route", "node": "R1", "prefix": "10.0.0/24", "present": True}
    with service.api(lab.token) as api:
        refused = api.put(f"/projects/{lab.opened}/intent", json={"checks": [*CHECKS[:1], bad]})
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert "prefix" in detail, detail
    expect(form.locator(".intent-form-result")).to_have_text(f"Not added: {detail}")
    screenshot(screen, f"intent-form-{'phone' if screen.viewport_size == PHONE else 'desktop'}")
    assert len(get_intent(service, lab)["checks"]) == 1  # nothing stored

    form.get_by_label("Prefix").fill("10.0.2.0/24")
    form.get_by_label("Via (next hop, interface or node)").fill("R2")
    form.get_by_role("button", name="Add").click()
    expect(form.locator(".intent-form-result")).to_have_text(
        "Added “R1 has a route to 10.0.2.0/24 via R2”."
    )
    labels = panel.locator(".intent-check .intent-label")
    expect(labels).to_have_text(["PC1 reaches PC2", "R1 has a route to 10.0.2.0/24 via R2"])
    assert get_intent(service, lab)["checks"][1] == {
        "kind": "route",
        "node": "R1",
        "prefix": "10.0.2.0/24",
        "present": True,
        "via": "R2",
    }

    form.get_by_label("Kind").select_option("interface")
    form.get_by_label("Name").fill("R2 uplink up")
    form.get_by_label("Node").fill("R2")
    form.get_by_label("Interface", exact=True).fill("eth1")
    form.get_by_role("button", name="Add").click()
    expect(labels).to_have_count(3)
    expect(labels.nth(2)).to_have_text("R2 uplink up")
    assert get_intent(service, lab)["checks"][2] == {
        "name": "R2 uplink up",
        "kind": "interface",
        "node": "R2",
        "interface": "eth1",
        "state": "up",
    }

    panel.get_by_role("button", name="Remove “PC1 reaches PC2”").click()
    expect(labels).to_have_text(["R1 has a route to 10.0.2.0/24 via R2", "R2 uplink up"])
    assert [c["kind"] for c in get_intent(service, lab)["checks"]] == ["route", "interface"]

"""A GNS3 server with no project, or with a closed one, is not a dead end: the page creates
a project and opens a closed one, with GNS3's own rules and errors (issue 29, item 3)."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.fakes.gns3_server import RealGns3Server
from tests.ui.conftest import Lab, choose_project, screenshot, sign_in

pytestmark = [pytest.mark.timeout(180), pytest.mark.gns3]


def _projects(gns3_server: RealGns3Server, token: str) -> dict[str, dict[str, str]]:
    listed = httpx.get(
        f"{gns3_server.url}/v3/projects",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()
    return {str(p["name"]): p for p in listed}


def test_a_project_is_created_from_the_page_and_a_taken_name_says_so(
    page: Page, configured: Lab, gns3_server: RealGns3Server
) -> None:
    name = f"ui-new-{time.time_ns() % 10**9}"
    headers = {"Authorization": f"Bearer {configured.token}"}
    try:
        sign_in(page)
        page.get_by_role("button", name="Create a project").click()
        dialog = page.locator("#project-dialog")
        dialog.get_by_label("Project name").fill(name)
        screenshot(page, "new-project")
        dialog.get_by_role("button", name="Create").click()
        expect(dialog).to_be_hidden()
        created = _projects(gns3_server, configured.token)[name]
        assert created["status"] == "opened"
        # The new project is the one shown, and its chat is ready.
        page.locator(f"body[data-project='{created['project_id']}']").wait_for(state="attached")
        expect(page.get_by_label("GNS3 project")).to_have_value(created["project_id"])
        expect(page.get_by_label("Message", exact=True)).to_be_enabled()

        page.get_by_role("button", name="Create a project").click()
        dialog.get_by_label("Project name").fill(name)
        dialog.get_by_role("button", name="Create").click()
        expect(page.locator("#project-result")).to_contain_text("Not created")
        expect(page.locator("#project-result")).to_contain_text(name)
        dialog.get_by_role("button", name="Cancel").click()
    finally:
        project = _projects(gns3_server, configured.token).get(name)
        if project:
            httpx.delete(
                f"{gns3_server.url}/v3/projects/{project['project_id']}",
                headers=headers,
                timeout=30,
            )


def test_a_closed_project_is_opened_from_its_notice(
    page: Page, configured: Lab, gns3_server: RealGns3Server
) -> None:
    headers = {"Authorization": f"Bearer {configured.token}"}
    name = f"ui-reopen-{time.time_ns() % 10**9}"
    created = httpx.post(
        f"{gns3_server.url}/v3/projects", json={"name": name}, headers=headers, timeout=30
    ).json()
    project_id = str(created["project_id"])
    try:
        closing = httpx.post(
            f"{gns3_server.url}/v3/projects/{project_id}/close", headers=headers, timeout=30
        )
        assert closing.status_code == 204, closing.text
        sign_in(page)
        choose_project(page, project_id)
        notice = page.locator("#notice")
        expect(notice).to_contain_text("closed in GNS3, so chat is disabled")
        expect(page.get_by_label("Message", exact=True)).to_be_disabled()
        notice.get_by_role("button", name="Open the project").click()
        expect(page.get_by_label("Message", exact=True)).to_be_enabled()
        expect(page.locator("#project-select option:checked")).to_have_text(name)
        assert _projects(gns3_server, configured.token)[name]["status"] == "opened"
    finally:
        httpx.delete(f"{gns3_server.url}/v3/projects/{project_id}", headers=headers, timeout=30)

"""The routes the page needs, over real HTTP against the real service and gns3-server:
sign in, projects, Markdown rendering, and the static files with their security headers."""

from __future__ import annotations

import httpx
import pytest

from tests.ui.conftest import Lab, Service

pytestmark = [pytest.mark.timeout(120), pytest.mark.gns3]


def test_login_trades_gns3_credentials_for_a_token_and_never_logs_them(
    service: Service, lab: Lab
) -> None:
    with service.api() as anonymous:
        refused = anonymous.post(
            "/auth/login", json={"username": "admin", "password": "wrong-pw-123"}
        )
        assert refused.status_code == 401
        assert "wrong-pw-123" not in refused.text
        assert anonymous.post("/auth/login", json={"username": "admin"}).status_code == 422
        signed = anonymous.post("/auth/login", json={"username": "admin", "password": "admin"})
        assert signed.status_code == 200, signed.text
    body = signed.json()
    assert body["user"]["username"] == "admin" and body["user"]["is_superadmin"] is True
    token = body["access_token"]
    with service.api(token) as api:
        assert api.get("/me").json()["username"] == "admin"
        projects = {p["id"]: p for p in api.get("/projects").json()}
    assert projects[lab.opened] == {"id": lab.opened, "name": lab.opened_name, "status": "opened"}
    assert projects[lab.closed]["status"] == "closed"
    log = service.log.read_text()
    assert token not in log and "wrong-pw-123" not in log
    with service.api() as anonymous:
        assert anonymous.get("/projects").status_code == 401


def test_markdown_is_rendered_and_sanitised_on_the_server(service: Service, lab: Lab) -> None:
    hostile = (
        "# Lab\n\n**bold** `code` <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n"
        "[bad](javascript:alert(1)) [good](https://gns3.com)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    with service.api(lab.token) as api:
        html = api.post("/render", json={"markdown": hostile}).json()["html"]
        too_big = api.post("/render", json={"markdown": "x" * 200_001})
    assert "<h1>Lab</h1>" in html and "<strong>bold</strong>" in html and "<table>" in html
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html.lower()
    assert 'href="https://gns3.com"' in html and 'rel="noopener noreferrer"' in html
    assert too_big.status_code == 422
    with service.api() as anonymous:
        assert anonymous.post("/render", json={"markdown": "hi"}).status_code == 401


def test_the_page_and_its_assets_are_served_from_the_package_with_a_strict_csp(
    service: Service,
) -> None:
    page = httpx.get(f"{service.url}/", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "/ui/js/app.js" in page.text and "http" not in page.text.split("<body>")[0].replace(
        "http-equiv", ""
    )
    for asset, kind in [
        ("/ui/js/app.js", "javascript"),
        ("/ui/js/api.js", "javascript"),
        ("/ui/js/chat.js", "javascript"),
        ("/ui/js/markdown.js", "javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/favicon.svg", "image/svg"),
    ]:
        response = httpx.get(f"{service.url}{asset}", timeout=10)
        assert response.status_code == 200, asset
        assert kind in response.headers["content-type"], asset
        assert response.headers["x-content-type-options"] == "nosniff"
    assert httpx.get(f"{service.url}/ui/../_page.py", timeout=10).status_code == 404

"""The Practice panel (issue 38) in headless Chromium: a troubleshooting drill from the
page, start → hints → a wrong fix graded with partial credit → the right fix graded full
→ the end with the answer and the restore; a lab that lacks what the drill needs, a
drill already running and a fault that did not take, each said in words; a running
drill resumed when the page loads; the answer in the page only after the end.

The service is the web app on a real uvicorn server on 127.0.0.1 (``run_service`` of
``tests/api/conftest.py``, in a thread of its own), signed in through a static GNS3
directory, its drills the core's ``Drills`` over ``FakeDrillLab`` as in
``tests/api/test_drills.py``: configuration lines in memory that the drill's steps
change as a device would, and the student's fixes made on them directly, as console
commands would. Its probes wait on ``gate`` when it is closed, so a start can be seen
running. The real lab behind the same routes is ``tests/lab/test_drills_http_lab.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, Response, ViewportSize, expect

from adapters.web.testing import StaticGns3Directory
from copilot_core.intent import Check, Observation
from copilot_core.testing import text_reply, tool_reply
from tests.api.conftest import ALICE, BOB, CLOSED, OPEN, Service, run_service
from tests.api.test_drills import BGP, HELLO, ROUTE_AROUND, Lab, secrets_of
from tests.ui.conftest import new_page, screenshot

pytestmark = pytest.mark.timeout(180)

T = TypeVar("T")
PASSWORD = "alice-pw"
DESKTOP: ViewportSize = {"width": 1366, "height": 860}
PHONE: ViewportSize = {"width": 390, "height": 844}
#: A fix whose line a page that wrote HTML would run (and the evidence quotes it).
HOSTILE_ROUTE = f'{ROUTE_AROUND} <img src=x onerror="window.pwned=1">'


@dataclass
class PacedLab(Lab):
    """The drills' lab of ``tests/api/test_drills.py`` whose probes wait while ``gate`` is
    closed (it is open unless a test closes it)."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.gate.set()
        self.probes.answer = self.paced

    async def paced(self, check: Check, context: Any) -> Observation:
        await self.gate.wait()
        return self.answer(check, context)


@dataclass
class Served:
    """The service running in its own thread's event loop, and its drills' lab."""

    url: str
    lab: PacedLab
    loop: asyncio.AbstractEventLoop
    service: Service

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the service's loop (the lab is that loop's to change)."""

        async def call() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout=30)

    def api(self, token: str = ALICE) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.url}/v3/copilot/projects/{OPEN}/drills",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )


@contextlib.contextmanager
def serving(*, with_drills: bool = True) -> Iterator[Served]:
    """The service on its own thread's loop, its drills on a new ``PacedLab`` (or none:
    the deployment has no drills)."""
    lab = PacedLab()
    directory = StaticGns3Directory(
        {"alice": (PASSWORD, ALICE)},
        [
            {"project_id": OPEN, "name": "Drill lab", "status": "opened"},
            {"project_id": CLOSED, "name": "Shelved lab", "status": "closed"},
        ],
    )
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop = asyncio.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        try:
            drills = lab.drills() if with_drills else None
            async with run_service(drills=drills, directory=directory) as service:
                box["service"] = service
                ready.set()
                await stop.wait()
        except BaseException as error:
            box["error"] = error
            ready.set()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(60), "the service did not start"
    if "error" in box:
        thread.join(30)
        loop.close()
        raise box["error"]
    service: Service = box["service"]
    try:
        yield Served(service.base_url, lab, loop, service)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        assert not thread.is_alive(), "the service did not stop"
        loop.close()
        assert "error" not in box, box.get("error")


@pytest.fixture
def served() -> Iterator[Served]:
    with serving() as running:
        yield running


def open_page(
    browser: Browser, served: Served, viewport: ViewportSize
) -> contextlib.AbstractContextManager[Page]:
    return new_page(browser, served.url, viewport, has_touch=viewport is PHONE)


@pytest.fixture
def screen(browser: Browser, served: Served) -> Iterator[Page]:
    with open_page(browser, served, DESKTOP) as page:
        yield page


@pytest.fixture
def phone(browser: Browser, served: Served) -> Iterator[Page]:
    with open_page(browser, served, PHONE) as page:
        yield page


def loaded_panel(page: Page, *, sign_in: bool = True) -> Locator:
    """The Practice panel of the signed-in page once it has asked for a running drill."""
    if sign_in:
        page.goto("/")
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
    page.locator(f"body[data-project='{OPEN}']").wait_for(state="attached")
    panel = page.get_by_role("region", name="Practice")
    expect(panel).to_be_visible()
    expect(panel.locator("#practice-summary")).not_to_have_text("Loading…")
    return panel


def practice_panel(page: Page, *, sign_in: bool = True) -> Locator:
    """The Practice panel of the signed-in page, unfolded."""
    panel = loaded_panel(page, sign_in=sign_in)
    toggle = panel.locator("#practice-toggle")
    if toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    expect(panel.locator("#practice-body")).to_be_visible()
    return panel


def assert_no_answer(page: Page) -> None:
    """Nothing of the fault anywhere in the page (text, attributes, storage)."""
    html = page.content()
    stored = page.evaluate("JSON.stringify([{...sessionStorage}, {...localStorage}])")
    for secret in secrets_of(HELLO):
        assert secret not in html, secret
        assert secret not in stored, secret


def graded(page: Page, click: Callable[[], None]) -> dict[str, Any]:
    """The grade the service answered to ``click`` (the page's own request)."""
    with page.expect_response(lambda r: r.url.endswith("/grade")) as answered:
        click()
    response: Response = answered.value
    assert response.status == 200, response.text()
    body: dict[str, Any] = response.json()
    return body


def assert_grade_shown(panel: Locator, grade: dict[str, Any]) -> None:
    """Each condition of the service's grade on the page: its name, verdict, evidence."""
    rows = panel.locator(".practice-condition")
    expect(rows).to_have_count(len(grade["conditions"]))
    expect(rows.locator(".practice-condition-name")).to_have_text(
        [c["name"] for c in grade["conditions"]]
    )
    expect(rows.locator(".intent-status")).to_have_text(
        ["pass" if c["met"] else "fail" for c in grade["conditions"]]
    )
    expect(rows.locator(".practice-evidence")).to_have_text(
        [c["evidence"] for c in grade["conditions"]]
    )


def test_a_drill_from_the_page_start_hints_partial_and_full_grades_then_the_answer(
    screen: Page, served: Served
) -> None:
    lab = served.lab
    healthy = served.run(lab.lab.state)
    panel = practice_panel(screen)
    expect(panel.locator("#practice-summary")).to_have_text("No drill running")
    expect(panel.get_by_label("Topic").locator("option")).to_have_text(
        ["Any topic (2 faults)", "BGP (1)", "OSPF (1)"]
    )
    panel.get_by_label("Topic").select_option("ospf")
    expect(panel.get_by_label("Difficulty").locator("option")).to_have_text(
        ["Any difficulty", "2 (intermediate) (1)"]
    )
    panel.get_by_label("Difficulty").select_option("2")

    # The start runs until the symptoms are seen failing: the page says so meanwhile.
    served.run(lab.gate.clear)
    with screen.expect_request(lambda r: r.url.endswith("/drills") and r.method == "POST") as sent:
        panel.get_by_role("button", name="Start a drill").click()
    assert sent.value.post_data_json == {"topic": "ospf", "difficulty": 2}
    start = panel.locator("#practice-start")
    expect(start).to_have_text("Starting…")
    expect(start).to_be_disabled()
    expect(panel.locator("#practice-progress")).to_contain_text("Starting the drill")
    expect(panel.locator("#practice-summary")).to_have_text("Starting a drill…")
    served.run(lab.gate.set)

    drill = panel.get_by_role("region", name="Your drill")
    expect(drill.get_by_role("list", name="Symptoms").locator("li")).to_have_text(
        ["R1 and R2 are OSPF Full", "PC1 reaches PC2"]
    )
    expect(drill).to_contain_text("OSPF, difficulty 2 on two FRR routers")
    expect(panel.locator("#practice-progress")).to_be_hidden()
    expect(panel.get_by_role("form", name="Start a drill")).to_be_hidden()
    expect(panel.locator("#practice-results")).to_be_hidden()  # it would name faults
    assert served.run(lambda: list(lab.lab.nodes["R2"])) == list(HELLO.inject[0].lines)  # type: ignore[union-attr]
    assert_no_answer(screen)

    drill.get_by_role("button", name="Next hint (3 left)").click()
    hints = drill.get_by_role("list", name="Hints").locator("li")
    expect(hints).to_have_text([HELLO.hints[0]])
    drill.get_by_role("button", name="Next hint (2 left)").click()
    expect(hints).to_have_text(list(HELLO.hints[:2]))
    expect(drill.get_by_role("button", name="Next hint (1 left)")).to_be_enabled()

    # A wrong fix: R1 routes around the fault (a line a page writing HTML would run).
    served.run(lambda: lab.lab.nodes["R1"].append(HOSTILE_ROUTE))
    wrong = graded(screen, drill.get_by_role("button", name="Grade me").click)
    met = {c["name"]: c["met"] for c in wrong["conditions"]}
    assert met["R1 and R2 are OSPF Full"] is False and met["PC1 reaches PC2"] is True
    assert met["no static route added on R1"] is False and not wrong["fixed"]
    grade = drill.get_by_role("region", name="Your grade")
    share = sum(met.values())
    expect(grade.locator(".practice-score")).to_have_text(
        f"Score {round(wrong['score'] * 100)}%: {share} of {len(met)} conditions met, "
        "not fixed yet."
    )
    assert 0 < wrong["score"] < 1
    expect(grade.locator(".practice-meta")).to_contain_text("2 hints used.")
    assert_grade_shown(panel, wrong)
    expect(grade).to_contain_text(HOSTILE_ROUTE)  # as text
    assert screen.locator("#practice img").count() == 0
    assert screen.evaluate("window.pwned") is None
    expect(grade).to_have_attribute("data-fixed", "false")
    expect(panel.locator("#practice-summary")).to_have_text(
        f"OSPF drill running: last grade {round(wrong['score'] * 100)}%"
    )
    screenshot(screen, "practice-panel-grade")
    assert_no_answer(screen)

    # The right fix: the route taken back, R2's hellos as R1's.
    def right_fix() -> None:
        lab.lab.nodes["R1"].remove(HOSTILE_ROUTE)
        lab.lab.nodes["R2"] = [line for line in lab.lab.nodes["R2"] if "hello" not in line]

    served.run(right_fix)
    right = graded(screen, drill.get_by_role("button", name="Grade me").click)
    assert right["score"] == 1.0 and right["fixed"] is True
    expect(grade.locator(".practice-score")).to_have_text(
        f"Score 100%: {len(right['conditions'])} of {len(right['conditions'])} conditions "
        "met, fixed."
    )
    expect(grade).to_have_attribute("data-fixed", "true")
    assert_grade_shown(panel, right)
    assert_no_answer(screen)

    drill.get_by_role("button", name="End", exact=True).click()
    ended = panel.get_by_role("region", name="Drill ended")
    answer = ended.get_by_role("region", name="The answer")
    expect(answer.get_by_role("heading")).to_have_text(f"The answer: {HELLO.title}")
    expect(answer.locator("dd")).to_have_text([HELLO.id, "ospf hello mismatch", "R2 eth1"])
    broke = answer.get_by_role("list", name="What broke the lab")
    expect(broke.locator("pre")).to_have_text(["\n".join(HELLO.inject[0].lines)])  # type: ignore[union-attr]
    fix = answer.get_by_role("list", name="The reference fix")
    expect(fix.locator("pre")).to_have_text(["\n".join(HELLO.fix[0].lines)])  # type: ignore[union-attr]
    expect(fix).to_contain_text("On R2:")
    expect(ended.locator(".practice-restore")).to_have_text(
        "The lab is restored: it reads exactly as before the drill."
    )
    expect(ended.locator(".practice-score").first).to_contain_text("Drill ended: 100%")
    expect(panel.get_by_role("region", name="Your drill")).to_be_hidden()
    assert served.run(lab.lab.state) == healthy
    screenshot(screen, "practice-panel-answer")

    outcomes = panel.locator("#practice-history li")  # in the folded "Your results"
    expect(outcomes).to_have_count(1)  # read again with this drill in them
    start_form = panel.get_by_role("form", name="Start a drill")
    expect(start_form).to_be_hidden()  # until the answer has been read
    ended.get_by_role("button", name="Practice again").click()
    expect(ended).to_be_hidden()
    expect(start_form).to_be_visible()
    results = panel.locator("#practice-results")
    results.locator("summary").click()
    expect(results.get_by_role("list", name="Finished drills").locator("li")).to_have_count(1)
    expect(outcomes.first).to_contain_text(f"{HELLO.id} OSPF, difficulty 2 · 100%")
    expect(results.get_by_role("list", name="Best scores").locator("li")).to_have_text(
        [f"{HELLO.id} 100%"]
    )
    expect(panel.locator("#practice-summary")).to_have_text("No drill running")

    # The same fault again: the results, which name it, leave the page while it runs.
    panel.get_by_label("Topic").select_option("ospf")
    panel.get_by_role("button", name="Start a drill").click()
    expect(panel.get_by_role("region", name="Your drill")).to_be_visible()
    expect(outcomes).to_have_count(0)
    assert_no_answer(screen)


def test_a_running_drill_is_resumed_when_the_page_loads(
    phone: Page, served: Served, browser: Browser
) -> None:
    panel = practice_panel(phone)
    panel.get_by_label("Topic").select_option("ospf")
    panel.get_by_role("button", name="Start a drill").click()
    drill = panel.get_by_role("region", name="Your drill")
    drill.get_by_role("button", name="Next hint (3 left)").click()
    expect(drill.get_by_role("list", name="Hints").locator("li")).to_have_text([HELLO.hints[0]])
    drill.get_by_role("button", name="Grade me").click()
    expect(drill.get_by_role("region", name="Your grade")).to_be_visible()

    phone.reload()
    panel = practice_panel(phone, sign_in=False)
    drill = panel.get_by_role("region", name="Your drill")
    expect(drill.get_by_role("list", name="Symptoms").locator("li")).to_have_text(
        ["R1 and R2 are OSPF Full", "PC1 reaches PC2"]
    )
    expect(drill.get_by_role("list", name="Hints").locator("li")).to_have_text([HELLO.hints[0]])
    expect(drill.get_by_role("button", name="Next hint (2 left)")).to_be_enabled()
    expect(panel.locator("#practice-summary")).to_contain_text("OSPF drill running: last grade")
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert_no_answer(phone)
    screenshot(phone, "practice-panel-phone")

    # A fresh browser (another machine: nothing remembered, so the panel starts folded)
    # finds it as well, and a running drill unfolds the panel.
    with open_page(browser, served, DESKTOP) as other:
        other_panel = loaded_panel(other)
        expect(other_panel.locator("#practice-toggle")).to_have_attribute("aria-expanded", "true")
        expect(other_panel.get_by_role("region", name="Your drill")).to_be_visible()
        assert_no_answer(other)

    drill.get_by_role("button", name="Give up").click()
    ended = panel.get_by_role("region", name="Drill ended")
    expect(ended.locator(".practice-score").first).to_contain_text("You gave up")
    expect(ended.get_by_role("region", name="The answer")).to_contain_text(HELLO.title)
    with served.api() as api:
        assert api.get("/active").status_code == 404
        [outcome] = api.get("/history").json()
    assert outcome["given_up"] is True and outcome["fault_id"] == HELLO.id


def test_a_start_refused_says_what_the_lab_lacks_that_a_drill_runs_or_that_it_did_not_take(
    screen: Page, served: Served
) -> None:
    lab = served.lab
    healthy = served.run(lab.lab.state)
    panel = practice_panel(screen)
    message = panel.locator("#practice-message")

    served.run(lambda: setattr(lab.lab, "missing", ("R2 is stopped: start it",)))
    panel.get_by_label("Topic").select_option("ospf")
    panel.get_by_role("button", name="Start a drill").click()
    expect(message.locator("p")).to_have_text("This lab does not have what the drill needs:")
    expect(message.locator("li")).to_have_text(["R2 is stopped: start it"])
    expect(message).to_have_attribute("data-kind", "error")
    expect(panel.get_by_role("button", name="Start a drill")).to_be_enabled()
    expect(panel.get_by_role("region", name="Your drill")).to_be_hidden()
    screenshot(screen, "practice-panel-missing")
    served.run(lambda: setattr(lab.lab, "missing", ()))

    # The BGP fault's symptoms hold on this lab: it does not take, and the lab is put back.
    panel.get_by_label("Topic").select_option("bgp")
    with screen.expect_response(lambda r: r.url.endswith("/drills")) as answered:
        panel.get_by_role("button", name="Start a drill").click()
    refused = answered.value
    assert refused.status == 502 and refused.json()["code"] == "drill_not_started"
    assert refused.json()["restored"] is True
    expect(message.locator("p")).to_have_text(refused.json()["detail"])
    expect(message).to_contain_text("the lab was restored as it was.")
    expect(message).to_have_attribute("data-restored", "true")
    assert served.run(lab.lab.state) == healthy
    for secret in secrets_of(BGP):
        assert secret not in screen.content(), secret

    # Bob's drill on the project: Alice is told one is running, and sees none of it.
    with served.api(BOB) as bob:
        started = bob.post("", json={"topic": "ospf"})
    assert started.status_code == 201, started.text
    panel.get_by_label("Topic").select_option("")
    panel.get_by_role("button", name="Start a drill").click()
    expect(message.locator("p")).to_have_text(
        "This project already has a drill running: end it (or give up) before starting another."
    )
    expect(panel.get_by_role("region", name="Your drill")).to_be_hidden()
    expect(panel.get_by_role("button", name="Start a drill")).to_be_enabled()


def test_a_drill_the_tutor_starts_from_chat_shows_in_the_panel(
    screen: Page, served: Served
) -> None:
    served.run(
        lambda: served.service.model.add(
            tool_reply(("practice_drill", {"action": "start", "topic": "ospf"})),
            text_reply("A fault is in the lab: R1 and R2 are not OSPF Full. Where would you look?"),
        )
    )
    panel = loaded_panel(screen)
    expect(panel.locator("#practice-summary")).to_have_text("No drill running")
    screen.get_by_label("Message").fill("give me an OSPF fault")
    screen.get_by_role("button", name="Send").click()
    screen.get_by_role("button", name="Approve").click()  # starting a drill changes the lab
    expect(screen.get_by_role("article", name="Copilot answer")).to_contain_text(
        "Where would you look?"
    )
    drill = panel.get_by_role("region", name="Your drill")
    expect(drill.get_by_role("list", name="Symptoms").locator("li")).to_have_text(
        ["R1 and R2 are OSPF Full", "PC1 reaches PC2"]
    )
    expect(panel.locator("#practice-toggle")).to_have_attribute("aria-expanded", "true")
    expect(panel.locator("#practice-summary")).to_have_text("OSPF drill running: not graded yet")
    assert_no_answer(screen)


def test_a_closed_project_offers_no_start(screen: Page, served: Served) -> None:
    panel = practice_panel(screen)
    screen.get_by_label("GNS3 project").select_option(CLOSED)
    screen.locator(f"body[data-project='{CLOSED}']").wait_for(state="attached")
    expect(panel.locator("#practice-summary")).to_have_text("Open the project to practise")
    start = panel.get_by_role("button", name="Start a drill")
    expect(start).to_be_disabled()
    expect(start).to_have_attribute("title", "Open the project in GNS3 to practise on its lab")


def test_a_deployment_without_drills_shows_no_panel(browser: Browser) -> None:
    with serving(with_drills=False) as served, open_page(browser, served, DESKTOP) as page:
        with page.expect_response(lambda r: r.url.endswith("/drills/catalog")) as answered:
            page.goto("/")
            page.get_by_label("Username").fill("alice")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
        assert answered.value.status == 501
        page.locator(f"body[data-project='{OPEN}']").wait_for(state="attached")
        expect(page.get_by_role("region", name="Intent")).to_be_visible()
        expect(page.locator("#practice")).to_be_hidden()

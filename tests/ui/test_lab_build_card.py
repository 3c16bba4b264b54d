"""A lab build on the page (issue 39): the approval card of ``build_lab`` draws the plan (an
SVG of the nodes and links with their ports, the node and link lists, each device's lines
in a fold of its own, the checks that decide), then the build's progress shows per stage
and device as it arrives, and its verdict: pass or fail, the failing checks, whether it was
rolled back.

The first test is the whole product: the scripted model calls the real ``build_lab`` in a
lab-automation chat, against the real gns3-server. Its VPCS nodes cannot start on this
machine (no uBridge, no VPCS binary), so the build is made (nodes, link), its starts and
consoles fail, its check fails and the real rollback deletes what it made: checked in GNS3.
A plan whose checks pass needs running routers (``tests/lab/test_lab_build_lab.py``); the
second test draws one on the page from a scripted stream in the service's own wire format
(``copilot_event``) whose preview and result are made by the real code (``preview_of``,
``VerificationPlan``, ``VerifiedChange.to_result``, ``build_result``), and only the
progress lines are written here, as the builder and the gate say them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from adapters.gns3.labs._build import BuiltDevice, BuiltLink, BuiltNode, LabBuildReport
from adapters.gns3.labs._build_steps import build_result
from adapters.gns3.labs._build_tool import preview_of
from adapters.web import copilot_event
from copilot_core import ToolResult
from copilot_core.events import (
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    DoneEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
    ToolStartEvent,
    TurnEvent,
)
from copilot_core.intent import (
    CheckResult,
    CheckStatus,
    Evidence,
    IntentResult,
    VerificationPlan,
    VerifiedChange,
    checks_adapter,
)
from copilot_core.labs import LabIntent, parse_plan, plan_data, plan_from_intent
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.ui.conftest import Lab, Service, choose_project, screenshot, scripted_stream, sign_in

pytestmark = [pytest.mark.timeout(240), pytest.mark.gns3]

HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1">'


def vpcs_plan(a: str, b: str) -> dict[str, Any]:
    return {
        "summary": f"two PCs on one LAN {HOSTILE}",
        "nodes": [
            {"name": a, "platform": "vpcs", "x": -150, "y": 40},
            {"name": b, "platform": "vpcs", "x": 150, "y": -40},
        ],
        "links": [f"{a}:e0-{b}:e0"],
        "addressing": {f"{a}:e0": "10.9.0.1/24", f"{b}:e0": "10.9.0.2/24"},
        "config": {a: ["ip 10.9.0.1/24"], b: ["ip 10.9.0.2/24"]},
        "checks": [
            {"kind": "reachability", "from": a, "to": "10.9.0.2",
             "name": f"{HOSTILE} {a} reaches {b}"}
        ],
    }  # fmt: skip


# Records, in order, each stage, device row and verdict as it is added to the page.
RECORD = """() => {
  const log = (window.buildLog = []);
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (node.matches(".lb-stage")) log.push(`stage:${node.dataset.stage}`);
        if (node.matches(".lb-device")) log.push(`device:${node.dataset.device}`);
        if (node.matches(".lb-outcome")) log.push("outcome");
      }
    }
  }).observe(document.getElementById("messages"), { childList: true, subtree: true });
}"""


def gns3_node_names(gns3: RealGns3Server, token: str, project: str) -> list[str]:
    nodes = httpx.get(
        f"{gns3.url}/v3/projects/{project}/nodes",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert nodes.status_code == 200, nodes.text
    return [str(n["name"]) for n in nodes.json()]


def test_a_build_is_drawn_on_its_card_its_progress_shows_and_its_rollback_is_said(
    page: Page,
    configured: Lab,
    llm: ScriptedOpenAIServer,
    service: Service,
    gns3_server: RealGns3Server,
) -> None:
    # No standing intent of another test joins the build's checks.
    with service.api(configured.token) as api:
        cleared = api.put(f"/projects/{configured.opened}/intent", json={"checks": []})
        assert cleared.status_code == 200, cleared.text
    a, b = "BuildA", "BuildB"
    plan = vpcs_plan(a, b)
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("build_lab", {"plan": plan, "wait_s": 0})]),
        Reply(text="The check failed, so the build was rolled back."),
        Reply(text="Lab build"),
    )
    sign_in(page)
    choose_project(page, configured.opened)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Agent", exact=True).select_option("copilot")
    page.get_by_label("Chat mode").select_option("lab_automation_assistant")
    page.evaluate(RECORD)
    page.get_by_label("Message", exact=True).fill("Build two PCs on one LAN")
    page.get_by_label("Message", exact=True).press("Enter")

    card = page.get_by_role("region", name="Approval for build_lab")
    expect(card.locator("h3")).to_contain_text("Build the lab: two PCs on one LAN")
    picture = card.get_by_role("img", name="The lab to build: 2 nodes, 1 link")
    expect(picture.locator(".lb-node")).to_have_count(2)
    expect(picture.locator(".lb-name")).to_have_text([a, b])
    expect(picture.locator(".lb-link .lb-port")).to_have_text(["e0", "e0"])
    # Drawn where the plan puts them: a to the left of b.
    xa = picture.locator(f".lb-node[data-name='{a}']").bounding_box()
    xb = picture.locator(f".lb-node[data-name='{b}']").bounding_box()
    assert xa is not None and xb is not None and xa["x"] < xb["x"], (xa, xb)
    # The template is the server's, as the planner resolved it.
    hosts = [f"{a} host (vpcs, template VPCS)", f"{b} host (vpcs, template VPCS)"]
    expect(card.locator(".lb-nodes li")).to_have_text(hosts)
    expect(card.locator(".lb-links li")).to_have_text(
        [f"{a} e0 10.9.0.1/24 — {b} e0 10.9.0.2/24 10.9.0.0/24"]
    )
    folds = card.locator(".lb-device-lines")
    expect(folds.locator("summary")).to_have_text([f"{a}: 1 line", f"{b}: 1 line"])
    expect(folds.first.locator("pre")).to_be_hidden()  # folded until opened
    folds.first.locator("summary").click()
    expect(folds.first.locator("pre")).to_have_text("ip 10.9.0.1/24")
    # The checks that decide, the hostile name as text (no element is made of it).
    expect(card.locator(".approval-checks li")).to_have_text([f"{HOSTILE} {a} reaches {b}"])
    expect(card.locator(".approval-checks-title")).to_contain_text("rolled back if one fails")
    assert card.locator("img").count() == 0
    # The generic listing gives way to the drawing.
    expect(card.locator(".approval-topology")).to_have_count(0)
    card.get_by_role("button", name="Approve").click()

    tool = page.locator(".tool-card").last
    expect(tool.locator(".tool-status")).to_have_text("failed", timeout=120_000)
    progress = tool.get_by_role("region", name="Build progress")
    stages = progress.locator(".lb-stage")
    expect(stages.locator(".lb-stage-name")).to_have_text(
        [
            "Checks before the build",
            "Restore point",
            "Nodes",
            "Links",
            "Start",
            "Configuration",
            "Checks",
            "Rollback",
            "Checks after the rollback",
        ]
    )
    nodes = progress.locator(".lb-stage[data-stage='nodes']")
    expect(nodes.locator(".lb-device-name")).to_have_text([a, b])
    expect(nodes.locator(".lb-device-state")).to_have_text(["created", "created"])
    expect(nodes).to_have_attribute("data-state", "done")
    # GNS3 refused both starts (no VPCS binary): no device said it started.
    start = progress.locator(".lb-stage[data-stage='start']")
    expect(start).to_have_attribute("data-state", "partial")
    expect(start.locator(".lb-note")).to_have_text(["0 of 2 said done"])
    configure = progress.locator(".lb-stage[data-stage='configure']")
    # Each device's row (configured in parallel: in either order) ends on the builder's
    # line saying why it took no configuration.
    for name in (a, b):
        row = configure.locator(f".lb-device[data-device='{name}']")
        expect(row).to_have_attribute("data-state", "fail")
        expect(row.locator(".lb-device-state")).to_contain_text(
            f"not configured ({name} is stopped"
        )
    expect(configure.locator(".lb-device")).to_have_count(2)
    expect(progress.locator(".lb-stage[data-stage='checks']")).to_have_attribute(
        "data-state", "fail"
    )
    # Drawn as the build went: every stage and device before the verdict.
    log: list[str] = page.evaluate("window.buildLog")
    assert "outcome" in log and log.index("stage:nodes") < log.index("stage:configure"), log
    assert log.index("stage:rollback") < log.index("outcome"), log
    assert log.index("device:BuildA") < log.index("stage:links"), log

    outcome = tool.get_by_role("region", name="Build result")
    expect(outcome).to_have_attribute("data-verdict", "fail")
    expect(outcome.locator(".lb-verdict")).to_contain_text("the build was rolled back")
    expect(outcome.locator(".lb-rolled-back")).to_have_text("Rolled back: yes.")
    failed = outcome.locator(".lb-failed li")
    expect(failed).to_have_count(1)
    expect(failed.locator("strong")).to_have_text(f" {HOSTILE} {a} reaches {b}")
    # What was not built (the starts run in parallel: in either order).
    problems = outcome.locator(".lb-problems li")
    expect(problems).to_have_count(4)
    said = {text.split(":")[0] for text in problems.all_inner_texts()}
    assert said == {f"{n} was not {v}" for n in (a, b) for v in ("started", "configured")}, said
    assert tool.locator("img").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None
    expect(page.locator(".message.assistant").last).to_contain_text("rolled back")
    expect(page.locator("#messages[data-state='saved']")).to_have_count(1)
    # GNS3 has neither PC: the rollback deleted what the build made.
    assert not {a, b} & set(gns3_node_names(gns3_server, configured.token, configured.opened))
    drawing = page.get_by_role("group", name="Topology")
    expect(drawing.locator(".node-name").filter(has_text="BuildA")).to_have_count(0)
    outcome.scroll_into_view_if_needed()
    screenshot(page, "lab-build-rolled-back")

    page.reload()  # the saved history says the same verdict
    outcome = page.locator(".tool-card").last.get_by_role("region", name="Build result")
    expect(outcome).to_have_attribute("data-verdict", "fail")
    expect(outcome.locator(".lb-rolled-back")).to_have_text("Rolled back: yes.")
    expect(outcome.locator(".lb-failed strong")).to_have_text(f" {HOSTILE} {a} reaches {b}")


# ---------------------------------------------------------------------- a passing build
def _triangle() -> dict[str, Any]:
    intent = LabIntent.model_validate(
        {
            "routers": ["R1", "R2", "R3"],
            "links": [["R1", "R2"], ["R2", "R3"], ["R3", "R1"]],
            "hosts": [{"name": "H1", "behind": "R1"}, {"name": "H2", "behind": "R2"}],
            "pool": "10.10.0.0/16",
        }
    )
    return plan_data(plan_from_intent(intent))


#: What the builder and the gate say as a build goes (their own sentences).
def _progress_lines(plan: dict[str, Any]) -> list[str]:
    names = [n["name"] for n in plan["nodes"]]
    checks = len(plan["checks"])
    lines = [
        f"checking {checks} check(s) before the change",
        "taking a restore point, then making the change",
        f"creating {len(names)} node(s)",
        *[f"{n}: created" for n in names],
        f"linking {len(plan['links'])} port pair(s)",
        f"starting {len(names)} node(s)",
        *[f"{n}: started" for n in names],
        f"configuring {len(names)} device(s), 4 at a time",
    ]
    for n in names:
        count = len(plan["config"][n])
        lines += [f"{n}: waiting for its console", f"{n}: sending {count} line(s)",
                  f"{n}: configured ({count} lines, 2.1 s)"]  # fmt: skip
    waiting = "H1 reaches H2, H2 reaches H1"
    lines += [
        f"checking {checks} check(s) after the change (up to 90 s)",
        f"2 of {checks} check(s) not holding yet ({waiting}); trying again, 80 s left",
    ]
    return lines


@pytest.fixture
def passing_build(configured: Lab) -> Iterator[tuple[str, dict[str, Any]]]:
    session = "00000000-0000-4000-8000-00000000b1d0"
    plan = _triangle()
    parsed = parse_plan(plan)
    checks = tuple(checks_adapter.validate_python(plan["checks"]))
    verification = VerificationPlan(checks, (), "rollback", 90.0)
    preview = replace(preview_of(parsed), verification=verification.to_dict()).to_dict()
    arguments = {"plan": plan}
    report = LabBuildReport(
        nodes=tuple(BuiltNode(n.name, f"id-{n.name}", True) for n in parsed.nodes),
        links=tuple(BuiltLink("-".join(k.ends), f"l{i}", True) for i, k in enumerate(parsed.links)),
        devices=tuple(BuiltDevice(c.node, len(c.lines), True, None, 2.1) for c in parsed.config),
        timings={"total": 41.0},
    )  # fmt: skip
    result = build_result(report, None, ["no restore point was taken: this service keeps none"])
    held = IntentResult(tuple(CheckResult(c, CheckStatus.PASS, True, (), 2, 9.0) for c in checks))
    before = IntentResult(
        tuple(CheckResult(c, CheckStatus.ERROR, None, (), 1, 0.0) for c in checks)
    )
    verified = VerifiedChange(verification, result, before, tuple(range(len(checks))), held,
                              reason="every check held").to_result()  # fmt: skip
    output = verified.output

    def wire(seq: int, event: Any) -> dict[str, Any]:
        return copilot_event(TurnEvent(seq, session, event))

    events: list[Any] = [
        ToolCallEvent(
            "b1", "build_lab", json.dumps(arguments), True, title="Build a lab of 5 nodes"
        ),
        ApprovalRequiredEvent("ap1", "b1", "build_lab", arguments, preview),
        ApprovalResolvedEvent("ap1", "b1", "approve", "admin"),
        ToolStartEvent("build_lab", "b1"),
        *[ToolProgressEvent("build_lab", "b1", line + "\n") for line in _progress_lines(plan)],
        ToolEndEvent("build_lab", "b1", output, "success"),
        DoneEvent(None),
    ]
    streamed = [
        (0.05 if isinstance(e, ToolProgressEvent) else 0.2, wire(i + 1, e))
        for i, e in enumerate(events)
    ]
    with scripted_stream(streamed, "t-build") as url:
        yield url, plan


@pytest.mark.parametrize("width", [1366, 390])
def test_a_passing_build_of_a_triangle_shows_its_picture_progress_and_pass(
    page: Page, configured: Lab, passing_build: tuple[str, dict[str, Any]], width: int
) -> None:
    url, plan = passing_build
    page.set_viewport_size({"width": width, "height": 900 if width > 500 else 844})
    sign_in(page)
    choose_project(page, configured.opened)
    if width < 500:  # the sessions are a drawer on a phone
        page.get_by_role("button", name="Show sessions").click()
    page.get_by_role("button", name="+ New chat").click()
    page.route("**/chat/stream", lambda route: route.continue_(url=url))
    page.get_by_label("Message", exact=True).fill("Build a triangle")
    page.get_by_label("Message", exact=True).press("Enter")

    card = page.get_by_role("region", name="Approval for build_lab")
    picture = card.get_by_role("img", name="The lab to build: 5 nodes, 5 links")
    expect(picture.locator(".lb-node[data-kind='router']")).to_have_count(3)
    expect(picture.locator(".lb-node[data-kind='host']")).to_have_count(2)
    expect(picture.locator(".lb-port")).to_have_count(10)
    expect(card.locator(".lb-links li").first).to_have_text(
        "R1 eth0 10.10.0.1/30 — R2 eth0 10.10.0.2/30 10.10.0.0/30"
    )
    expect(card.locator(".lb-device-lines summary")).to_have_count(5)
    labels = [c["name"] for c in plan["checks"]]
    expect(card.locator(".approval-checks li")).to_have_text(labels)
    expect(card).to_have_attribute("data-state", "approve")
    # The picture is legible: a node's drawing is at least 24 px wide at either width.
    box = picture.locator(".lb-node .lb-shape").first.bounding_box()
    assert box is not None and box["width"] >= 24, box
    if width > 500:
        card.locator(".lb-picture").scroll_into_view_if_needed()
        screenshot(page, "lab-build-card")

    tool = page.locator(".tool-card").last
    expect(tool.locator(".tool-status")).to_have_text("done")
    progress = tool.get_by_role("region", name="Build progress")
    expect(progress.locator(".lb-stage-name")).to_have_text(
        ["Checks before the build", "Restore point", "Nodes", "Links", "Start",
         "Configuration", "Checks"]
    )  # fmt: skip
    configure = progress.locator(".lb-stage[data-stage='configure'] .lb-device")
    expect(configure).to_have_count(5)
    expect(configure.locator(".lb-device-state").first).to_have_text("configured (17 lines, 2.1 s)")
    expect(progress.locator(".lb-stage[data-stage='checks'] .lb-note")).to_contain_text(
        ["trying again"]
    )
    expect(progress).to_have_attribute("data-state", "done")
    for stage in progress.locator(".lb-stage").all():
        expect(stage).to_have_attribute("data-state", "done")
    outcome = tool.get_by_role("region", name="Build result")
    expect(outcome).to_have_attribute("data-verdict", "pass")
    expect(outcome.locator(".lb-verdict")).to_have_text(
        f"pass Pass: built, and every check holds ({len(labels)} checks)."
    )
    expect(outcome.locator(".lb-rolled-back")).to_have_text("Rolled back: no.")
    expect(outcome.locator(".lb-failed")).to_have_count(0)
    # Nothing sticks out of the screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if width > 500:
        progress.scroll_into_view_if_needed()
        screenshot(page, "lab-build-progress")


# ---------------------------------------------------------------------- a plan without positions
DRAW_A_FILE_PLAN = """async () => {
  const { buildPreview } = await import("/ui/js/labbuild.js");
  const event = {
    tool_name: "build_lab",
    preview: { summary: "a plan as a file gives it", devices: {}, topology: [] },
    arguments: { plan: {
      nodes: [{ name: "A", platform: "frr" }, { name: "B", platform: "frr" },
              { name: "C", platform: "linux" }],
      links: ["A:eth-1-B:eth0", { ends: ["B:eth1", "C:eth0"], prefix: "10.0.0.0/24" }],
      addressing: { "B:eth1": "10.0.0.1/24" },
      config: { A: ["hostname A", "<b>not bold</b>"] },
    } },
  };
  const box = buildPreview(event);
  document.body.append(box);
  const at = [...box.querySelectorAll(".lb-node")].map((n) => n.getAttribute("transform"));
  return {
    at,
    kinds: [...box.querySelectorAll(".lb-node")].map((n) => n.dataset.kind),
    ports: [...box.querySelectorAll(".lb-port")].map((n) => n.textContent),
    links: [...box.querySelectorAll(".lb-links li")].map((n) => n.textContent),
    lines: [...box.querySelectorAll(".lb-lines")].map((n) => n.textContent),
    bold: box.querySelectorAll("b").length,
  };
}"""


def test_a_plan_without_positions_or_a_preview_is_laid_out_from_the_call(
    page: Page, service: Service
) -> None:
    # The module itself in the page: a plan whose preview lists no topology (the call's
    # plan is read instead), with no positions (laid out on a circle), a port name with a
    # dash and a link given as a mapping.
    page.goto("/")
    drawn = page.evaluate(DRAW_A_FILE_PLAN)
    assert len(set(drawn["at"])) == 3, drawn  # three places, not one on top of another
    assert drawn["kinds"] == ["router", "router", "host"], drawn
    assert drawn["ports"] == ["eth-1", "eth0", "eth1", "eth0"], drawn
    assert drawn["links"] == ["A eth-1 — B eth0", "B eth1 10.0.0.1/24 — C eth0 10.0.0.0/24"]
    assert drawn["lines"] == ["hostname A\n<b>not bold</b>"] and drawn["bold"] == 0, drawn


# ---------------------------------------------------------------------- the verdict's shape
SHOW_OUTCOME = """async (output) => {
  const { buildOutcome } = await import("/ui/js/labbuild.js");
  const box = buildOutcome(output);
  document.body.append(box);
  const texts = (selector) => [...box.querySelectorAll(selector)].map((n) => n.textContent);
  box.remove();
  return {
    verdict: texts(".lb-verdict")[0],
    failed: texts(".lb-failed li strong"),
    still: texts(".lb-still-failing li strong"),
    evidence: texts(".lb-still-failing .lb-evidence"),
  };
}"""


def test_a_builds_verdict_reads_the_result_that_says_each_check_once(
    page: Page, service: Service
) -> None:
    # Made by the real code (VerifiedChange.to_result): a build that passed names its
    # checks (their count is its summary's); one rolled back lists in full the checks that
    # failed after it and, after the rollback, only those that held before the build.
    ping, ospf = checks_adapter.validate_python(
        [{"kind": "reachability", "from": "H1", "to": "10.10.2.10", "name": "H1 reaches H2"},
         {"kind": "ospf_neighbor", "node": "R9", "neighbor": "R8", "name": "R9 and R8 are Full"}]
    )  # fmt: skip
    plan = VerificationPlan((ping,), (ospf,))
    built = ToolResult({"status": "success", "nodes": [], "restore_point_id": "rp"})
    lines = ("8.8.8.8  1 Init/-  36.4s  R8 eth0",)
    ok = CheckResult(ospf, CheckStatus.PASS, {}, (Evidence("R9", "show ip ospf neighbor"),), 1, 0)
    seen = (Evidence("R9", "show ip ospf neighbor", lines),)
    lost = CheckResult(ospf, CheckStatus.FAIL, {}, seen, 3, 9.0, "R9's OSPF neighbour R8 is init")
    no_reply = CheckResult(ping, CheckStatus.FAIL, {}, (), 3, 9.0, "H1 got no reply")
    passed = VerifiedChange(plan, built, IntentResult((no_reply, ok)), (0, 1),
                            IntentResult((replace(no_reply, status=CheckStatus.PASS), ok)),
                            reason="every check held").to_result()  # fmt: skip
    rolled = VerifiedChange(
        plan, built, IntentResult((no_reply, ok)), (0, 1), IntentResult((no_reply, lost)),
        ToolResult({"status": "success"}), IntentResult((no_reply, lost)),
        "a check failed: the change was rolled back, but not every check holds again",
        ("H1 reaches H2: H1 got no reply",),
    ).to_result()  # fmt: skip
    assert passed.output["verification"]["after"]["checks"] == []  # the new shape, named only
    page.goto("/")
    shown = page.evaluate(SHOW_OUTCOME, passed.output)
    assert shown["verdict"] == "pass Pass: built, and every check holds (2 checks).", shown
    assert shown["failed"] == [] and shown["still"] == [], shown
    shown = page.evaluate(SHOW_OUTCOME, rolled.output)
    assert shown["failed"] == [" H1 reaches H2", " R9 and R8 are Full"], shown
    # H1 reaches H2 did not hold before either: not said again after the rollback.
    assert shown["still"] == [" R9 and R8 are Full"], shown
    assert shown["evidence"] == ["R9> show ip ospf neighbor\n" + lines[0]], shown

"""A relative lab build's approval card on the page (issue 39): the triangle made a square
("R4 between R2 and R3"), its preview made by the real code (``relative_build``,
``relative_preview``) and drawn by the page's own module: the nodes and links it adds,
the link it removes, the nodes it leaves as they are, and only the devices it sends lines
to (R3's undone then added; none for R1 or R2).
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from adapters.gns3.labs._relative import relative_build, relative_preview
from copilot_core.labs import (
    HostIntent,
    LabIntent,
    ResolvedNode,
    ResolvedPlan,
    ResolvedPort,
    plan_data,
    plan_from_intent,
)
from tests.ui.conftest import Service

DRAW = """async (event) => {
  const { buildPreview } = await import("/ui/js/labbuild.js");
  const box = buildPreview(event);
  document.body.append(box);
  const texts = (selector) => [...box.querySelectorAll(selector)].map((n) => n.textContent);
  const drawn = {
    title: texts(".lb-relative h4"),
    removed: texts(".lb-removed li"),
    unchanged: texts(".lb-unchanged"),
    nodes: texts(".lb-nodes li strong"),
    devices: texts(".lb-device-lines summary"),
    r3: texts(".lb-device-lines[data-device='R3'] pre"),
  };
  box.remove();
  return drawn;
}"""


def _square_event() -> dict[str, Any]:
    def intent(routers: tuple[str, ...], links: tuple[tuple[str, str], ...]) -> LabIntent:
        hosts = tuple(HostIntent(name=f"H{r[1]}", behind=r) for r in routers)
        return LabIntent(routers=routers, links=links, hosts=hosts, pool="10.10.0.0/16")

    triangle = plan_from_intent(
        intent(("R1", "R2", "R3"), (("R1", "R2"), ("R2", "R3"), ("R3", "R1")))
    )
    square = plan_from_intent(
        intent(("R1", "R2", "R3", "R4"), (("R1", "R2"), ("R2", "R4"), ("R4", "R3"), ("R3", "R1"))),
        keep=triangle,
    )
    ports = tuple(ResolvedPort(e, 0, 0) for link in square.links for e in link.ends)
    nodes = tuple(ResolvedNode(n.name, "tpl") for n in square.nodes)
    built = relative_build(triangle, ResolvedPlan(square, nodes, ports))
    assert not isinstance(built, list), built
    data = plan_data(square)
    return {
        "tool_name": "build_lab",
        "arguments": {"plan": data, "relative": True, "base": built.base},
        "preview": relative_preview(built).to_dict(),
    }


def test_a_relative_builds_card_shows_only_the_difference(page: Page, service: Service) -> None:
    page.goto("/")
    drawn = page.evaluate(DRAW, _square_event())
    assert drawn["title"] == ["Only the difference from the lab"], drawn
    assert drawn["removed"] == ["Removed link R2:eth1 - R3:eth0"], drawn
    assert drawn["unchanged"] == ["Unchanged: R1, R2, H1, H2, H3"], drawn
    assert drawn["nodes"] == ["R4", "H4"], drawn  # the nodes it adds
    assert drawn["devices"] == ["R3: 12 lines", "R4: 17 lines", "H4: 2 lines"], drawn
    assert drawn["r3"][0].startswith("interface eth0\nno ip address 10.10.0.6/30\nexit"), drawn

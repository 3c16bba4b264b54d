"""Device skills: shipped content, the tool, and reloading from an operator's directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.gns3 import DeviceKind, Gns3Client, Gns3ToolExecutor, SkillLibrary
from copilot_core import CopilotMode, ParsedToolCall, ToolStatus
from tests.adapters.gns3.conftest import make_context


def test_shipped_skills_cover_every_platform():
    library = SkillLibrary()
    assert library.problems == []
    assert library.device_types() == sorted(kind.value for kind in DeviceKind)
    vpcs = library.get("VPCS", "basics")
    assert vpcs is not None
    assert "ip 192.168.1.10/24 192.168.1.1" in vpcs.content
    cisco = library.get("cisco_ios", "configuration")
    assert cisco is not None
    assert "no shutdown" in cisco.content
    assert {s.topic for s in library.list("vpcs")} == {"basics", "troubleshooting"}


def test_reload_picks_up_new_overridden_and_broken_files(tmp_path: Path):
    library = SkillLibrary([tmp_path])
    before = library.reload()
    (tmp_path / "frr-ospf.md").write_text(
        "---\ndevice_type: frr\ntopic: ospf\ntitle: FRR OSPF\nsummary: vtysh\n---\nUse vtysh.\n"
    )
    (tmp_path / "vpcs-basics.yaml").write_text(
        "device_type: vpcs\ntopic: basics\ntitle: Ours\ncontent: house rules\n"
    )
    (tmp_path / "broken.md").write_text("no front matter")
    after = library.reload()
    assert after["skills"] == before["skills"] + 1
    assert after["problems"] == ["broken.md: no YAML front matter"]
    assert library.get("frr", "ospf").content == "Use vtysh."  # type: ignore[union-attr]
    assert library.get("vpcs", "basics").content == "house rules"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", list(CopilotMode))
async def test_device_skills_tool(mode: CopilotMode):
    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))
    context = make_context("p", None, mode)  # skills need no GNS3 credentials

    async def call(args: dict[str, object]):  # type: ignore[no-untyped-def]
        return await executor.execute(
            ParsedToolCall.parse("c", "device_skills", json.dumps(args)), context
        )

    listed = await call({"action": "list", "device_type": "cisco_ios"})
    assert [s["topic"] for s in listed.output["skills"]] == ["basics", "configuration"]
    got = await call({"action": "get", "device_type": "linux", "topic": "basics"})
    assert got.output["title"].startswith("Linux")
    assert "ip route" in got.output["content"]
    missing = await call({"action": "get", "device_type": "linux", "topic": "bgp"})
    assert missing.status is ToolStatus.ERROR
    assert "vpcs/basics" in missing.output["error"]
    bad = await call({"action": "explain"})
    assert bad.status is ToolStatus.ERROR
    assert bad.output["fields"][0]["field"] == "action"
    assert "'list' or 'get'" in bad.output["fields"][0]["problem"]
    assert bad.output["expected"] == {"action": "get", "device_type": "vpcs", "topic": "basics"}
    half = await call({"action": "get", "device_type": "vpcs"})
    assert "action get needs device_type and topic" in half.output["error"]
    await executor.client.aclose()

"""Issue 24, cases 1-4, through the console tools against the VPCS and IOS emulators: no
spelling of a change gets past teaching mode, the approval or the forbidden list, the
model cannot pick the platform's rule, and the approval lists every command sent.

Each test reads the device's state on its own console after the call (``show ip`` through
the tool, as a user would) and checks the emulator's record of what reached it. Real VPCS
nodes cannot start on this machine (no VPCS binary, no uBridge): the emulator runs
commands the way VPCS 0.8.3 does (unique prefixes, ``@``, ``write``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.gns3 import Gns3ToolExecutor, SkillLibrary
from copilot_core import ParsedToolCall, ToolStatus
from copilot_core.ports import ApprovalDecision, ApprovalPolicy, Clearance, ToolEffect
from tests.adapters.gns3.conftest import make_context
from tests.adapters.gns3.test_command_tools import (
    AUTOMATION,
    PROJECT,
    TEACHING,
    TOKEN,
    by_device,
    lab,
    make_executor,
    run,
)
from tests.fakes.telnet_devices import EmulatedDeviceLab, EmulatedVpcs

__all__ = ["lab"]


def vpcs(name: str, commands: list[str], **extra: Any) -> dict[str, Any]:
    return {"device_configs": [{"device_name": name, "commands": commands, **extra}]}


async def address_on_console(executor: Gns3ToolExecutor, name: str = "PC1") -> str:
    """PC1's address as its own console shows it (`show ip`)."""
    result = await run(executor, "execute_multiple_device_commands", vpcs(name, ["show ip"]))
    text = by_device(result)[name]["output"][0]["output"]
    line = next(line for line in text.splitlines() if line.startswith("IP/MASK"))
    return line.split(":", 1)[1].strip()


async def assessed(executor: Gns3ToolExecutor, tool: str, args: dict[str, Any]) -> Any:
    call = ParsedToolCall.parse("call-1", tool, json.dumps(args))
    return await executor.assess(call, make_context(PROJECT, TOKEN, AUTOMATION))


# ------------------------------------------------------------------ case 1
@pytest.mark.parametrize("command", ["i 10.0.0.51/24", "@ip 10.0.0.52/24", "se pcname X", "write"])
async def test_an_abbreviated_vpcs_change_asks_for_approval(lab: EmulatedDeviceLab, command: str):
    executor = make_executor(lab)
    for tool in ("execute_vpcs_commands", "execute_multiple_device_commands"):
        assessment = await assessed(executor, tool, vpcs("PC1", [command]))
        assert ApprovalPolicy.CHANGES.requires(ToolEffect.DEVICE_CHANGE, assessment), (
            tool,
            command,
        )
        assert assessment.preview.devices == {"PC1": [command]}
    assert lab["PC1"].received == []  # judging a call sends nothing


async def test_a_read_only_vpcs_call_asks_nothing(lab: EmulatedDeviceLab):
    executor = make_executor(lab)
    for command in ("show ip", "sh ip", "@show ip", "ping 10.0.0.2 -c 1", "ver"):
        assessment = await assessed(executor, "execute_vpcs_commands", vpcs("PC1", [command]))
        assert not ApprovalPolicy.CHANGES.requires(ToolEffect.DEVICE_CHANGE, assessment), command


@pytest.mark.parametrize(
    "command", ["i 10.0.0.61/24", "@ip 10.0.0.62/24", "write", "se pcname TAUGHT", "sav"]
)
async def test_teaching_mode_refuses_every_spelling_of_a_vpcs_change(
    lab: EmulatedDeviceLab, command: str
):
    executor = make_executor(lab)
    pc1 = lab["PC1"]
    assert isinstance(pc1, EmulatedVpcs)
    result = await run(
        executor, "execute_multiple_device_commands", vpcs("PC1", [command]), TEACHING
    )
    item = by_device(result)["PC1"]
    assert item["error"] == "every command was blocked"
    reason = item["blocked_commands"][0]["reason"]
    assert repr(command) in reason and "VPCS" in reason
    assert "teaching mode only runs read-only commands" in reason
    assert await address_on_console(executor) == "0.0.0.0/0"
    assert (pc1.name, pc1.saves) == ("PC1", 0)
    assert pc1.received == ["show ip"]


async def test_the_emulator_runs_abbreviations_as_vpcs_does(lab: EmulatedDeviceLab):
    # What the refusals above protect against: on the device these spellings do change it.
    executor = make_executor(lab)
    result = await run(executor, "execute_vpcs_commands", vpcs("PC1", ["i 10.0.0.51/24", "wr"]))
    assert by_device(result)["PC1"]["status"] == "success"
    assert await address_on_console(executor) == "10.0.0.51/24"
    pc1 = lab["PC1"]
    assert isinstance(pc1, EmulatedVpcs) and pc1.saves == 1


# ------------------------------------------------------------------ case 2
@pytest.mark.parametrize("device_type", ["cisco_ios", "linux", "juniper_junos", "generic"])
async def test_the_model_cannot_loosen_the_platforms_rule(lab: EmulatedDeviceLab, device_type: str):
    executor = make_executor(lab)
    args = vpcs("PC1", ["ip 10.0.0.66/24"], device_type=device_type)
    result = await run(executor, "execute_multiple_device_commands", args, TEACHING)
    item = by_device(result)["PC1"]
    assert item["error"] == "every command was blocked"
    if device_type != "generic":
        assert "GNS3 says it is a vpcs device" in item["platform_note"]
        assert repr(device_type) in item["platform_note"]
    assert await address_on_console(executor) == "0.0.0.0/0"
    assessment = await assessed(executor, "execute_vpcs_commands", args)
    assert assessment.changes


async def test_a_stricter_device_type_is_applied_too(lab: EmulatedDeviceLab):
    # `echo` is read-only on VPCS, but not on IOS: asking for IOS's rule makes it stricter.
    executor = make_executor(lab)
    args = vpcs("PC1", ["show ip", "echo hi"], device_type="cisco_ios")
    result = await run(executor, "execute_multiple_device_commands", args, TEACHING)
    item = by_device(result)["PC1"]
    assert [b["command"] for b in item["blocked_commands"]] == ["echo hi"]
    assert lab["PC1"].received == ["show ip"]  # sent to the VPCS as a VPCS command


# ------------------------------------------------------------------ case 3
async def test_the_approval_lists_every_command_exactly_as_sent(lab: EmulatedDeviceLab):
    executor = make_executor(lab)
    commands = ["show ip", "ip 10.0.0.9/24", "i 10.0.0.77/24", "ping 10.0.0.1 -c 1"]
    assessment = await assessed(executor, "execute_vpcs_commands", vpcs("PC1", commands))
    preview = assessment.preview.to_dict()
    assert preview["devices"] == {"PC1": ["ip 10.0.0.9/24", "i 10.0.0.77/24"]}
    listed = preview["commands"]["PC1"]
    assert [(c["command"], c["changes"]) for c in listed] == [
        ("show ip", False),
        ("ip 10.0.0.9/24", True),
        ("i 10.0.0.77/24", True),
        ("ping 10.0.0.1 -c 1", False),
    ]
    assert listed[2]["expanded"] == "ip 10.0.0.77/24"
    assert "VPCS" in listed[2]["note"]
    # Approved, exactly those commands run, in that order.
    call = ParsedToolCall.parse(
        "call-1", "execute_vpcs_commands", json.dumps(vpcs("PC1", commands))
    )
    context = make_context(PROJECT, TOKEN, AUTOMATION)
    result = await executor.execute(
        call, context, Clearance(decision=ApprovalDecision(True, "user-1"))
    )
    assert result.status is ToolStatus.SUCCESS
    assert lab["PC1"].received == commands
    assert await address_on_console(executor) == "10.0.0.77/24"


async def test_configuration_lines_are_listed_and_all_marked(lab: EmulatedDeviceLab):
    executor = make_executor(lab)
    args = {
        "device_configs": [
            {"device_name": "R1", "config_commands": ["hostname X", "do sh ip int br"]}
        ]
    }
    assessment = await assessed(executor, "execute_multiple_device_config_commands", args)
    listed = assessment.preview.to_dict()["commands"]["R1"]
    assert [(c["command"], c["changes"]) for c in listed] == [
        ("hostname X", True),
        ("do sh ip int br", True),
    ]


# ------------------------------------------------------------------ case 4
@pytest.mark.parametrize("command", ["cl ip", "cle ip", "@clear ip", "clear ip"])
async def test_an_operators_forbidden_word_is_blocked_in_every_vpcs_spelling(
    lab: EmulatedDeviceLab, tmp_path: Path, command: str
):
    (tmp_path / "forbidden_commands.txt").write_text("clear\n")
    skills = SkillLibrary([tmp_path])
    skills.reload()
    executor = make_executor(lab, skills=skills)
    await run(executor, "execute_vpcs_commands", vpcs("PC1", ["ip 10.0.0.5/24"]))
    result = await run(executor, "execute_vpcs_commands", vpcs("PC1", [command]))
    item = by_device(result)["PC1"]
    assert "'clear' commands are forbidden" in item["blocked_commands"][0]["reason"]
    assert await address_on_console(executor) == "10.0.0.5/24"  # PC1 kept its address


@pytest.mark.parametrize(
    "command", ["trace 10.0.0.2", "tracer 10.0.0.2", "t 10.0.0.2", "@tr 10.0.0.2"]
)
async def test_vpcs_traceroute_is_forbidden_by_default(lab: EmulatedDeviceLab, command: str):
    result = await run(make_executor(lab), "execute_vpcs_commands", vpcs("PC1", [command]))
    assert "forbidden" in by_device(result)["PC1"]["blocked_commands"][0]["reason"]
    assert lab["PC1"].received == []


@pytest.mark.parametrize(
    "command",
    ["rel", "relo", "wr er", "era nvram:", "del flash:x", "deb all", "tes crash", "do reload"],
)
async def test_ios_spellings_of_forbidden_commands_are_blocked(
    lab: EmulatedDeviceLab, command: str
):
    executor = make_executor(lab)
    for mode in (AUTOMATION, TEACHING):
        result = await run(
            executor, "execute_multiple_device_commands", vpcs("R1", [command]), mode
        )
        assert "forbidden" in by_device(result)["R1"]["blocked_commands"][0]["reason"]
    config = {"device_configs": [{"device_name": "R1", "config_commands": [command]}]}
    result = await run(executor, "execute_multiple_device_config_commands", config)
    assert "forbidden" in by_device(result)["R1"]["blocked_commands"][0]["reason"]
    assert lab["R1"].received == []


# ------------------------------------------------------------------ control characters
@pytest.mark.parametrize(
    "command",
    ["show ip\rip 10.0.0.9/24", "show ip\nsave", "ping 1.1.1.1\x03", "\x1b[Aip 1.1.1.1/24"],
)
async def test_a_command_with_a_control_character_is_refused_before_anything_runs(
    lab: EmulatedDeviceLab, command: str
):
    result = await run(
        make_executor(lab), "execute_vpcs_commands", vpcs("PC1", ["show ip", command])
    )
    assert result.status is ToolStatus.ERROR
    assert "control character" in result.output["error"]
    assert "one line" in result.output["error"]
    assert lab["PC1"].received == []

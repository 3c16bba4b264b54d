"""The device skills tool: know-how per device type and topic (needs no GNS3 access)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from adapters.gns3.lab import BOTH_MODES, CallScope, Gns3Tool, LabAccess, ToolArguments
from copilot_core import ToolResult
from copilot_core.ports import ToolEffect

__all__ = ["skill_tools"]


class DeviceSkills(ToolArguments):
    action: Literal["list", "get"]
    device_type: str | None = Field(None, description="e.g. vpcs, cisco_ios, juniper_junos")
    topic: str | None = Field(None, description="get only: the topic, e.g. basics")

    @model_validator(mode="after")
    def _get_needs_both(self) -> DeviceSkills:
        if self.action == "get" and not (self.device_type and self.topic):
            raise ValueError("action get needs device_type and topic")
        return self


async def device_skills(lab: LabAccess, args: DeviceSkills, scope: CallScope) -> ToolResult:
    skills = lab.skills
    if args.action == "list":
        return ToolResult(
            {
                "device_types": skills.device_types(),
                "skills": [s.summary_dict() for s in skills.list(args.device_type)],
            }
        )
    skill = skills.get(args.device_type or "", args.topic or "")  # the model checked both
    if skill is None:
        topics = [f"{s.device_type}/{s.topic}" for s in skills.list()]
        return ToolResult.error(
            f"No skill {args.device_type}/{args.topic}; available: {', '.join(topics)}."
        )
    return ToolResult({**skill.summary_dict(), "content": skill.content})


def skill_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "device_skills",
            "Device know-how: action list (optionally for one device_type: vpcs, cisco_ios, "
            "arista_eos, juniper_junos, frr, linux, huawei_vrp, generic) shows the topics; "
            "action get returns one topic's guide.",
            DeviceSkills,
            device_skills,
            BOTH_MODES,
            effect=ToolEffect.READ_ONLY,
            example={"action": "get", "device_type": "vpcs", "topic": "basics"},
            needs_gns3=False,
        )
    ]

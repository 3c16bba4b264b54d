"""Project tools: GNS3 snapshots (list, take, restore) and notes on the canvas.

GNS3 keeps snapshots by name; their ids change whenever the project is loaded again (a
restore included), so this tool names them. A snapshot is refused while a node runs
("Project must be stopped in order to export it"). Drawings are SVG documents placed on
the canvas: a text note, or a rectangle around part of the lab.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from xml.sax.saxutils import escape, quoteattr

from pydantic import AfterValidator, Field, model_validator

from adapters.gns3.lab import (
    AUTOMATION_ONLY,
    BOTH_MODES,
    CallScope,
    Gns3Tool,
    LabAccess,
    RestoreScope,
    ToolArguments,
    batch,
    item,
)
from copilot_core import CopilotMode, ToolResult
from copilot_core.errors import CopilotError
from copilot_core.ports import ChangePreview, ToolEffect

__all__ = ["project_tools"]

JSON = dict[str, Any]
_COPILOT_SNAPSHOT = "copilot-"


def _name(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value:
        raise ValueError("must not be blank")
    if len(value) > 100:
        raise ValueError("at most 100 characters")
    return value


class Snapshots(ToolArguments):
    action: Literal["list", "create", "restore"] = Field(
        description="list the project's snapshots; create one; restore one"
    )
    name: Annotated[str | None, AfterValidator(_name)] = Field(
        None, description="create, restore: the snapshot's name"
    )

    @model_validator(mode="after")
    def _named(self) -> Snapshots:
        if self.action != "list" and self.name is None:
            raise ValueError(f"{self.action} needs the snapshot's name")
        return self


def _stamp(epoch: Any) -> str | None:
    try:
        return datetime.fromtimestamp(float(epoch), UTC).isoformat()
    except (TypeError, ValueError):
        return None


async def snapshots(lab: LabAccess, args: Snapshots, scope: CallScope) -> ToolResult:
    if args.action != "list" and scope.context.mode is CopilotMode.TEACHING_ASSISTANT:
        return ToolResult.error(
            "Taking or restoring a snapshot is for the lab automation mode; "
            "in teaching mode, use action list."
        )
    client, token, project = lab.client, scope.token, scope.project_id
    try:
        existing = await client.snapshots(token, project)
        if args.action == "list":
            return ToolResult(
                {
                    "status": "success",
                    "snapshots": [
                        {
                            "name": s.get("name"),
                            "created_at": _stamp(s.get("created_at")),
                            "restore_point": str(s.get("name", "")).startswith(_COPILOT_SNAPSHOT),
                        }
                        for s in sorted(existing, key=lambda s: s.get("created_at") or 0)
                    ],
                }
            )
        name = str(args.name)
        if args.action == "create":
            running = [
                str(n.get("name"))
                for n in await client.nodes(token, project)
                if n.get("status") != "stopped"
            ]
            if running:
                return batch(
                    [
                        item(
                            name,
                            "failed",
                            error=f"GNS3 snapshots only a project whose nodes are all "
                            f"stopped; running: {', '.join(sorted(running))}.",
                        )
                    ]
                )
            made = await client.create_snapshot(token, project, name)
            return batch([item(name, "success", {"created_at": _stamp(made.get("created_at"))})])
        found = next((s for s in existing if s.get("name") == name), None)
        if found is None:
            names = ", ".join(str(s.get("name")) for s in existing) or "none"
            return batch([item(name, "failed", error=f"No snapshot {name!r}; snapshots: {names}.")])
        await client.restore_snapshot(token, project, str(found["snapshot_id"]))
        nodes = await client.nodes(token, project)
    except CopilotError as exc:
        return batch([item(args.name or "snapshots", "failed", error=exc.message)])
    return batch(
        [
            item(
                name,
                "success",
                {
                    "restored": name,
                    "nodes": sorted(f"{n.get('name')} ({n.get('status')})" for n in nodes),
                },
            )
        ]
    )


def _snapshot_change(args: Snapshots, mode: CopilotMode) -> ChangePreview | None:
    if args.action == "list" or mode is CopilotMode.TEACHING_ASSISTANT:
        return None  # (teaching mode refuses the others)
    if args.action == "create":
        return ChangePreview(
            f"create snapshot {args.name}",
            topology=[f"take GNS3 snapshot {args.name} of the whole project"],
        )
    return ChangePreview(
        f"restore snapshot {args.name}",
        topology=[
            f"the project returns to snapshot {args.name}: its nodes, links, drawings and "
            "every node's disk and saved configuration; running nodes stop; what changed "
            "since is lost"
        ],
    )


def _everything(args: Snapshots, preview: ChangePreview) -> RestoreScope | None:
    if args.action == "create":
        return None  # a snapshot taken changes nothing a rollback could put back
    return RestoreScope(every_node=True, topology=True)


# ---------------------------------------------------------------- annotations
_COLOR = re.compile(r"#[0-9a-fA-F]{6}")


def _color(value: str | None) -> str | None:
    if value is not None and not _COLOR.fullmatch(value.strip()):
        raise ValueError("a color like #ff0000")
    return value.strip() if value else None


class Annotate(ToolArguments):
    kind: Literal["text", "rectangle"] = Field(
        "text", description="a text note, or a rectangle (around part of the lab)"
    )
    text: str | None = Field(None, max_length=2000, description="the note's text")
    near: str | None = Field(None, description="a node's name: the note goes just above it")
    x: int | None = Field(None, description="left edge on the canvas (instead of near)")
    y: int | None = Field(None, description="top edge on the canvas")
    width: int = Field(200, ge=10, le=5000, description="rectangle width")
    height: int = Field(100, ge=10, le=5000, description="rectangle height")
    color: Annotated[str | None, AfterValidator(_color)] = Field(
        None, description="#rrggbb: the text's color, or the rectangle's border"
    )
    font_size: int = Field(12, ge=6, le=72)

    @model_validator(mode="after")
    def _content(self) -> Annotate:
        if self.kind == "text" and not (self.text or "").strip():
            raise ValueError("a text note needs text")
        return self

    def svg(self) -> str:
        color = self.color or "#000000"
        if self.kind == "rectangle":
            return (
                f'<svg width="{self.width}" height="{self.height}"><rect width="{self.width}" '
                f'height="{self.height}" fill="#ffffff" fill-opacity="0" stroke={quoteattr(color)} '
                'stroke-width="2"/></svg>'
            )
        lines = str(self.text).splitlines() or [""]
        width = max(40, min(2000, int(max(len(line) for line in lines) * self.font_size * 0.62)))
        height = int(len(lines) * self.font_size * 1.5) + 4
        return (
            f'<svg width="{width}" height="{height}"><text font-family="TypeWriter" '
            f'font-size="{self.font_size}" font-weight="bold" fill={quoteattr(color)} '
            f'fill-opacity="1.0">{escape(str(self.text))}</text></svg>'
        )


async def annotate(lab: LabAccess, args: Annotate, scope: CallScope) -> ToolResult:
    label = "note" if args.kind == "text" else "rectangle"
    snapshot = await lab.snapshot(scope)
    if args.near is not None:
        node = snapshot.by_name(args.near)
        if node is None:
            return batch([item(label, "failed", error=snapshot.unknown_node(args.near))])
        x = int(node.get("x") or 0) + (args.x or 0)
        y = int(node.get("y") or 0) - 2 * args.font_size - 20 + (args.y or 0)
    elif args.x is not None and args.y is not None:
        x, y = args.x, args.y
    else:
        xs = [int(n.get("x") or 0) for n in snapshot.nodes] or [0]
        ys = [int(n.get("y") or 0) for n in snapshot.nodes] or [0]
        x, y = (
            args.x if args.x is not None else min(xs),
            args.y if args.y is not None else min(ys) - 80,
        )
    try:
        drawing = await lab.client.create_drawing(
            scope.token, scope.project_id, {"svg": args.svg(), "x": x, "y": y, "z": 2}
        )
    except CopilotError as exc:
        return batch([item(label, "failed", error=exc.message)])
    return batch(
        [item(label, "success", {"drawing_id": drawing.get("drawing_id"), "x": x, "y": y})]
    )


def _annotated(args: Annotate, mode: CopilotMode) -> ChangePreview:
    where = f"above {args.near}" if args.near else "on the canvas"
    what = f"a text note {args.text!r}" if args.kind == "text" else "a rectangle"
    return ChangePreview(f"add {what} {where}", topology=[f"draw {what} {where}"])


def project_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "gns3_snapshots",
            "GNS3 snapshots of the whole project: action list (any mode); create (GNS3 "
            "needs every node stopped) and restore, by name (lab automation). Restoring "
            "returns the project to the snapshot: nodes stop and get new ids.",
            Snapshots,
            snapshots,
            BOTH_MODES,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            example={"action": "create", "name": "before-ospf"},
            mutates_topology=True,
            change=_snapshot_change,
            restores=_everything,
        ),
        Gns3Tool(
            "gns3_annotate",
            "Put a text note or a rectangle on the project's canvas (drawings), e.g. to "
            "label what was built: near a node (just above it) or at x/y.",
            Annotate,
            annotate,
            AUTOMATION_ONLY,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            example={"kind": "text", "text": "OSPF area 0", "near": "R1"},
            change=_annotated,
        ),
    ]

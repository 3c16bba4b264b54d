"""``Gns3ToolExecutor``: the copilot's lab tools, and ``Gns3TopologySource``.

The project comes from the request context (never from the model); tools name
nodes and ports by their names. Batched tools answer one result per device, node
or link: ``{device_name, status: success|partial_success|failed, output,
blocked_commands?, error?}``, wrapped as ``{"status": ..., "results": [...]}``.
A bad argument (unknown node or port, node not started, no console) is such a
failed result saying what exists instead, never an exception.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.gns3._capture import analyze_pcap
from adapters.gns3._changes import COMMAND_TOOLS, assess_call
from adapters.gns3._client import Gns3Client
from adapters.gns3._command_policy import DeviceKind, configuration_reason
from adapters.gns3._console import ConsoleRunner, ConsoleTarget, ConsoleTranscript
from adapters.gns3._lab import LabSnapshot
from adapters.gns3._skills import SkillLibrary
from copilot_core.errors import AuthenticationError, CopilotError
from copilot_core.ports import Assessment
from copilot_core.session import CopilotMode
from copilot_core.tools import ParsedToolCall, ToolContext, ToolResult, ToolSpec, ToolStatus

__all__ = ["Gns3ToolExecutor", "Gns3ToolSettings", "Gns3TopologySource"]

JSON = dict[str, Any]
TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
BOTH = frozenset({TEACHING, AUTOMATION})
ONLY_AUTOMATION = frozenset({AUTOMATION})


@dataclass(frozen=True, slots=True)
class Gns3ToolSettings:
    """Bounds of the tools (seconds unless said otherwise)."""

    start_timeout: float = 90.0
    poll_interval: float = 0.5
    capture_default_seconds: float = 5.0
    capture_max_seconds: float = 30.0
    capture_max_bytes: int = 8 << 20
    max_batch: int = 32
    max_commands: int = 50


# ------------------------------------------------------------------ schemas
def _obj(properties: JSON, required: Sequence[str] = ()) -> JSON:
    schema: JSON = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


_STR = {"type": "string"}
_NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1}
_COMMANDS = {"type": "array", "items": {"type": "string"}, "minItems": 1}
_LINK_ENDS = {
    "node1": {"type": "string", "description": "first node's name"},
    "port1": {"type": "string", "description": "its port, e.g. Ethernet0, e0, Gi0/0"},
    "node2": {"type": "string", "description": "second node's name"},
    "port2": {"type": "string", "description": "its port"},
}


def _device_configs(key: str, what: str) -> JSON:
    return _obj(
        {
            "device_configs": {
                "type": "array",
                "minItems": 1,
                "items": _obj(
                    {
                        "device_name": {"type": "string", "description": "node name"},
                        key: {**_COMMANDS, "description": what},
                    },
                    ["device_name", key],
                ),
            }
        },
        ["device_configs"],
    )


@dataclass(frozen=True, slots=True)
class _Tool:
    spec: ToolSpec
    modes: frozenset[CopilotMode]


_TOOLS: tuple[_Tool, ...] = (
    _Tool(
        ToolSpec(
            "gns3_topology_reader",
            "Read the current lab: every node (name, type, device type, status, ports and "
            "whether each is in use, console) and every link (node and port at each end).",
            _obj({}),
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "get_gns3_templates",
            "List the templates nodes can be created from (name, type, category).",
            _obj({}),
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "create_gns3_node",
            "Create nodes from templates (by template_name, or template_id), optionally "
            "naming them and placing them at x/y. Returns each node's name, status and ports.",
            _obj(
                {
                    "nodes": {
                        "type": "array",
                        "minItems": 1,
                        "items": _obj(
                            {
                                "template_name": _STR,
                                "template_id": _STR,
                                "name": {"type": "string", "description": "the new node's name"},
                                "x": {"type": "integer"},
                                "y": {"type": "integer"},
                            }
                        ),
                    }
                },
                ["nodes"],
            ),
            mutates_topology=True,
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "create_gns3_link",
            "Link two nodes' ports, named as in the topology (Ethernet0, e0, Gi0/0...). "
            "Each port can carry one link.",
            _obj(
                {
                    "links": {
                        "type": "array",
                        "minItems": 1,
                        "items": _obj(_LINK_ENDS, ["node1", "port1", "node2", "port2"]),
                    }
                },
                ["links"],
            ),
            mutates_topology=True,
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "start_gns3_node",
            "Start nodes by name; returns once they report started and their consoles "
            "accept connections (bounded).",
            _obj({"node_names": _NAMES}, ["node_names"]),
            mutates_topology=True,
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "update_gns3_node_name",
            "Rename nodes. Some node types (VPCS) can only be renamed while stopped.",
            _obj(
                {
                    "nodes": {
                        "type": "array",
                        "minItems": 1,
                        "items": _obj(
                            {"node_name": _STR, "new_name": _STR}, ["node_name", "new_name"]
                        ),
                    }
                },
                ["nodes"],
            ),
            mutates_topology=True,
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "execute_multiple_device_commands",
            "Run read-only (show/diagnostic) commands on several started devices' consoles at "
            "once; one result per device with each command's output. Forbidden commands "
            "(traceroute, debug, reload...) are blocked; in teaching mode so are configuration "
            "commands.",
            _device_configs("commands", "commands to run in order, e.g. show ip interface brief"),
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "packet_capture",
            "Capture packets on the link between node1/port1 and node2/port2: action start, "
            "stop, or analyze (read the running capture for `seconds`, default 5, at most 30, "
            "and summarise protocols, top talkers, ICMP echo pairs and ARP).",
            _obj(
                {
                    "action": {"type": "string", "enum": ["start", "stop", "analyze"]},
                    **_LINK_ENDS,
                    "seconds": {"type": "number", "minimum": 1, "maximum": 30},
                },
                ["action", "node1", "port1", "node2", "port2"],
            ),
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "device_skills",
            "Device know-how: action list (optionally for one device_type: vpcs, cisco_ios, "
            "linux) shows the topics; action get returns one topic's guide.",
            _obj(
                {
                    "action": {"type": "string", "enum": ["list", "get"]},
                    "device_type": _STR,
                    "topic": _STR,
                },
                ["action"],
            ),
        ),
        BOTH,
    ),
    _Tool(
        ToolSpec(
            "stop_gns3_node",
            "Stop nodes by name; their consoles close and unsaved configuration is lost.",
            _obj({"node_names": _NAMES}, ["node_names"]),
            mutates_topology=True,
        ),
        ONLY_AUTOMATION,
    ),
    _Tool(
        ToolSpec(
            "suspend_gns3_node",
            "Suspend (pause) nodes by name; start_gns3_node resumes them.",
            _obj({"node_names": _NAMES}, ["node_names"]),
            mutates_topology=True,
        ),
        ONLY_AUTOMATION,
    ),
    _Tool(
        ToolSpec(
            "execute_multiple_device_config_commands",
            "Apply configuration lines on several started devices at once. On Cisco IOS the "
            "tool enters configure terminal and leaves with end itself: give only the lines "
            "(e.g. interface Gi0/0, ip address 10.0.0.1 255.255.255.0, no shutdown).",
            _device_configs("config_commands", "configuration lines, in order"),
        ),
        ONLY_AUTOMATION,
    ),
    _Tool(
        ToolSpec(
            "execute_vpcs_commands",
            "Run commands on VPCS hosts, including configuration (ip 10.0.0.2/24 10.0.0.1, "
            "save); one result per host.",
            _device_configs("commands", "VPCS commands, in order"),
        ),
        ONLY_AUTOMATION,
    ),
)


# ------------------------------------------------------------------ results
def _item(name: str, status: str, output: Any = None, **extra: Any) -> JSON:
    result: JSON = {"device_name": name, "status": status, "output": output}
    result.update({k: v for k, v in extra.items() if v is not None})
    return result


def _batch(results: list[JSON]) -> ToolResult:
    statuses = {r["status"] for r in results}
    if statuses == {"success"}:
        overall = "success"
    elif statuses == {"failed"}:
        overall = "failed"
    else:
        overall = "partial_success"
    status = ToolStatus.ERROR if overall == "failed" else ToolStatus.SUCCESS
    return ToolResult({"status": overall, "results": results}, status)


def _bad_arguments(message: str, example: JSON) -> ToolResult:
    return ToolResult.error(message, expected=example)


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return [v for v in value if v.strip()]


class Gns3ToolExecutor:
    """The lab tools over a :class:`Gns3Client` and a :class:`ConsoleRunner`."""

    def __init__(
        self,
        client: Gns3Client,
        *,
        runner: ConsoleRunner | None = None,
        skills: SkillLibrary | None = None,
        settings: Gns3ToolSettings | None = None,
    ) -> None:
        self.client = client
        self.runner = runner or ConsoleRunner()
        self.skills = skills or SkillLibrary()
        self.settings = settings or Gns3ToolSettings()
        self._tools = {tool.spec.name: tool for tool in _TOOLS}
        self._handlers: dict[str, Callable[[JSON, ToolContext, str], Awaitable[ToolResult]]] = {
            "gns3_topology_reader": self._topology,
            "get_gns3_templates": self._templates,
            "create_gns3_node": self._create_nodes,
            "create_gns3_link": self._create_links,
            "start_gns3_node": self._start_nodes,
            "stop_gns3_node": self._stop_nodes,
            "suspend_gns3_node": self._suspend_nodes,
            "update_gns3_node_name": self._rename_nodes,
            "execute_multiple_device_commands": self._show_commands,
            "execute_multiple_device_config_commands": self._config_commands,
            "execute_vpcs_commands": self._vpcs_commands,
            "packet_capture": self._packet_capture,
            "device_skills": self._device_skills,
        }

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return [tool.spec for tool in _TOOLS if mode in tool.modes]

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        """Whether the call would change a device or the topology (see ``_changes``)."""
        args = call.arguments or {}
        if call.name not in COMMAND_TOOLS or not context.credentials:
            return assess_call(call.name, args)
        lab = await self._snapshot(context, context.credentials)

        def kind_of(name: str) -> DeviceKind | None:
            node = lab.by_name(name)
            return lab.kind(node) if node is not None else None

        return assess_call(call.name, args, kind_of)

    async def execute(self, call: ParsedToolCall, context: ToolContext) -> ToolResult:
        tool = self._tools.get(call.name)
        if tool is None or context.mode not in tool.modes:
            names = ", ".join(spec.name for spec in self.specs(context.mode))
            return ToolResult.error(
                f"Tool {call.name!r} is not available in {context.mode.value} mode; "
                f"available tools: {names}."
            )
        if not call.is_valid or call.arguments is None:
            return ToolResult.error(f"The arguments of {call.name} are invalid: {call.error}")
        if call.name != "device_skills" and not context.credentials:
            return ToolResult.error(
                "No GNS3 credentials came with this request; the tool cannot act on GNS3."
            )
        handler = self._handlers[call.name]
        task = asyncio.ensure_future(handler(call.arguments, context, context.credentials or ""))

        def cancel() -> None:
            if not task.done():
                task.cancel()

        remove = context.abort.on_abort(cancel)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if context.abort.is_aborted() and (current is None or not current.cancelling()):
                return ToolResult.aborted()
            raise
        except CopilotError as exc:
            return ToolResult.error(exc.message)
        finally:
            remove()
            if not task.done():
                task.cancel()

    # ---------------------------------------------------------------- reading
    async def _snapshot(self, context: ToolContext, token: str) -> LabSnapshot:
        return await LabSnapshot.read(self.client, token, context.project_id)

    async def _topology(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        return ToolResult((await self._snapshot(context, token)).summary())

    async def _templates(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        templates = await self.client.templates(token)
        return ToolResult(
            {
                "templates": [
                    {
                        "name": t.get("name"),
                        "template_type": t.get("template_type"),
                        "category": t.get("category"),
                        "builtin": t.get("builtin", False),
                    }
                    for t in sorted(templates, key=lambda t: str(t.get("name")))
                ]
            }
        )

    # ---------------------------------------------------------------- nodes
    async def _create_nodes(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        example = {"nodes": [{"template_name": "VPCS", "name": "PC1"}]}
        requests = args.get("nodes")
        if (
            not isinstance(requests, list)
            or not requests
            or not all(isinstance(r, dict) for r in requests)
        ):
            return _bad_arguments("`nodes` must be a non-empty list of objects.", example)
        if len(requests) > self.settings.max_batch:
            return _bad_arguments(f"At most {self.settings.max_batch} nodes per call.", example)
        lab = await self._snapshot(context, token)
        templates = await self.client.templates(token)
        by_id = {str(t.get("template_id")): t for t in templates}
        template_names = sorted(str(t.get("name")) for t in templates)
        results = []
        for request in requests:
            wanted_name = request.get("name")
            label = str(wanted_name or request.get("template_name") or request.get("template_id"))
            template = by_id.get(str(request.get("template_id") or ""))
            if template is None and isinstance(request.get("template_name"), str):
                key = request["template_name"].strip().lower()
                template = next((t for t in templates if str(t.get("name")).lower() == key), None)
            if template is None:
                results.append(
                    _item(
                        label,
                        "failed",
                        error="Unknown template "
                        f"{request.get('template_name') or request.get('template_id')!r}; "
                        f"available templates: {', '.join(template_names)}.",
                    )
                )
                continue
            if wanted_name is not None and (
                not isinstance(wanted_name, str) or not wanted_name.strip()
            ):
                results.append(_item(label, "failed", error="`name` must be a non-empty string."))
                continue
            if isinstance(wanted_name, str) and lab.by_name(wanted_name) is not None:
                results.append(
                    _item(
                        wanted_name, "failed", error=f"A node named {wanted_name!r} already exists."
                    )
                )
                continue
            count = len(lab.nodes)
            x = request.get("x") if isinstance(request.get("x"), int) else -300 + 150 * (count % 5)
            y = request.get("y") if isinstance(request.get("y"), int) else -200 + 150 * (count // 5)
            try:
                node = await self.client.create_node_from_template(
                    token, context.project_id, str(template["template_id"]), x=x, y=y
                )
            except CopilotError as exc:
                results.append(_item(label, "failed", error=exc.message))
                continue
            lab.nodes.append(node)
            status, error = "success", None
            if isinstance(wanted_name, str) and node.get("name") != wanted_name:
                try:
                    node.update(
                        await self.client.update_node(
                            token, context.project_id, str(node["node_id"]), name=wanted_name
                        )
                    )
                except CopilotError as exc:
                    status = "partial_success"
                    error = f"created as {node.get('name')!r} but not renamed: {exc.message}"
            results.append(
                _item(
                    str(node.get("name")),
                    status,
                    {
                        "name": node.get("name"),
                        "template": template.get("name"),
                        "node_type": node.get("node_type"),
                        "status": node.get("status"),
                        "ports": lab.port_names(node),
                    },
                    error=error,
                )
            )
        return _batch(results)

    async def _rename_nodes(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        example = {"nodes": [{"node_name": "PC1", "new_name": "Client"}]}
        requests = args.get("nodes")
        if (
            not isinstance(requests, list)
            or not requests
            or not all(isinstance(r, dict) for r in requests)
        ):
            return _bad_arguments("`nodes` must be a non-empty list of objects.", example)
        lab = await self._snapshot(context, token)
        results = []
        for request in requests:
            old, new = request.get("node_name"), request.get("new_name")
            if not isinstance(old, str) or not isinstance(new, str) or not new.strip():
                results.append(
                    _item(
                        str(old),
                        "failed",
                        error="node_name and new_name must be non-empty strings.",
                    )
                )
                continue
            node = lab.by_name(old)
            if node is None:
                results.append(_item(old, "failed", error=lab.unknown_node(old)))
                continue
            other = lab.by_name(new)
            if other is not None and other is not node:
                results.append(_item(old, "failed", error=f"A node named {new!r} already exists."))
                continue
            try:
                updated = await self.client.update_node(
                    token, context.project_id, str(node["node_id"]), name=new.strip()
                )
            except CopilotError as exc:
                results.append(_item(old, "failed", error=exc.message))
                continue
            node.update(updated)
            results.append(
                _item(old, "success", {"old_name": old, "new_name": updated.get("name")})
            )
        return _batch(results)

    async def _node_names(
        self, args: JSON, context: ToolContext, token: str
    ) -> tuple[LabSnapshot, list[str]] | ToolResult:
        names = _strings(args.get("node_names"))
        if not names:
            return _bad_arguments(
                "`node_names` must be a non-empty list of node names.",
                {"node_names": ["R1", "PC1"]},
            )
        return await self._snapshot(context, token), list(dict.fromkeys(names))

    async def _start_nodes(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        parsed = await self._node_names(args, context, token)
        if isinstance(parsed, ToolResult):
            return parsed
        lab, names = parsed
        return _batch(
            list(
                await asyncio.gather(
                    *(self._start_one(lab, name, context, token) for name in names)
                )
            )
        )

    async def _start_one(
        self, lab: LabSnapshot, name: str, context: ToolContext, token: str
    ) -> JSON:
        node = lab.by_name(name)
        if node is None:
            return _item(name, "failed", error=lab.unknown_node(name))
        node_id = str(node["node_id"])
        if node.get("status") != "started":
            try:
                await self.client.node_action(token, context.project_id, node_id, "start")
            except CopilotError as exc:
                return _item(name, "failed", error=exc.message)
        deadline = time.monotonic() + self.settings.start_timeout
        while True:
            current = await self.client.node(token, context.project_id, node_id)
            ready = current.get("status") == "started"
            if ready and current.get("console_type") == "telnet" and current.get("console"):
                ready = await self.runner.probe(lab.console_host(current), int(current["console"]))
            if ready:
                output: JSON = {"status": "started"}
                if current.get("console"):
                    output["console"] = (
                        f"{current.get('console_type')}://{lab.console_host(current)}:{current['console']}"
                    )
                return _item(name, "success", output)
            if time.monotonic() >= deadline:
                return _item(
                    name,
                    "failed",
                    {"status": current.get("status")},
                    error=f"{name} did not become ready within {self.settings.start_timeout:g} s "
                    f"(status {current.get('status')!r}).",
                )
            await asyncio.sleep(self.settings.poll_interval)

    async def _stop_nodes(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        return await self._simple_action(args, context, token, "stop")

    async def _suspend_nodes(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        return await self._simple_action(args, context, token, "suspend")

    async def _simple_action(
        self, args: JSON, context: ToolContext, token: str, action: str
    ) -> ToolResult:
        parsed = await self._node_names(args, context, token)
        if isinstance(parsed, ToolResult):
            return parsed
        lab, names = parsed

        async def one(name: str) -> JSON:
            node = lab.by_name(name)
            if node is None:
                return _item(name, "failed", error=lab.unknown_node(name))
            try:
                await self.client.node_action(
                    token, context.project_id, str(node["node_id"]), action
                )
                current = await self.client.node(token, context.project_id, str(node["node_id"]))
            except CopilotError as exc:
                return _item(name, "failed", error=exc.message)
            return _item(name, "success", {"status": current.get("status")})

        return _batch(list(await asyncio.gather(*(one(name) for name in names))))

    # ---------------------------------------------------------------- links
    async def _create_links(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        example = {"links": [{"node1": "R1", "port1": "Gi0/0", "node2": "PC1", "port2": "e0"}]}
        requests = args.get("links")
        if (
            not isinstance(requests, list)
            or not requests
            or not all(isinstance(r, dict) for r in requests)
        ):
            return _bad_arguments("`links` must be a non-empty list of objects.", example)
        lab = await self._snapshot(context, token)
        results = []
        for request in requests:
            resolved = self._resolve_ends(lab, request)
            label = " <-> ".join(
                f"{request.get(f'node{i}')} {request.get(f'port{i}')}" for i in (1, 2)
            )
            if isinstance(resolved, str):
                results.append(_item(label, "failed", error=resolved))
                continue
            (node1, port1), (node2, port2) = resolved
            try:
                link = await self.client.create_link(
                    token,
                    context.project_id,
                    [
                        (
                            str(node1["node_id"]),
                            int(port1["adapter_number"]),
                            int(port1["port_number"]),
                        ),
                        (
                            str(node2["node_id"]),
                            int(port2["adapter_number"]),
                            int(port2["port_number"]),
                        ),
                    ],
                )
            except CopilotError as exc:
                context_note = self._in_use_note(lab, (node1, port1), (node2, port2))
                results.append(_item(label, "failed", error=exc.message + context_note))
                continue
            lab.links.append(link)
            results.append(_item(label, "success", {"link": lab.describe_link(link)}))
        return _batch(results)

    @staticmethod
    def _in_use_note(lab: LabSnapshot, *ends: tuple[JSON, JSON]) -> str:
        notes = []
        for node, port in ends:
            for link in lab.links:
                for end in link.get("nodes") or []:
                    if (
                        end.get("node_id") == node.get("node_id")
                        and end.get("adapter_number") == port.get("adapter_number")
                        and end.get("port_number") == port.get("port_number")
                    ):
                        where = f"{node.get('name')} {port.get('name')}"
                        notes.append(f"{where} is linked: {lab.describe_link(link)}")
        return f" ({'; '.join(notes)})" if notes else ""

    @staticmethod
    def _resolve_ends(
        lab: LabSnapshot, request: JSON
    ) -> tuple[tuple[JSON, JSON], tuple[JSON, JSON]] | str:
        ends = []
        for i in (1, 2):
            node_name, port_name = request.get(f"node{i}"), request.get(f"port{i}")
            if not isinstance(node_name, str) or not isinstance(port_name, str):
                return "node1, port1, node2 and port2 must all be strings (node and port names)."
            node = lab.by_name(node_name)
            if node is None:
                return lab.unknown_node(node_name)
            port = lab.find_port(node, port_name)
            if port is None:
                return lab.unknown_port(node, port_name)
            ends.append((node, port))
        return ends[0], ends[1]

    # ---------------------------------------------------------------- capture
    async def _packet_capture(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        example = {
            "action": "start",
            "node1": "R1",
            "port1": "Gi0/0",
            "node2": "PC1",
            "port2": "e0",
        }
        action = args.get("action")
        if action not in ("start", "stop", "analyze"):
            return _bad_arguments("`action` must be start, stop or analyze.", example)
        lab = await self._snapshot(context, token)
        resolved = self._resolve_ends(lab, args)
        label = (
            f"{args.get('node1')} {args.get('port1')} <-> {args.get('node2')} {args.get('port2')}"
        )
        if isinstance(resolved, str):
            return _batch([_item(label, "failed", error=resolved)])
        (node1, port1), (node2, port2) = resolved
        link = lab.find_link(node1, port1, node2, port2)
        if link is None:
            existing = "; ".join(lab.describe_link(link) for link in lab.links) or "none"
            return _batch(
                [
                    _item(
                        label, "failed", error=f"No link joins {label}; existing links: {existing}."
                    )
                ]
            )
        link_id = str(link["link_id"])
        try:
            if action == "start":
                file_name = (
                    re.sub(
                        r"[^A-Za-z0-9_.-]+",
                        "_",
                        f"{node1['name']}_{port1['name']}-{node2['name']}_{port2['name']}",
                    )
                    + ".pcap"
                )
                await self.client.start_capture(token, context.project_id, link_id, file_name)
                return _batch([_item(label, "success", {"capturing": True, "file": file_name})])
            if action == "stop":
                await self.client.stop_capture(token, context.project_id, link_id)
                return _batch([_item(label, "success", {"capturing": False})])
            seconds = args.get("seconds", self.settings.capture_default_seconds)
            if not isinstance(seconds, int | float) or isinstance(seconds, bool):
                seconds = self.settings.capture_default_seconds
            seconds = min(max(float(seconds), 1.0), self.settings.capture_max_seconds)
            data = await self._read_capture(token, context.project_id, link_id, seconds)
        except CopilotError as exc:
            hint = " Start a capture first with action start." if action == "analyze" else ""
            return _batch([_item(label, "failed", error=exc.message + hint)])
        summary = analyze_pcap(data)
        summary["seconds"] = seconds
        return _batch([_item(label, "success", summary)])

    async def _read_capture(
        self, token: str, project_id: str, link_id: str, seconds: float
    ) -> bytes:
        chunks: list[bytes] = []
        stream = self.client.capture_stream(
            token, project_id, link_id, max_bytes=self.settings.capture_max_bytes
        )
        try:
            async with asyncio.timeout(seconds):
                async for chunk in stream:
                    chunks.append(chunk)
        except TimeoutError:
            pass
        finally:
            await stream.aclose()
        return b"".join(chunks)

    # ---------------------------------------------------------------- skills
    async def _device_skills(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        action = args.get("action")
        device_type = args.get("device_type") if isinstance(args.get("device_type"), str) else None
        if action == "list":
            return ToolResult(
                {
                    "device_types": self.skills.device_types(),
                    "skills": [s.summary_dict() for s in self.skills.list(device_type)],
                }
            )
        if action == "get":
            topic = args.get("topic")
            if device_type is None or not isinstance(topic, str):
                return _bad_arguments(
                    "`get` needs device_type and topic.",
                    {"action": "get", "device_type": "vpcs", "topic": "basics"},
                )
            skill = self.skills.get(device_type, topic)
            if skill is None:
                topics = [f"{s.device_type}/{s.topic}" for s in self.skills.list()]
                return ToolResult.error(
                    f"No skill {device_type}/{topic}; available: {', '.join(topics)}."
                )
            return ToolResult({**skill.summary_dict(), "content": skill.content})
        return _bad_arguments("`action` must be list or get.", {"action": "list"})

    # ---------------------------------------------------------------- consoles
    async def _show_commands(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        return await self._run_commands(
            args, context, token, "commands", config=False, vpcs_only=False
        )

    async def _config_commands(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        return await self._run_commands(
            args, context, token, "config_commands", config=True, vpcs_only=False
        )

    async def _vpcs_commands(self, args: JSON, context: ToolContext, token: str) -> ToolResult:
        return await self._run_commands(
            args, context, token, "commands", config=False, vpcs_only=True
        )

    async def _run_commands(
        self,
        args: JSON,
        context: ToolContext,
        token: str,
        key: str,
        *,
        config: bool,
        vpcs_only: bool,
    ) -> ToolResult:
        example = {"device_configs": [{"device_name": "R1", key: ["show ip interface brief"]}]}
        configs = args.get("device_configs")
        if (
            not isinstance(configs, list)
            or not configs
            or not all(isinstance(c, dict) for c in configs)
        ):
            return _bad_arguments("`device_configs` must be a non-empty list of objects.", example)
        if len(configs) > self.settings.max_batch:
            return _bad_arguments(f"At most {self.settings.max_batch} devices per call.", example)
        lab = await self._snapshot(context, token)
        jobs: list[Awaitable[JSON]] = []
        for entry in configs:
            jobs.append(
                self._device_job(lab, entry, key, context, config=config, vpcs_only=vpcs_only)
            )
        return _batch(list(await asyncio.gather(*jobs)))

    async def _device_job(
        self,
        lab: LabSnapshot,
        entry: JSON,
        key: str,
        context: ToolContext,
        *,
        config: bool,
        vpcs_only: bool,
    ) -> JSON:
        name = entry.get("device_name")
        commands = _strings(entry.get(key))
        if not isinstance(name, str) or not commands:
            return _item(
                str(name),
                "failed",
                error=f"each entry needs device_name and a non-empty `{key}` list of strings.",
            )
        if len(commands) > self.settings.max_commands:
            return _item(
                name, "failed", error=f"at most {self.settings.max_commands} commands per device."
            )
        node = lab.by_name(name)
        if node is None:
            return _item(name, "failed", error=lab.unknown_node(name))
        kind = lab.kind(node)
        if vpcs_only and kind is not DeviceKind.VPCS:
            return _item(
                name,
                "failed",
                error=f"{name} is a {kind.value} device, not a VPCS; use "
                "execute_multiple_device_commands or execute_multiple_device_config_commands.",
            )
        if node.get("status") != "started":
            return _item(
                name,
                "failed",
                error=f"{name} is {node.get('status')}; start it first with start_gns3_node.",
            )
        if node.get("console_type") != "telnet" or not node.get("console"):
            return _item(
                name,
                "failed",
                error=f"{name} has no telnet console (console type {node.get('console_type')!r}); "
                "its commands cannot be run.",
            )
        blocked: list[JSON] = []
        allowed: list[str] = []
        forbidden = self.skills.forbidden
        for command in commands:
            reason = forbidden.reason(command)
            if reason is None and context.mode is TEACHING:
                reason = configuration_reason(command, kind)
            if reason is None:
                allowed.append(command)
            else:
                blocked.append({"command": command, "reason": reason})
        if not allowed:
            return _item(
                name, "failed", [], blocked_commands=blocked, error="every command was blocked"
            )
        target = ConsoleTarget(name, lab.console_host(node), int(node["console"]), kind)
        transcript = await self.runner.run(target, allowed, config_mode=config)
        return self._device_result(transcript, blocked)

    @staticmethod
    def _device_result(transcript: ConsoleTranscript, blocked: list[JSON]) -> JSON:
        name = transcript.target.name
        output = [outcome.to_dict() for outcome in transcript.outcomes]
        if transcript.error is not None:
            return _item(
                name, "failed", output, blocked_commands=blocked or None, error=transcript.error
            )
        ok = sum(1 for outcome in transcript.outcomes if outcome.ok)
        if ok == len(transcript.outcomes) and not blocked:
            status = "success"
        elif ok == 0 and not blocked:
            status = "failed"
        else:
            status = "partial_success"
        problems = [f"{o.command!r}: {o.error}" for o in transcript.outcomes if not o.ok]
        if blocked:
            problems.append(f"{len(blocked)} command(s) blocked")
        return _item(
            name,
            status,
            output,
            blocked_commands=blocked or None,
            error="; ".join(problems) if problems else None,
        )


class Gns3TopologySource:
    """The core's :class:`~copilot_core.ports.TopologySource` over the GNS3 API."""

    def __init__(self, client: Gns3Client) -> None:
        self.client = client

    async def read(self, context: ToolContext) -> dict[str, Any]:
        if not context.credentials:
            raise AuthenticationError("No GNS3 credentials came with this request.")
        lab = await LabSnapshot.read(self.client, context.credentials, context.project_id)
        return lab.summary()

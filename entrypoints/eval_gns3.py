"""The real lab of ``gns3-copilot eval --gns3-url``: every task in a scratch GNS3 project.

Per task a project named ``copilot-eval-<task>-<random>`` is created, set up as the
task's :class:`~entrypoints.eval_lab.Given` says (VPCS nodes from GNS3's own template,
linked, started, addressed), and the task's turn runs in the service, built by its
container (:func:`~entrypoints.eval_service.eval_container`) from the ``gns3``,
``console`` and ``agent`` settings: its chat service, agent and GNS3 tools
(:class:`Gns3ToolExecutor`, :class:`Gns3TopologySource`). Every change is approved
(approval policy ``changes``, each approval answered yes through the chat service, as a
client answers it). Afterwards the project's state is read back from GNS3 (nodes with
their names, templates and status; links with their ports; a started VPCS host's address
by ``show ip`` on its console) together with the console commands the tools ran, and the
project is deleted: always, also when the task failed or the run was interrupted.

A task that needs a node started (or one it starts itself) first checks that GNS3 can
start one; when GNS3 refuses, the task is an error naming GNS3's reason, never a pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import json
import re
import secrets
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from adapters.gns3.testing import SimNode, SimulatedLab
from adapters.llm import LLMSettings
from copilot_core import AbortToken, ParsedToolCall, ToolContext, ToolStatus
from copilot_core.errors import CopilotError
from copilot_core.ports import ApprovalPolicy
from entrypoints.container import resolve
from entrypoints.eval_lab import Given
from entrypoints.eval_service import EVAL_USER, EvalService, Transcript, eval_container
from entrypoints.evaluation import LabUnavailable, Scratch, Task
from entrypoints.settings import Settings

__all__ = ["CONSOLE_TOOLS", "Gns3Labs", "console_commands", "project_name"]

#: The tools whose results carry console commands and what the devices answered.
CONSOLE_TOOLS = frozenset(
    {
        "execute_vpcs_commands",
        "execute_multiple_device_commands",
        "execute_multiple_device_config_commands",
    }
)
_IP_MASK = re.compile(r"IP/MASK\s*:\s*(\d+\.\d+\.\d+\.\d+/\d+)")
_PREFIX = "copilot-eval-"


def project_name(task: str) -> str:
    """A scratch project's name: unique, and recognisable as the evaluation's."""
    return f"{_PREFIX}{task}-{secrets.token_hex(4)}"


def console_commands(transcript: Transcript) -> list[tuple[str, str]]:
    """(device, command) of every console command a tool ran without an error, from what
    the console tools returned."""
    ran: list[tuple[str, str]] = []
    for (name, _), output in zip(transcript.calls, transcript.outputs, strict=False):
        if name not in CONSOLE_TOOLS:
            continue
        if isinstance(output, str):
            with contextlib.suppress(ValueError):
                output = json.loads(output)
        results = output.get("results") if isinstance(output, dict) else None
        for result in results if isinstance(results, list) else []:
            outcomes = result.get("output") if isinstance(result, dict) else None
            for outcome in outcomes if isinstance(outcomes, list) else []:
                if isinstance(outcome, dict) and "command" in outcome and not outcome.get("error"):
                    ran.append((str(result.get("device_name")), str(outcome["command"]).strip()))
    return ran


@dataclass
class _Gns3Scratch:
    labs: Gns3Labs
    service: EvalService
    project_id: str
    credentials: str
    #: What the set-up and the read-back call the tools with (past the gate).
    context: ToolContext

    async def state(self, transcript: Transcript) -> SimulatedLab:
        return await self.labs.read_back(self.context, transcript)


class Gns3Labs:
    """Scratch projects on one GNS3 server, with one user's token, served by the
    service over its GNS3 tools."""

    kind = "gns3"

    def __init__(
        self, client: Gns3Client, tools: Gns3ToolExecutor, token: str, service: EvalService
    ) -> None:
        self.client = client
        self.tools = tools
        self.token = token
        self.service = service
        self._templates: dict[str, dict[str, Any]] | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls, settings: Settings, llm: LLMSettings, token: str | None
    ) -> AsyncIterator[Gns3Labs]:
        """The GNS3 server of ``settings.gns3`` with ``token``, else signed in with its
        username and password; everything built by the service's container."""
        container = eval_container(settings, llm)
        try:
            client: Gns3Client = await resolve(container.gateways.gns3())
            tools: Gns3ToolExecutor = await resolve(container.gateways.tools())
            service = await EvalService.of(container)
            if token is None:
                username, password = settings.gns3.username, settings.gns3.password
                if not username or password is None:
                    raise CopilotError("give --gns3-token, or --gns3-username and a password")
                token = await client.authenticate(username, password.get_secret_value())
            await client.current_user(token)  # the token works, before any project
            yield cls(client, tools, token, service)
        finally:
            await resolve(container.shutdown_resources())

    @contextlib.asynccontextmanager
    async def open(self, task: Task) -> AsyncIterator[Scratch]:
        project = await self.client.create_project(self.token, project_name(task.name))
        project_id = str(project["project_id"])
        try:
            context = ToolContext(
                project_id,
                EVAL_USER,
                f"eval-{task.name}",
                task.mode,
                AbortToken(),
                credentials=self.token,
                approval=ApprovalPolicy.CHANGES,
            )
            await self._set_up(context, task.given)
            yield _Gns3Scratch(self, self.service, project_id, self.token, context)
        finally:
            await asyncio.shield(self._delete(project_id, str(project.get("name"))))

    async def _delete(self, project_id: str, name: str) -> None:
        try:
            await self.client.delete_project(self.token, project_id)
        except CopilotError as exc:
            print(f"gns3-copilot eval: could not delete {name}: {exc.message}", file=sys.stderr)

    async def templates(self) -> dict[str, dict[str, Any]]:
        if self._templates is None:
            listed = await self.client.templates(self.token)
            self._templates = {str(t["template_id"]): t for t in listed}
        return self._templates

    # ------------------------------------------------------------------ set-up
    async def _set_up(self, context: ToolContext, given: Given) -> None:
        project_id = context.project_id
        vpcs = next((t for t in (await self.templates()).values() if t["name"] == "VPCS"), None)
        if vpcs is None and given.pcs:
            raise LabUnavailable("GNS3 has no template named VPCS")
        nodes = []
        for index, name in enumerate(given.pcs):
            assert vpcs is not None
            node = await self.client.create_node_from_template(
                self.token, project_id, str(vpcs["template_id"]), x=index * 200 - 100, y=0
            )
            if node.get("name") != name:
                node = await self.client.update_node(
                    self.token, project_id, str(node["node_id"]), name=name
                )
            nodes.append(node)
        if given.linked:
            for a, b in itertools.pairwise(nodes):
                ends = [(str(a["node_id"]), 0, 0), (str(b["node_id"]), 0, 0)]
                await self.client.create_link(self.token, project_id, ends)
        if given.started or given.needs_start:
            await self._start(project_id, nodes, keep=given.started)
        if given.addresses:
            await self._address(context, given.addresses)

    async def _start(self, project_id: str, nodes: list[dict[str, Any]], *, keep: bool) -> None:
        """Start the nodes (``keep``) or check that one starts (then stop it again)."""
        settle = self.tools.settings.start_timeout
        for node in nodes if keep else nodes[:1]:
            node_id, name = str(node["node_id"]), str(node["name"])
            try:
                await self.client.node_action(self.token, project_id, node_id, "start")
                status = await self._status(project_id, node_id, settle)
            except CopilotError as exc:
                reason = exc.message.removeprefix("GNS3 could not start the node: ")
                raise LabUnavailable(f"the node could not start: {reason} ({name})") from exc
            if status != "started":
                raise LabUnavailable(
                    f"the node could not start: {name} is {status!r} after GNS3 accepted the start"
                )
            if not keep:
                await self.client.node_action(self.token, project_id, node_id, "stop")

    async def _status(self, project_id: str, node_id: str, within: float) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            status = str((await self.client.node(self.token, project_id, node_id)).get("status"))
            if status == "started" or loop.time() >= deadline:
                return status
            await asyncio.sleep(self.tools.settings.poll_interval)

    async def _address(self, context: ToolContext, addresses: tuple[tuple[str, str], ...]) -> None:
        configs = [{"device_name": name, "commands": [f"ip {a}"]} for name, a in addresses]
        result = await self._console(context, "execute_vpcs_commands", configs)
        if result is None:
            raise LabUnavailable("the hosts could not be addressed through their consoles")

    async def _console(
        self, context: ToolContext, tool: str, configs: list[dict[str, Any]]
    ) -> Any | None:
        text = json.dumps({"device_configs": configs})
        call = ParsedToolCall.parse(f"eval-{secrets.token_hex(4)}", tool, text)
        result = await self.tools.execute(call, context)
        return None if result.status is not ToolStatus.SUCCESS else result.output

    # ------------------------------------------------------------------ read-back
    async def read_back(self, context: ToolContext, transcript: Transcript) -> SimulatedLab:
        """The project's state as GNS3 has it now, in the shape the judges read (the
        simulated lab's)."""
        project_id = context.project_id
        nodes = await self.client.nodes(self.token, project_id)
        links = await self.client.links(self.token, project_id)
        templates = await self.templates()
        lab = SimulatedLab()
        by_id = {str(node["node_id"]): node for node in nodes}
        for node in nodes:
            template = templates.get(str(node.get("template_id")), {}).get("name")
            name = str(node["name"])
            lab.nodes[name] = SimNode(name, str(template or node.get("node_type")))
            lab.nodes[name].status = str(node.get("status"))
        for link in links:
            ends = [_end(by_id, end) for end in link.get("nodes") or []]
            if len(ends) == 2:
                lab.links.append((ends[0], ends[1]))
        lab.commands.extend(console_commands(transcript))
        hosts = [
            n["name"]
            for n in nodes
            if n.get("node_type") == "vpcs" and n.get("status") == "started"
        ]
        if hosts:
            configs = [{"device_name": name, "commands": ["show ip"]} for name in hosts]
            shown = await self._console(context, "execute_multiple_device_commands", configs)
            probe = Transcript(calls=[("execute_vpcs_commands", {})], outputs=[shown])
            for (device, _), text in zip(console_commands(probe), _outputs(shown), strict=False):
                if (match := _IP_MASK.search(text)) and device in lab.nodes:
                    lab.nodes[device].address = ipaddress.IPv4Interface(match.group(1))
        return lab


def _end(by_id: dict[str, dict[str, Any]], end: dict[str, Any]) -> tuple[str, str]:
    node = by_id.get(str(end.get("node_id")), {})
    port = next(
        (
            str(p.get("name"))
            for p in node.get("ports") or []
            if p.get("adapter_number") == end.get("adapter_number")
            and p.get("port_number") == end.get("port_number")
        ),
        f"{end.get('adapter_number')}/{end.get('port_number')}",
    )
    return str(node.get("name")), port


def _outputs(output: Any) -> list[str]:
    """The text of each command outcome, in the order :func:`console_commands` reads."""
    texts: list[str] = []
    results = output.get("results") if isinstance(output, dict) else None
    for result in results if isinstance(results, list) else []:
        outcomes = result.get("output") if isinstance(result, dict) else None
        for outcome in outcomes if isinstance(outcomes, list) else []:
            if isinstance(outcome, dict) and "command" in outcome and not outcome.get("error"):
                texts.append(str(outcome.get("output") or ""))
    return texts

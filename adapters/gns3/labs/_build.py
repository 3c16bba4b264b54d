"""A resolved lab plan built on a GNS3 project: :class:`Gns3LabBuilder` (issue 39).

:meth:`Gns3LabBuilder.build` makes what a :class:`~copilot_core.labs.ResolvedPlan` says,
in stages, each said as it starts and per device as it goes (``progress``):

1. **nodes**: each plan node from its template (``template_id``) at its position, under
   its name (a node of that name already in the project is kept as it is: a plan relative
   to the lab names the nodes it has);
2. **links**: the links a relative build removes deleted first (``remove_links``: found
   by their ends' node and port names), then each plan link between the ports the
   planner resolved (adapter and port numbers), unless the project already links those
   two ports;
3. **start**: each node of the plan started, and waited for until GNS3 says so;
4. **configure**: each device with lines, once its console shows its prompt (an FRR
   router once zebra answers too: vtysh answers before zebra runs, and a configuration
   sent then fails with "zebra is not running"), its lines sent by the one sender of
   planned lines (:func:`~adapters.gns3.tools.send_device_lines`: each line judged by
   its platform's grammar and the operator's forbidden list first).

Nodes are created one after the other (GNS3 names a new node from its template: see
:meth:`_Build.create_nodes`); they are started, and devices configured, ``build_consoles``
at a time (:class:`~adapters.gns3.lab.Gns3ToolSettings`): a lab of ten routers does not
open twenty consoles at once. Nothing is raised for a node, link or device that fails: the
:class:`LabBuildReport` names what was made (node and link ids: what an exact rollback
deletes) and every problem, and the build goes on with the rest (a verified build's
checks then say what does not work). An abort stops between steps; what was made is in
the report.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from adapters.gns3._faults import KINDS
from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot, wait_for_prompt
from adapters.gns3.tools import send_device_lines
from copilot_core import ToolContext
from copilot_core.errors import AuthenticationError, CopilotError
from copilot_core.labs import PlanLink, Platform, ResolvedPlan

__all__ = ["BuiltDevice", "BuiltLink", "BuiltNode", "Gns3LabBuilder", "LabBuildReport"]

JSON = dict[str, Any]
Progress = Callable[[str], Awaitable[None]]
T = TypeVar("T")

#: What a router's console is asked to know zebra runs (zebra's own table).
_ZEBRA_PROBE = "show interface brief"


@dataclass(frozen=True, slots=True)
class BuiltNode:
    """A node of the plan in the project: ``created`` by this build, or already there."""

    name: str
    node_id: str
    created: bool


@dataclass(frozen=True, slots=True)
class BuiltLink:
    """A link of the plan (``R1:eth0-R2:eth0``) in the project."""

    ends: str
    link_id: str
    created: bool


@dataclass(frozen=True, slots=True)
class BuiltDevice:
    """A device's lines: ``configured`` (every line ran) or not, and why."""

    name: str
    lines: int
    configured: bool
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class LabBuildReport:
    """What a build made, and what went wrong (``problems``, one sentence each)."""

    nodes: tuple[BuiltNode, ...] = ()
    links: tuple[BuiltLink, ...] = ()
    #: The links a relative build deleted (``created`` is false).
    removed_links: tuple[BuiltLink, ...] = ()
    devices: tuple[BuiltDevice, ...] = ()
    problems: tuple[str, ...] = ()
    #: Seconds each stage took (``nodes``, ``links``, ``start``, ``configure``, ``total``).
    timings: Mapping[str, float] = field(default_factory=dict)
    aborted: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems and not self.aborted

    @property
    def created_nodes(self) -> tuple[BuiltNode, ...]:
        return tuple(n for n in self.nodes if n.created)

    @property
    def created_links(self) -> tuple[BuiltLink, ...]:
        return tuple(k for k in self.links if k.created)

    def to_dict(self) -> JSON:
        return {
            "status": "success" if self.ok else "aborted" if self.aborted else "partial_success",
            "nodes": [
                {"name": n.name, "node_id": n.node_id, "created": n.created} for n in self.nodes
            ],
            "links": [
                {"link": k.ends, "link_id": k.link_id, "created": k.created} for k in self.links
            ],
            **(
                {
                    "removed_links": [
                        {"link": k.ends, "link_id": k.link_id} for k in self.removed_links
                    ]
                }
                if self.removed_links
                else {}
            ),
            "devices": [
                {
                    "name": d.name,
                    "lines": d.lines,
                    "configured": d.configured,
                    **({"error": d.error} if d.error else {}),
                }
                for d in self.devices
            ],
            "problems": list(self.problems),
            "timings_s": {k: round(v, 2) for k, v in self.timings.items()},
        }


class _Aborted(Exception):
    """The call's abort fired: the build stops where it is."""


class Gns3LabBuilder:
    """Builds resolved plans on the project of each call (see the module)."""

    def __init__(self, lab: LabAccess) -> None:
        self.lab = lab

    async def build(
        self,
        resolved: ResolvedPlan,
        context: ToolContext,
        progress: Progress | None = None,
        *,
        remove_links: tuple[PlanLink, ...] = (),
    ) -> LabBuildReport:
        """Build ``resolved``; ``remove_links`` (a relative build's) are deleted first."""
        if not context.credentials:
            raise AuthenticationError("No GNS3 credentials came with this request.")
        run = _Build(self.lab, resolved, CallScope(context, context.credentials), progress)
        run.remove = remove_links
        return await run.run()


class _Build:
    """One build's state: what it made so far, its problems, its stages."""

    def __init__(
        self,
        lab: LabAccess,
        resolved: ResolvedPlan,
        scope: CallScope,
        progress: Progress | None,
    ) -> None:
        self.lab = lab
        self.resolved = resolved
        self.plan = resolved.plan
        self.scope = scope
        self.progress = progress
        self.slots = asyncio.Semaphore(lab.settings.build_consoles)
        self.loop = asyncio.get_running_loop()
        self.nodes: dict[str, BuiltNode] = {}
        self.links: list[BuiltLink] = []
        self.remove: tuple[PlanLink, ...] = ()
        self.removed: list[BuiltLink] = []
        self.devices: list[BuiltDevice] = []
        self.problems: list[str] = []
        self.timings: dict[str, float] = {}

    async def say(self, text: str) -> None:
        if self.progress is not None:
            await self.progress(text if text.endswith("\n") else text + "\n")

    def check_abort(self) -> None:
        if self.scope.context.abort.is_aborted():
            raise _Aborted

    async def run(self) -> LabBuildReport:
        started = self.loop.time()
        aborted = False
        try:
            for stage, work in (
                ("nodes", self.create_nodes),
                ("unlink", self.remove_links),
                ("links", self.create_links),
                ("start", self.start_nodes),
                ("configure", self.configure),
            ):
                self.check_abort()
                if stage == "unlink" and not self.remove:
                    continue
                begun = self.loop.time()
                await work()
                self.timings[stage] = self.loop.time() - begun
        except _Aborted:
            aborted = True
            await self.say(f"aborted ({self.scope.context.abort.reason})")
        except CopilotError as exc:  # GNS3 could not be read: the stages after are not run
            self.problems.append(f"the build stopped: {exc.message}")
            await self.say(f"stopped: {exc.message}")
        self.timings["total"] = self.loop.time() - started
        order = {n.name: i for i, n in enumerate(self.plan.nodes)}
        return LabBuildReport(
            nodes=tuple(sorted(self.nodes.values(), key=lambda n: order.get(n.name, 0))),
            links=tuple(self.links),
            removed_links=tuple(self.removed),
            devices=tuple(sorted(self.devices, key=lambda d: order.get(d.name, 0))),
            problems=tuple(self.problems),
            timings=self.timings,
            aborted=aborted,
        )

    async def bounded(self, work: Iterable[Awaitable[T]]) -> list[T]:
        """``work`` ``build_consoles`` at a time (an abort stops those not begun)."""

        async def one(job: Awaitable[T]) -> T:
            async with self.slots:
                if self.scope.context.abort.is_aborted():
                    close = getattr(job, "close", None)
                    if close is not None:
                        close()  # never awaited: say so to Python
                    raise _Aborted
                return await job

        done = await asyncio.gather(*(one(job) for job in work), return_exceptions=True)
        for outcome in done:  # every job ended: now an abort or a failure is said
            if isinstance(outcome, BaseException):
                raise outcome
        return [outcome for outcome in done if not isinstance(outcome, BaseException)]

    async def snapshot(self) -> LabSnapshot:
        return await self.lab.snapshot(self.scope)

    # ------------------------------------------------------------------ nodes
    async def create_nodes(self) -> None:
        """Each missing node from its template, then renamed to its plan name, one after
        the other: GNS3 (3.0.6) names a node from its template's format whatever the
        request says, and a name it gave a node still being made could be the plan's
        name of another (renaming that one would then clash)."""
        snapshot = await self.snapshot()
        templates = {n.name: n.template_id for n in self.resolved.nodes}
        missing = []
        for node in self.plan.nodes:
            there = snapshot.by_name(node.name)
            if there is not None:
                self.nodes[node.name] = BuiltNode(node.name, str(there["node_id"]), False)
            else:
                missing.append(node)
        await self.say(
            f"creating {len(missing)} node(s)"
            + (f", keeping {len(self.nodes)} the project has" if self.nodes else "")
        )

        async def create(name: str, x: int, y: int) -> None:
            template = templates.get(name)
            if template is None:
                self.problems.append(f"{name}: the plan was not resolved to a template")
                return
            try:
                made = await self.lab.client.create_node_from_template(
                    self.scope.token, self.scope.project_id, template, x=x, y=y
                )
            except CopilotError as exc:
                self.problems.append(f"{name} was not created: {exc.message}")
                await self.say(f"{name}: not created ({exc.message})")
                return
            node_id = str(made["node_id"])
            self.nodes[name] = BuiltNode(name, node_id, True)
            if made.get("name") != name:
                try:
                    await self.lab.client.update_node(
                        self.scope.token, self.scope.project_id, node_id, name=name
                    )
                except CopilotError as exc:
                    self.problems.append(
                        f"{name} was created as {made.get('name')!r} and not renamed: {exc.message}"
                    )
                    return
            await self.say(f"{name}: created")

        for node in missing:  # one after the other: see the method's docstring
            self.check_abort()
            await create(node.name, node.x, node.y)

    # ------------------------------------------------------------------ links
    async def remove_links(self) -> None:
        """The links a relative build removes, found by their ends' names, deleted."""
        snapshot = await self.snapshot()
        by_ends = {
            frozenset(f"{name}:{port}" for name, port in snapshot.link_ends(link)): link
            for link in snapshot.links
        }
        await self.say(f"deleting {len(self.remove)} link(s)")
        for link in self.remove:
            self.check_abort()
            text = f"{link.ends[0]}-{link.ends[1]}"
            found = by_ends.get(frozenset(link.ends))
            if found is None:
                self.problems.append(f"link {text} was not deleted: it is not in the project")
                continue
            try:
                await self.lab.client.delete_link(
                    self.scope.token, self.scope.project_id, str(found["link_id"])
                )
            except CopilotError as exc:
                self.problems.append(f"link {text} was not deleted: {exc.message}")
                await self.say(f"link {text}: not deleted ({exc.message})")
                continue
            self.removed.append(BuiltLink(text, str(found["link_id"]), False))
            await self.say(f"link {text}: deleted")

    async def create_links(self) -> None:
        ports = {p.endpoint: p for p in self.resolved.ports}
        snapshot = await self.snapshot()
        existing = {
            frozenset(
                (str(end["node_id"]), int(end["adapter_number"]), int(end["port_number"]))
                for end in link.get("nodes") or []
            ): str(link["link_id"])
            for link in snapshot.links
        }
        await self.say(f"linking {len(self.plan.links)} port pair(s)")
        for link in self.plan.links:
            self.check_abort()
            text = f"{link.ends[0]}-{link.ends[1]}"
            ends: list[tuple[str, int, int]] = []
            for end in link.ends:
                node = self.nodes.get(end.partition(":")[0])
                port = ports.get(end)
                if node is None or port is None:
                    why = "its node was not created" if node is None else "its port not resolved"
                    self.problems.append(f"link {text} was not made: {end}: {why}")
                    break
                ends.append((node.node_id, port.adapter_number, port.port_number))
            else:
                there = existing.get(frozenset(ends))
                if there is not None:
                    self.links.append(BuiltLink(text, there, False))
                    continue
                try:
                    made = await self.lab.client.create_link(
                        self.scope.token, self.scope.project_id, ends
                    )
                except CopilotError as exc:
                    self.problems.append(f"link {text} was not made: {exc.message}")
                    await self.say(f"link {text}: not made ({exc.message})")
                    continue
                self.links.append(BuiltLink(text, str(made["link_id"]), True))

    # ------------------------------------------------------------------ start
    async def start_nodes(self) -> None:
        await self.say(f"starting {len(self.nodes)} node(s)")
        await self.bounded(self.start(node) for node in self.nodes.values())

    async def start(self, node: BuiltNode) -> None:
        token, project = self.scope.token, self.scope.project_id
        settings = self.lab.settings
        try:
            current = await self.lab.client.node(token, project, node.node_id)
            if current.get("status") == "started":
                return
            await self.lab.client.node_action(token, project, node.node_id, "start")
            accepted = self.loop.time()
            while True:
                current = await self.lab.client.node(token, project, node.node_id)
                status = current.get("status")
                if status == "started":
                    await self.say(f"{node.name}: started")
                    return
                waited = self.loop.time() - accepted
                if status == "stopped" and waited >= settings.start_grace:
                    self.problems.append(
                        f"{node.name}: GNS3 accepted the start, but the node is still stopped "
                        f"after {waited:.0f} s (the GNS3 server's log says why)"
                    )
                    return
                if waited >= settings.start_timeout:
                    self.problems.append(
                        f"{node.name} did not start within {settings.start_timeout:g} s "
                        f"(status {status!r})"
                    )
                    return
                self.check_abort()
                await asyncio.sleep(settings.poll_interval)
        except CopilotError as exc:
            self.problems.append(f"{node.name} was not started: {exc.message}")

    # ------------------------------------------------------------------ configure
    async def configure(self) -> None:
        configs = [c for c in self.plan.config if c.node in self.nodes]
        await self.say(
            f"configuring {len(configs)} device(s), {self.lab.settings.build_consoles} at a time"
        )
        snapshot = await self.snapshot()
        await self.bounded(self.configure_one(snapshot, c.node, c.lines) for c in configs)

    async def configure_one(self, snapshot: LabSnapshot, name: str, lines: tuple[str, ...]) -> None:
        begun = self.loop.time()
        platform = next(n.platform for n in self.plan.nodes if n.name == name)
        node = snapshot.by_id(self.nodes[name].node_id)
        why = "the node is not in the project" if node is None else None
        if node is not None:
            await self.say(f"{name}: waiting for its console")
            why = await self.ready(snapshot, node, platform)
        if why is None and node is not None:
            self.check_abort()
            await self.say(f"{name}: sending {len(lines)} line(s)")
            why = await send_device_lines(self.lab, snapshot, node, platform, lines)
        seconds = self.loop.time() - begun
        self.devices.append(BuiltDevice(name, len(lines), why is None, why, seconds))
        if why is None:
            await self.say(f"{name}: configured ({len(lines)} lines, {seconds:.1f} s)")
        else:
            self.problems.append(f"{name} was not configured: {why}")
            await self.say(f"{name}: not configured ({why})")

    async def ready(self, snapshot: LabSnapshot, node: JSON, platform: Platform) -> str | None:
        """``None`` once the device takes its lines, else why not (within the console
        wait: ``max_console_wait``)."""
        settings = self.lab.settings
        deadline = self.loop.time() + settings.max_console_wait
        kind = KINDS[platform]
        waited = await wait_for_prompt(
            self.lab, self.scope, snapshot, node, settings.max_console_wait, kind
        )
        if waited.get("status") != "success":
            return str(waited.get("error") or "its console shows no prompt")
        if platform is not Platform.FRR:
            return None
        target = snapshot.console_target(node, kind)
        said = "zebra was not asked"
        while self.loop.time() < deadline:
            transcript = await self.lab.runner.run(target, [_ZEBRA_PROBE])
            outputs = " ".join(o.output for o in transcript.outcomes)
            if transcript.error is None and transcript.outcomes and "is not running" not in outputs:
                return None
            said = transcript.error or outputs.strip() or "no answer"
            self.check_abort()
            await asyncio.sleep(max(settings.poll_interval, 1.0))
        return f"FRR did not answer within {settings.max_console_wait:g} s ({said[:200]})"

"""Console tools: show commands, configuration lines and VPCS commands on started devices.

Every command is checked before anything is sent, on the platform GNS3's node says the
device is (a ``device_type`` argument can only add a stricter reading, never replace it;
a mismatch is said in the result): a control character refuses it (one command is one
line), the forbidden list blocks it in every mode and every spelling, and teaching mode
refuses what is not known to be read-only there (:mod:`adapters.gns3.model._grammar`). The
approval preview lists every command of the call, in order and as sent, each marked when
it changes the device. The devices of one call run concurrently, one command stream per
console. Each command has a time limit (``timeout_s``, else the runner's default, raised
for a ``ping``/``traceroute`` whose count needs longer); the whole call is bounded by
``call_budget``. What a console prints is reported as progress while it runs; outputs
that ntc-templates can parse come back with ``parsed`` rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from adapters.gns3.console import REJECTED, ConsoleTranscript
from adapters.gns3.lab import (
    AUTOMATION_ONLY,
    BOTH_MODES,
    AtMost,
    CallScope,
    Describer,
    Gns3Tool,
    LabAccess,
    LabSnapshot,
    RestoreScope,
    ToolArguments,
    batch,
    item,
)
from adapters.gns3.model import (
    LABELS,
    DeviceKind,
    Verdict,
    control_character_error,
    judge_strictest,
    kind_from_name,
    platform_for,
    platform_hint,
    teaching_refusal,
)
from copilot_core import CopilotMode, ToolResult
from copilot_core.ports import ChangePreview, PreviewCommand, ToolEffect

__all__ = ["changing_devices", "command_tools"]

JSON = dict[str, Any]


def _commands(commands: list[str]) -> list[str]:
    for command in commands:
        error = control_character_error(command)
        if error is not None:
            raise ValueError(error)
    kept = [command for command in commands if command.strip()]
    if not kept:
        raise ValueError("give at least one command")
    return kept


def _device_name(name: str) -> str:
    if not name.strip():
        raise ValueError("must not be blank")
    return name.strip()


def _device_type(value: str) -> str:
    if kind_from_name(value) is None:
        known = ", ".join(kind.value for kind in DeviceKind)
        raise ValueError(f"unknown device type {value!r}; known: {known}")
    return value


Commands = Annotated[list[str], AfterValidator(_commands), AtMost("max_commands")]
DeviceName = Annotated[str, AfterValidator(_device_name)]
DeviceType = Annotated[str, AfterValidator(_device_type)]
Timeout = Annotated[float, Field(gt=0), AtMost("max_command_timeout")]
_DEVICE_TYPE = (
    "the platform, when GNS3 cannot tell it (vpcs, cisco_ios (also IOSv, IOS-XE), "
    "arista_eos, juniper_junos, frr, linux, huawei_vrp or generic); the platform GNS3 "
    "reports always applies, and commands must be read-only on both"
)
_TIMEOUT = (
    "seconds each command may run before it is interrupted (its output so far is returned "
    "with timed_out); default: see the tool's description"
)


class DeviceCommands(ToolArguments):
    device_name: DeviceName = Field(description="node name")
    commands: Commands = Field(description="commands to run in order, e.g. show ip interface brief")
    device_type: DeviceType | None = Field(None, description=_DEVICE_TYPE)


class DeviceConfigLines(ToolArguments):
    device_name: DeviceName = Field(description="node name")
    config_commands: Commands = Field(description="configuration lines, in order")
    device_type: DeviceType | None = Field(None, description=_DEVICE_TYPE)


class ShowCommands(ToolArguments):
    device_configs: Annotated[list[DeviceCommands], AtMost("max_batch")] = Field(min_length=1)
    timeout_s: Timeout | None = Field(None, description=_TIMEOUT)


class ConfigCommands(ToolArguments):
    device_configs: Annotated[list[DeviceConfigLines], AtMost("max_batch")] = Field(min_length=1)
    timeout_s: Timeout | None = Field(None, description=_TIMEOUT)


@dataclass(frozen=True, slots=True)
class _Job:
    device_name: str
    commands: list[str]
    device_type: str | None


# ------------------------------------------------------------------ handlers
async def show_commands(lab: LabAccess, args: ShowCommands, scope: CallScope) -> ToolResult:
    jobs = [_Job(e.device_name, e.commands, e.device_type) for e in args.device_configs]
    return await _run(lab, scope, jobs, args.timeout_s, config=False, vpcs_only=False)


async def config_commands(lab: LabAccess, args: ConfigCommands, scope: CallScope) -> ToolResult:
    jobs = [_Job(e.device_name, e.config_commands, e.device_type) for e in args.device_configs]
    return await _run(lab, scope, jobs, args.timeout_s, config=True, vpcs_only=False)


async def vpcs_commands(lab: LabAccess, args: ShowCommands, scope: CallScope) -> ToolResult:
    jobs = [_Job(e.device_name, e.commands, e.device_type) for e in args.device_configs]
    return await _run(lab, scope, jobs, args.timeout_s, config=False, vpcs_only=True)


async def _run(
    lab: LabAccess,
    scope: CallScope,
    jobs: Sequence[_Job],
    timeout_s: float | None,
    *,
    config: bool,
    vpcs_only: bool,
) -> ToolResult:
    deadline = asyncio.get_running_loop().time() + lab.settings.call_budget
    snapshot = await lab.snapshot(scope)
    results = await asyncio.gather(
        *(
            _device(
                lab, snapshot, scope, job, timeout_s, deadline, config=config, vpcs_only=vpcs_only
            )
            for job in jobs
        )
    )
    return batch(list(results))


@dataclass(frozen=True, slots=True)
class _Platform:
    """How one device of a call is read: its console behaves as ``console``; a command
    is read-only only when it is on every one of ``rules`` (GNS3's platform, and the
    model's ``device_type`` when it differs); ``note`` says a mismatch."""

    console: DeviceKind
    rules: tuple[DeviceKind, ...]
    note: str | None = None

    def extra(self) -> JSON:
        return {"platform_note": self.note} if self.note else {}


def _platform(snapshot: LabSnapshot, node: JSON, device_type: str | None) -> _Platform:
    """The platform GNS3's node says; ``device_type`` may only add a stricter reading (and
    pick how the console behaves when GNS3 cannot tell the platform)."""
    detected = snapshot.kind(node)
    asked = kind_from_name(device_type) if device_type else None
    if asked is None or asked is detected:
        return _Platform(detected, (detected,))
    name = node.get("name")
    if detected is DeviceKind.GENERIC:
        note = (
            f"GNS3 does not tell {name}'s platform; its console is read as {asked.value}, "
            f"and commands had to be read-only both as {asked.value} and on every platform."
        )
        return _Platform(asked, (DeviceKind.GENERIC, asked), note)
    note = (
        f"device_type {device_type!r} does not match {name}: GNS3 says it is a "
        f"{detected.value} device ({LABELS[detected]}); its commands were judged and sent as "
        f"{detected.value} (and had to be read-only as {asked.value} too)."
    )
    return _Platform(detected, (detected, asked), note)


def _forbidden(
    lab: LabAccess, command: str, kinds: Sequence[DeviceKind], *, config: bool
) -> str | None:
    for kind in kinds:
        reason = lab.skills.forbidden.reason(command, kind, config=config)
        if reason is not None:
            return reason
    return None


def _limits(
    lab: LabAccess, kind: DeviceKind, commands: list[str], timeout_s: float | None
) -> list[float]:
    """Each command's limit: ``timeout_s`` if given, else the default, raised to what a
    ping or traceroute with a count needs; never above the server's maximum."""
    if timeout_s is not None:
        return [timeout_s] * len(commands)
    platform = platform_for(kind)
    default = lab.runner.command_timeout
    ceiling = lab.settings.max_command_timeout
    return [min(ceiling, max(default, platform.fitting_limit(c) or 0.0)) for c in commands]


async def _device(
    lab: LabAccess,
    snapshot: LabSnapshot,
    scope: CallScope,
    job: _Job,
    timeout_s: float | None,
    deadline: float,
    *,
    config: bool,
    vpcs_only: bool,
) -> JSON:
    name, commands = job.device_name, job.commands
    node = snapshot.by_name(name)
    if node is None:
        return item(name, "failed", error=snapshot.unknown_node(name))
    name = str(node.get("name"))
    platform = _platform(snapshot, node, job.device_type)
    kind = platform.console
    if vpcs_only and kind is not DeviceKind.VPCS:
        return item(
            name,
            "failed",
            error=f"{name} is a {kind.value} device, not a VPCS; use "
            "execute_multiple_device_commands or execute_multiple_device_config_commands.",
        )
    if node.get("status") != "started":
        return item(
            name,
            "failed",
            error=f"{name} is {node.get('status')}; start it first with start_gns3_node.",
        )
    if node.get("console_type") != "telnet" or not node.get("console"):
        return item(
            name,
            "failed",
            error=f"{name} has no telnet console (console type {node.get('console_type')!r}); "
            "its commands cannot be run.",
        )
    blocked: list[JSON] = []
    allowed: list[str] = []
    teaching = scope.context.mode is CopilotMode.TEACHING_ASSISTANT
    for command in commands:
        reason = _forbidden(lab, command, platform.rules, config=config)
        if reason is None and teaching:
            verdict = judge_strictest(command, platform.rules, config=config)
            if verdict.changes:
                reason = teaching_refusal(command, verdict.platform, verdict.reason)
        if reason is None:
            allowed.append(command)
        else:
            blocked.append({"command": command, "reason": reason})
    if not allowed:
        refused = item(
            name,
            "failed",
            [],
            blocked_commands=blocked,
            error="every command was blocked",
            **platform.extra(),
        )
        return _taught(lab, kind, refused, [b["command"] for b in blocked])
    target = snapshot.console_target(node, kind)

    def progress(text: str) -> None:
        scope.context.report_progress(text, device=name)

    transcript = await lab.runner.run(
        target,
        allowed,
        config_mode=config,
        limits=_limits(lab, kind, allowed, timeout_s),
        deadline=deadline,
        progress=progress,
    )
    await _parse(lab, transcript, config=config)
    result = _device_result(transcript, blocked)
    result.update(platform.extra())
    failed = [b["command"] for b in blocked]
    failed += [o.command for o in transcript.outcomes if o.error == REJECTED]
    return _taught(lab, kind, result, failed)


def _taught(lab: LabAccess, kind: DeviceKind, result: JSON, failed: list[str]) -> JSON:
    """A device's result naming its platform and the right form there when a command was
    refused by the device or not sent (so the model's next call can be right)."""
    if failed:
        result["platform"] = kind.value
        result["hint"] = platform_hint(kind, failed, lab.skills.hint(kind.value))
    return result


async def _parse(lab: LabAccess, transcript: ConsoleTranscript, *, config: bool) -> None:
    """Rows for the outputs ntc-templates knows (show commands that completed whole)."""
    platform = platform_for(transcript.target.kind).ntc_platform
    if platform is None or config:
        return
    outcomes = [o for o in transcript.outcomes if o.ok and not o.truncated and o.output]
    if not outcomes:
        return
    await lab.parser.ready()
    for outcome in outcomes:
        outcome.parsed = lab.parser.parse(platform, outcome.command, outcome.output)


def _device_result(transcript: ConsoleTranscript, blocked: list[JSON]) -> JSON:
    name = transcript.target.name
    output = [outcome.to_dict() for outcome in transcript.outcomes]
    prompt = transcript.prompt or None  # the device's own prompt style (PC1>, R1#)
    if transcript.error is not None:
        return item(
            name,
            "failed",
            output,
            blocked_commands=blocked or None,
            error=transcript.error,
            prompt=prompt,
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
    return item(
        name,
        status,
        output,
        blocked_commands=blocked or None,
        error="; ".join(problems) if problems else None,
        prompt=prompt,
    )


# ------------------------------------------------------------------ changes
Entries = Sequence[tuple[str, Sequence[str], str | None]]


def _entries(args: ShowCommands | ConfigCommands) -> Entries:
    if isinstance(args, ConfigCommands):
        return [(e.device_name, e.config_commands, e.device_type) for e in args.device_configs]
    return [(e.device_name, e.commands, e.device_type) for e in args.device_configs]


def _preview(
    entries: Entries,
    kinds_of: dict[str, tuple[DeviceKind, ...]],
    *,
    config: bool,
    verb: str,
) -> ChangePreview | None:
    """Every command of the call, in order and as it will be sent, marked when it changes
    the device (``devices``: only those); ``None`` when nothing changes a device."""
    listed: dict[str, list[PreviewCommand]] = {}
    changing: dict[str, list[str]] = {}
    for name, commands, _ in entries:
        kinds = kinds_of.get(name, (DeviceKind.GENERIC,))
        for command in commands:
            verdict: Verdict = judge_strictest(command, kinds, config=config)
            note = (verdict.reason or "") if verdict.changes else ""
            line = PreviewCommand(command, verdict.changes, verdict.expanded, note)
            listed.setdefault(name, []).append(line)
            if verdict.changes:
                changing.setdefault(name, []).append(command)
    if not changing:
        return None
    return ChangePreview(f"{verb} {', '.join(changing)}", devices=changing, commands=listed)


def _static_kinds(entries: Entries) -> dict[str, tuple[DeviceKind, ...]]:
    """Without GNS3 at hand: the strictest reading (every platform), and the model's."""
    kinds: dict[str, tuple[DeviceKind, ...]] = {}
    for name, _, device_type in entries:
        asked = kind_from_name(device_type) if device_type else None
        kinds[name] = (DeviceKind.GENERIC, asked) if asked else (DeviceKind.GENERIC,)
    return kinds


def changing_devices(args: ShowCommands | ConfigCommands) -> frozenset[str]:
    """The devices a call's commands would change, read on every platform without GNS3
    at hand (the strictest reading, as the approval preview does before it asks GNS3):
    what the order of a reply's calls goes by."""
    entries = _entries(args)
    preview = _preview(
        entries, _static_kinds(entries), config=isinstance(args, ConfigCommands), verb=""
    )
    return frozenset(preview.devices) if preview is not None else frozenset()


def _configured(args: ConfigCommands, mode: CopilotMode) -> ChangePreview | None:
    entries = _entries(args)
    return _preview(entries, _static_kinds(entries), config=True, verb="configure")


def _maybe_configured(args: ShowCommands, mode: CopilotMode) -> ChangePreview | None:
    """The commands that would change a device, read on every platform (GNS3 could not
    be asked); teaching mode refuses them anyway."""
    if mode is CopilotMode.TEACHING_ASSISTANT:
        return None
    entries = _entries(args)
    return _preview(entries, _static_kinds(entries), config=False, verb="run commands on")


def _describer(*, config: bool) -> Describer[Any]:
    async def describe(
        lab: LabAccess, args: ShowCommands | ConfigCommands, scope: CallScope
    ) -> ChangePreview | None:
        """The preview on each device's platform, as GNS3 tells it."""
        if not config and scope.context.mode is CopilotMode.TEACHING_ASSISTANT:
            return None
        entries = _entries(args)
        snapshot = await lab.snapshot(scope)
        kinds = _static_kinds(entries)
        for name, _, device_type in entries:
            node = snapshot.by_name(name)
            if node is not None:
                kinds[name] = _platform(snapshot, node, device_type).rules
        return _preview(
            entries, kinds, config=config, verb="configure" if config else "run commands on"
        )

    return describe


def _restores(args: ShowCommands | ConfigCommands, preview: ChangePreview) -> RestoreScope:
    """The changed devices, read as the call will see them (its device_type overrides)."""
    types = {e.device_name: e.device_type for e in args.device_configs if e.device_type}
    return RestoreScope(devices=tuple(preview.devices), device_types=types)


_LIMITS = (
    "Each command may run {runner.command_timeout:g} s unless timeout_s says otherwise (at "
    "most {settings.max_command_timeout:g} s); a ping or traceroute with a count (ping X "
    "-c 40, repeat 40, count 40) gets a limit that fits the count. A command still running "
    "at its limit is interrupted and returns the output read so far with timed_out: true."
)


def command_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "execute_multiple_device_commands",
            "Run read-only (show/diagnostic) commands on several started devices' consoles at "
            "once; one result per device with each command's output (and `parsed` rows for "
            "show commands TextFSM templates know). Forbidden commands (traceroute, debug, "
            "reload...) are blocked; in teaching mode so are configuration commands. " + _LIMITS,
            ShowCommands,
            show_commands,
            BOTH_MODES,
            effect=ToolEffect.DEVICE_CHANGE,
            example={
                "device_configs": [{"device_name": "R1", "commands": ["show ip interface brief"]}]
            },
            change=_maybe_configured,
            describe=_describer(config=False),
            restores=_restores,
        ),
        Gns3Tool(
            "execute_multiple_device_config_commands",
            "Apply configuration lines on several started devices at once. On Cisco IOS the "
            "tool enters configure terminal and leaves with end itself: give only the lines "
            "(e.g. interface Gi0/0, ip address 10.0.0.1 255.255.255.0, no shutdown); likewise "
            "vtysh's configure terminal on FRR, system-view/return on Huawei, and configure/"
            "commit and-quit on Junos. " + _LIMITS,
            ConfigCommands,
            config_commands,
            AUTOMATION_ONLY,
            effect=ToolEffect.DEVICE_CHANGE,
            example={
                "device_configs": [
                    {"device_name": "R1", "config_commands": ["interface Gi0/0", "no shutdown"]}
                ]
            },
            change=_configured,
            describe=_describer(config=True),
            restores=_restores,
        ),
        Gns3Tool(
            "execute_vpcs_commands",
            "Run commands on VPCS hosts, including configuration (ip 10.0.0.2/24 10.0.0.1, "
            "save); one result per host. " + _LIMITS,
            ShowCommands,
            vpcs_commands,
            AUTOMATION_ONLY,
            effect=ToolEffect.DEVICE_CHANGE,
            example={
                "device_configs": [
                    {"device_name": "PC1", "commands": ["ip 10.0.0.2/24 10.0.0.1", "save"]}
                ]
            },
            change=_maybe_configured,
            describe=_describer(config=False),
            restores=_restores,
        ),
    ]

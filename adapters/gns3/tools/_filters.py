"""Link filters: read, set and clear the faults GNS3 injects on a link.

GNS3 3.0 offers, per link type (``available_filters``): ``delay`` (latency and jitter,
ms), ``packet_loss`` and ``corrupt`` (a chance in %), ``frequency_drop`` (drop every Nth
packet, -1: every packet) and ``bpf`` (drop packets matching BPF expressions). GNS3
accepts any filter name and any value on a link's ``PUT``, so this tool checks each
against what the link offers, with the ranges GNS3 gives, before anything is sent; and
since a ``PUT`` replaces a link's filters as a whole, ``set`` keeps the filters it does
not name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from adapters.gns3.lab import BOTH_MODES, CallScope, Gns3Tool, LabAccess, ToolArguments, batch, item
from adapters.gns3.tools._links import LinkRef, find_link
from copilot_core import CopilotMode, ToolResult
from copilot_core.errors import CopilotError
from copilot_core.ports import ChangePreview, ToolEffect

__all__ = ["filter_tools"]

JSON = dict[str, Any]
FilterName = Literal["delay", "packet_loss", "corrupt", "frequency_drop", "bpf"]
_ALL: tuple[FilterName, ...] = ("delay", "packet_loss", "corrupt", "frequency_drop", "bpf")


class FilterSettings(ToolArguments):
    """Filters to set (each one given replaces that filter; others stay)."""

    delay_ms: int | None = Field(None, description="latency added to each packet, ms")
    jitter_ms: int | None = Field(None, description="jitter (+/-) around the delay, ms")
    packet_loss_percent: int | None = Field(None, description="chance a packet is lost, %")
    corrupt_percent: int | None = Field(None, description="chance a packet is corrupted, %")
    drop_every_nth: int | None = Field(
        None, description="drop every Nth packet (frequency drop); -1 drops every packet"
    )
    bpf: list[str] | None = Field(
        None, description="BPF expressions; packets matching any of them are dropped"
    )

    @model_validator(mode="after")
    def _something(self) -> FilterSettings:
        if all(value is None for value in self.model_dump().values()):
            raise ValueError("give at least one filter")
        if self.jitter_ms is not None and self.delay_ms is None:
            raise ValueError("jitter_ms goes with delay_ms")
        if self.bpf is not None and not [e for e in self.bpf if e.strip()]:
            raise ValueError("bpf needs at least one expression")
        return self

    def as_gns3(self) -> dict[str, list[Any]]:
        """GNS3's filter values, by filter type (parameters in GNS3's order)."""
        wanted: dict[str, list[Any]] = {}
        if self.delay_ms is not None:
            wanted["delay"] = [self.delay_ms, self.jitter_ms or 0]
        if self.packet_loss_percent is not None:
            wanted["packet_loss"] = [self.packet_loss_percent]
        if self.corrupt_percent is not None:
            wanted["corrupt"] = [self.corrupt_percent]
        if self.drop_every_nth is not None:
            wanted["frequency_drop"] = [self.drop_every_nth]
        if self.bpf is not None:
            wanted["bpf"] = ["\n".join(e.strip() for e in self.bpf if e.strip())]
        return wanted


class LinkFilters(LinkRef):
    action: Literal["get", "set", "clear"] = Field(
        description="get: the link's filters and the ones it offers; set; clear"
    )
    filters: FilterSettings | None = Field(None, description="set: the filters to set")
    names: list[FilterName] | None = Field(
        None, description="clear: which filters to remove (default: all)"
    )

    @model_validator(mode="after")
    def _what_to_set(self) -> LinkFilters:
        if self.action == "set" and self.filters is None:
            raise ValueError("set needs filters")
        return self


def friendly(filters: dict[str, Any]) -> JSON:
    """A link's GNS3 filters as this tool names them."""
    shown: JSON = {}
    for name, values in filters.items():
        values = list(values or [])
        if name == "delay" and values:
            shown["delay_ms"] = values[0]
            shown["jitter_ms"] = values[1] if len(values) > 1 else 0
        elif name == "packet_loss" and values:
            shown["packet_loss_percent"] = values[0]
        elif name == "corrupt" and values:
            shown["corrupt_percent"] = values[0]
        elif name == "frequency_drop" and values:
            shown["drop_every_nth"] = values[0]
        elif name == "bpf" and values:
            shown["bpf"] = [line for line in str(values[0]).splitlines() if line.strip()]
        else:
            shown[name] = values
    return shown


def _problems(wanted: dict[str, list[Any]], offered: list[JSON]) -> list[str]:
    """What GNS3's ``available_filters`` say against the values (empty: all fine)."""
    by_type = {str(f.get("type")): f for f in offered}
    problems = []
    for name, values in wanted.items():
        spec = by_type.get(name)
        if spec is None:
            problems.append(f"this link does not offer {name} (it offers {', '.join(by_type)})")
            continue
        for value, parameter in zip(values, spec.get("parameters") or [], strict=False):
            if parameter.get("type") != "int":
                continue
            low, high = parameter.get("minimum"), parameter.get("maximum")
            unit = parameter.get("unit") or ""
            if (low is not None and value < low) or (high is not None and value > high):
                where = f"{low}..{high} {unit}".rstrip()
                problems.append(f"{name} {parameter.get('name')}: {value} is outside {where}")
    return problems


def _offered(offered: list[JSON]) -> list[JSON]:
    return [
        {
            "type": f.get("type"),
            "description": f.get("description"),
            "parameters": [
                {
                    k: p.get(k)
                    for k in ("name", "minimum", "maximum", "unit")
                    if p.get(k) is not None
                }
                for p in f.get("parameters") or []
            ],
        }
        for f in offered
    ]


async def link_filters(lab: LabAccess, args: LinkFilters, scope: CallScope) -> ToolResult:
    if args.action != "get" and scope.context.mode is CopilotMode.TEACHING_ASSISTANT:
        return ToolResult.error(
            "Setting or clearing link filters changes the lab: the lab automation mode does "
            "that. In teaching mode, use action get."
        )
    snapshot = await lab.snapshot(scope)
    link = find_link(snapshot, args)
    label = args.label
    if isinstance(link, str):
        return batch([item(label, "failed", error=link)])
    label = snapshot.describe_link(link)
    link_id = str(link["link_id"])
    current = dict(link.get("filters") or {})
    try:
        offered = await lab.client.available_filters(scope.token, scope.project_id, link_id)
        if args.action == "get":
            return batch(
                [
                    item(
                        label,
                        "success",
                        {"filters": friendly(current), "offered": _offered(offered)},
                    )
                ]
            )
        if args.action == "set":
            assert args.filters is not None
            wanted = args.filters.as_gns3()
            problems = _problems(wanted, offered)
            if problems:
                return batch(
                    [
                        item(
                            label,
                            "failed",
                            {"filters": friendly(current), "offered": _offered(offered)},
                            error="; ".join(problems) + ". Nothing was changed.",
                        )
                    ]
                )
            updated = {**current, **wanted}
        else:
            names = args.names or list(_ALL)
            updated = {k: v for k, v in current.items() if k not in names}
        result = await lab.client.update_link(
            scope.token, scope.project_id, link_id, filters=updated
        )
    except CopilotError as exc:
        return batch([item(label, "failed", error=exc.message)])
    return batch([item(label, "success", {"filters": friendly(dict(result.get("filters") or {}))})])


def _described(settings: FilterSettings) -> str:
    parts = []
    if settings.delay_ms is not None:
        parts.append(f"delay {settings.delay_ms} ms ± {settings.jitter_ms or 0} ms")
    if settings.packet_loss_percent is not None:
        parts.append(f"lose {settings.packet_loss_percent} % of packets")
    if settings.corrupt_percent is not None:
        parts.append(f"corrupt {settings.corrupt_percent} % of packets")
    if settings.drop_every_nth is not None:
        parts.append(
            "drop every packet"
            if settings.drop_every_nth == -1
            else f"drop every {settings.drop_every_nth}th packet"
        )
    if settings.bpf is not None:
        parts.append(f"drop packets matching {' or '.join(settings.bpf)}")
    return ", ".join(parts)


def _filtered(args: LinkFilters, mode: CopilotMode) -> ChangePreview | None:
    if args.action == "get" or mode is CopilotMode.TEACHING_ASSISTANT:
        return None
    if args.action == "set":
        assert args.filters is not None
        return ChangePreview(
            f"set filters on {args.label}",
            topology=[f"link {args.label}: {_described(args.filters)}"],
        )
    names = ", ".join(args.names or _ALL)
    return ChangePreview(
        f"clear filters on {args.label}", topology=[f"link {args.label}: remove {names}"]
    )


def filter_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "gns3_link_filters",
            "Read (action get, any mode), set or clear (lab automation) the faults GNS3 "
            "injects on a link, named by the two nodes it joins: delay and jitter (ms), "
            "packet loss and corruption (%), dropping every Nth packet, dropping packets "
            "that match BPF expressions. get also lists what the link offers and the ranges. "
            "set changes only the filters it names.",
            LinkFilters,
            link_filters,
            BOTH_MODES,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            example={
                "node1": "R1",
                "node2": "R2",
                "action": "set",
                "filters": {"packet_loss_percent": 20},
            },
            mutates_topology=True,
            change=_filtered,
        )
    ]

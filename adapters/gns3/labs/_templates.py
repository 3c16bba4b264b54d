"""What a GNS3 template makes, read from its JSON (pure): the platform of its nodes and
the ports each node gets, without making one.

GNS3 names a node's ports when it creates the node, from its template: a Docker
container's adapters are ``eth0``, ``eth1``, … (one per ``adapters``; a custom adapter may
rename one); a VPCS has one port, ``Ethernet0``; a QEMU VM's ports follow its
``port_name_format`` (``Ethernet{0}``, ``{port0}``, ``{segment0}``, with
``port_segment_size`` and ``first_port_name``). The kind of device a template makes is
read as a node's is (:func:`~adapters.gns3.model.device_kind_of`: its type, then hints in
its name and image; a Docker template of no other kind is a Linux host).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.gns3.model import DeviceKind, device_kind_of
from copilot_core.labs import Platform

__all__ = ["KINDS", "PLATFORMS", "find_template", "template_kind", "template_ports"]

JSON = dict[str, Any]

#: The device kind each plan platform is (a plan's router is FRR, a host Linux or VPCS).
KINDS: dict[Platform, DeviceKind] = {
    Platform.FRR: DeviceKind.FRR,
    Platform.LINUX: DeviceKind.LINUX,
    Platform.VPCS: DeviceKind.VPCS,
}
#: The plan platform of a device kind (the kinds a plan can hold).
PLATFORMS: dict[DeviceKind, Platform] = {kind: platform for platform, kind in KINDS.items()}


def template_kind(template: Mapping[str, Any]) -> DeviceKind:
    """The kind of device ``template`` makes (read as a node of it would be)."""
    node = {
        "node_type": template.get("template_type"),
        "properties": {"image": template.get("image")},
        "name": "",
    }
    return device_kind_of(node, str(template.get("name") or ""))


def _port(name: str, adapter: int, port: int = 0, short: str | None = None) -> JSON:
    return {
        "name": name,
        "short_name": short or name,
        "adapter_number": adapter,
        "port_number": port,
    }


def _custom_names(template: Mapping[str, Any]) -> dict[int, str]:
    names: dict[int, str] = {}
    for custom in template.get("custom_adapters") or []:
        if isinstance(custom, Mapping) and custom.get("port_name"):
            names[int(custom.get("adapter_number", -1))] = str(custom["port_name"])
    return names


def _qemu_ports(template: Mapping[str, Any]) -> list[JSON]:
    count = int(template.get("adapters") or 1)
    pattern = str(template.get("port_name_format") or "Ethernet{0}")
    segment_size = int(template.get("port_segment_size") or 0)
    first = str(template.get("first_port_name") or "")
    custom = _custom_names(template)
    ports: list[JSON] = []
    interface = segment = 0
    for adapter in range(count):
        try:
            name = pattern.format(
                interface,
                segment,
                port0=interface,
                port1=interface + 1,
                segment0=segment,
                segment1=segment + 1,
                adapter=adapter,
            )
        except (IndexError, KeyError, ValueError):
            name = f"Ethernet{adapter}"
        if adapter == 0 and first:
            name = first
        ports.append(_port(custom.get(adapter, name), adapter, short=f"e{adapter}"))
        interface += 1
        if segment_size and interface % segment_size == 0:
            segment, interface = segment + 1, 0
    return ports


def template_ports(template: Mapping[str, Any]) -> list[JSON] | None:
    """The ports a node of ``template`` gets (name, short name, adapter and port
    numbers), or ``None`` when this template type's ports cannot be told beforehand."""
    kind = str(template.get("template_type") or "")
    if kind == "vpcs":
        return [_port("Ethernet0", 0, short="e0")]
    if kind == "docker":
        custom = _custom_names(template)
        count = int(template.get("adapters") or 1)
        return [_port(custom.get(a, f"eth{a}"), a) for a in range(count)]
    if kind == "qemu":
        return _qemu_ports(template)
    return None


def find_template(templates: Sequence[Mapping[str, Any]], wanted: str) -> Mapping[str, Any] | None:
    """The template ``wanted`` names: by id, by name, else by its name in any case when
    only one has it."""
    for template in templates:
        if str(template.get("template_id")) == wanted:
            return template
    for template in templates:
        if str(template.get("name")) == wanted:
            return template
    folded = [t for t in templates if str(t.get("name") or "").lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None

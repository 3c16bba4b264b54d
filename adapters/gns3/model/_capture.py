"""Packet capture analysis: a pcap (Ethernet) summarised for a model to reason about.

Parsing is dpkt's; this module only counts. A capture cut mid-record (a live
stream read for a bounded time) is analysed up to its last complete packet.
"""

from __future__ import annotations

import io
import socket
import struct
from collections import Counter
from typing import Any

import dpkt

__all__ = ["analyze_pcap"]

_MAX_LISTED = 20


class _WholeRecords(io.BytesIO):
    """A byte stream whose reads are all-or-nothing: a cut record ends the capture."""

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        if size is not None and size > 0 and 0 < len(data) < size:
            raise dpkt.dpkt.NeedData("the capture ends inside a record")
        return data


def _ip(address: bytes) -> str:
    family = socket.AF_INET6 if len(address) == 16 else socket.AF_INET
    return socket.inet_ntop(family, address)


def _mac(address: bytes) -> str:
    return ":".join(f"{b:02x}" for b in address)


def analyze_pcap(data: bytes, *, max_packets: int = 100_000) -> dict[str, Any]:
    """Packet count, protocols, top talkers, ICMP echo pairs and ARP exchanges."""
    if len(data) < 24:
        return {"packets": 0, "note": "the capture holds no packets (not even a pcap header)"}
    try:
        reader = dpkt.pcap.Reader(_WholeRecords(data))
    except (ValueError, dpkt.dpkt.UnpackError, dpkt.dpkt.NeedData) as exc:
        return {"packets": 0, "error": f"not a pcap capture: {exc}"}

    protocols: Counter[str] = Counter()
    talkers_packets: Counter[str] = Counter()
    talkers_bytes: Counter[str] = Counter()
    conversations: Counter[str] = Counter()
    echo_requests: dict[tuple[str, str, int, int], float] = {}
    echo_pairs: list[dict[str, Any]] = []
    arp: list[dict[str, Any]] = []
    arp_counts: Counter[str] = Counter()
    total = 0
    total_bytes = 0
    first_ts: float | None = None
    last_ts = 0.0
    incomplete = False
    replied = 0

    packets = iter(reader)
    while total < max_packets:
        try:
            ts, buf = next(packets)
        except StopIteration:
            break
        except (dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError, ValueError, struct.error):
            incomplete = True
            break
        total += 1
        total_bytes += len(buf)
        first_ts = ts if first_ts is None else first_ts
        last_ts = ts
        try:
            eth = dpkt.ethernet.Ethernet(buf)
        except (dpkt.dpkt.UnpackError, dpkt.dpkt.NeedData):
            protocols["malformed"] += 1
            continue
        payload = eth.data
        if isinstance(payload, dpkt.arp.ARP):
            protocols["ARP"] += 1
            sender, target = _ip(payload.spa), _ip(payload.tpa)
            talkers_packets[sender] += 1
            talkers_bytes[sender] += len(buf)
            if payload.op == dpkt.arp.ARP_OP_REQUEST:
                text = f"who-has {target} tell {sender}"
                arp_counts["who-has"] += 1
            elif payload.op == dpkt.arp.ARP_OP_REPLY:
                text = f"{sender} is-at {_mac(payload.sha)}"
                arp_counts["is-at"] += 1
            else:
                text = f"op {payload.op} from {sender}"
            if len(arp) < _MAX_LISTED:
                arp.append({"time": round(ts - (first_ts or ts), 6), "summary": text})
            continue
        if isinstance(payload, dpkt.ip.IP | dpkt.ip6.IP6):
            src, dst = _ip(payload.src), _ip(payload.dst)
            talkers_packets[src] += 1
            talkers_bytes[src] += len(buf)
            inner = payload.data
            if isinstance(inner, dpkt.icmp.ICMP):
                protocols["ICMP"] += 1
                echo = inner.data
                if isinstance(echo, dpkt.icmp.ICMP.Echo):
                    if inner.type == dpkt.icmp.ICMP_ECHO:
                        echo_requests[(src, dst, echo.id, echo.seq)] = ts
                    elif inner.type == dpkt.icmp.ICMP_ECHOREPLY:
                        sent = echo_requests.pop((dst, src, echo.id, echo.seq), None)
                        replied += 1
                        if len(echo_pairs) < _MAX_LISTED:
                            echo_pairs.append(
                                {
                                    "from": dst,
                                    "to": src,
                                    "id": echo.id,
                                    "seq": echo.seq,
                                    "rtt_ms": None
                                    if sent is None
                                    else round((ts - sent) * 1000, 3),
                                }
                            )
                elif inner.type == dpkt.icmp.ICMP_UNREACH:
                    protocols["ICMP unreachable"] += 1
            elif isinstance(inner, dpkt.icmp6.ICMP6):
                protocols["ICMPv6"] += 1
            elif isinstance(inner, dpkt.tcp.TCP):
                protocols["TCP"] += 1
                conversations[f"{src}:{inner.sport} > {dst}:{inner.dport} tcp"] += 1
            elif isinstance(inner, dpkt.udp.UDP):
                protocols["UDP"] += 1
                conversations[f"{src}:{inner.sport} > {dst}:{inner.dport} udp"] += 1
            else:
                number = payload.p if isinstance(payload, dpkt.ip.IP) else payload.nxt
                protocols[f"IP protocol {number}"] += 1
            protocols["IPv6" if isinstance(payload, dpkt.ip6.IP6) else "IPv4"] += 1
            continue
        protocols[f"ethertype 0x{eth.type:04x}"] += 1

    unanswered = [
        {"from": src, "to": dst, "id": ident, "seq": seq}
        for (src, dst, ident, seq) in list(echo_requests)[:_MAX_LISTED]
    ]
    summary: dict[str, Any] = {
        "packets": total,
        "bytes": total_bytes,
        "duration_s": round(last_ts - first_ts, 6) if first_ts is not None else 0.0,
        "protocols": dict(protocols.most_common()),
        "top_talkers": [
            {"address": address, "packets": count, "bytes": talkers_bytes[address]}
            for address, count in talkers_packets.most_common(10)
        ],
        "icmp_echo": {
            "replied": replied,
            "unanswered_requests": len(echo_requests),
            "pairs": echo_pairs,
            "unanswered": unanswered,
        },
        "arp": {"who_has": arp_counts["who-has"], "is_at": arp_counts["is-at"], "events": arp},
        "top_conversations": [
            {"flow": flow, "packets": count} for flow, count in conversations.most_common(10)
        ],
    }
    if incomplete:
        summary["note"] = "the capture ended mid-packet; the last partial packet was ignored"
    if total >= max_packets:
        summary["note"] = f"only the first {max_packets} packets were analysed"
    return summary

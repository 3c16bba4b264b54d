"""Packet capture analysis of pcaps written with dpkt in the test."""

from __future__ import annotations

import io
import socket

import dpkt

from adapters.gns3 import analyze_pcap

MAC_A = bytes.fromhex("005079666800")
MAC_B = bytes.fromhex("005079666801")
IP_A, IP_B = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")


def ethernet(src: bytes, dst: bytes, payload: dpkt.Packet, kind: int) -> bytes:
    return bytes(dpkt.ethernet.Ethernet(src=src, dst=dst, type=kind, data=payload))


def echo(src: bytes, dst: bytes, kind: int, seq: int) -> bytes:
    icmp = dpkt.icmp.ICMP(type=kind, data=dpkt.icmp.ICMP.Echo(id=7, seq=seq, data=b"x" * 56))
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_ICMP, data=icmp, ttl=64)
    ip.len = len(bytes(ip))
    return ethernet(
        MAC_A if src == IP_A else MAC_B,
        MAC_B if src == IP_A else MAC_A,
        ip,
        dpkt.ethernet.ETH_TYPE_IP,
    )


def arp(op: int, sender_mac: bytes, sender: bytes, target: bytes) -> bytes:
    packet = dpkt.arp.ARP(op=op, sha=sender_mac, spa=sender, tha=b"\x00" * 6, tpa=target)
    return ethernet(sender_mac, b"\xff" * 6, packet, dpkt.ethernet.ETH_TYPE_ARP)


def udp(src: bytes, dst: bytes) -> bytes:
    datagram = dpkt.udp.UDP(sport=5000, dport=53, data=b"q")
    datagram.ulen = len(bytes(datagram))
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_UDP, data=datagram)
    ip.len = len(bytes(ip))
    return ethernet(MAC_A, MAC_B, ip, dpkt.ethernet.ETH_TYPE_IP)


def pcap(frames: list[bytes]) -> bytes:
    out = io.BytesIO()
    writer = dpkt.pcap.Writer(out)
    for n, frame in enumerate(frames):
        writer.writepkt(frame, ts=1000.0 + n * 0.01)
    return out.getvalue()


FRAMES = [
    arp(dpkt.arp.ARP_OP_REQUEST, MAC_A, IP_A, IP_B),
    arp(dpkt.arp.ARP_OP_REPLY, MAC_B, IP_B, IP_A),
    echo(IP_A, IP_B, dpkt.icmp.ICMP_ECHO, 1),
    echo(IP_B, IP_A, dpkt.icmp.ICMP_ECHOREPLY, 1),
    echo(IP_A, IP_B, dpkt.icmp.ICMP_ECHO, 2),
    echo(IP_B, IP_A, dpkt.icmp.ICMP_ECHOREPLY, 2),
    echo(IP_A, IP_B, dpkt.icmp.ICMP_ECHO, 3),
    udp(IP_A, IP_B),
]


def test_summary_counts_protocols_talkers_echo_pairs_and_arp():
    summary = analyze_pcap(pcap(FRAMES))
    assert summary["packets"] == 8
    assert summary["duration_s"] == 0.07
    assert summary["protocols"] == {"IPv4": 6, "ICMP": 5, "ARP": 2, "UDP": 1}
    assert summary["top_talkers"][0] == {
        "address": "10.0.0.1",
        "packets": 5,
        "bytes": summary["top_talkers"][0]["bytes"],
    }
    assert summary["top_talkers"][1]["address"] == "10.0.0.2"
    echo_summary = summary["icmp_echo"]
    assert echo_summary["replied"] == 2
    assert echo_summary["unanswered_requests"] == 1
    assert echo_summary["pairs"][0] == {
        "from": "10.0.0.1",
        "to": "10.0.0.2",
        "id": 7,
        "seq": 1,
        "rtt_ms": 10.0,
    }
    assert echo_summary["unanswered"] == [{"from": "10.0.0.1", "to": "10.0.0.2", "id": 7, "seq": 3}]
    assert summary["arp"]["who_has"] == 1
    assert summary["arp"]["is_at"] == 1
    assert [e["summary"] for e in summary["arp"]["events"]] == [
        "who-has 10.0.0.2 tell 10.0.0.1",
        "10.0.0.2 is-at 00:50:79:66:68:01",
    ]
    assert summary["top_conversations"] == [
        {"flow": "10.0.0.1:5000 > 10.0.0.2:53 udp", "packets": 1}
    ]


def test_a_capture_cut_mid_packet_is_analysed_up_to_the_cut():
    data = pcap(FRAMES)
    summary = analyze_pcap(data[:-20])
    assert summary["packets"] == 7
    assert "ended mid-packet" in summary["note"]


def test_empty_and_garbage_captures():
    assert analyze_pcap(b"")["packets"] == 0
    garbage = analyze_pcap(b"this is not a pcap file at all....")
    assert garbage["packets"] == 0
    assert "not a pcap" in garbage["error"]
    header_only = analyze_pcap(pcap([]))
    assert header_only["packets"] == 0
    assert header_only["protocols"] == {}

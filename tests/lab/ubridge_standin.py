#!/usr/bin/env python3
"""A uBridge-compatible hypervisor for the router lab (our own code, standard library only).

gns3-server wires every adapter of a Docker node through a uBridge hypervisor it starts per
node (``ubridge -H HOST:PORT``, after checking ``ubridge -v``), then drives it over TCP with
one command per line. No package registry reachable here ships uBridge, so the lab points
gns3-server's ``ubridge_path`` at this file. It implements what gns3-server 3.0.6 sends for
Docker nodes and their links:

- ``hypervisor version | stop | close | reset``
- ``bridge create|delete|start|stop NAME``, ``bridge add_nio_tap NAME TAP``,
  ``bridge add_nio_udp NAME LPORT RHOST RPORT``, ``bridge remove_nio_udp NAME ...``,
  ``bridge start_capture NAME "FILE"`` (pcap), ``bridge stop_capture NAME``,
  ``bridge reset_packet_filters NAME``, ``bridge add_packet_filter NAME FILTER TYPE VALUE`` for
  the two types a link fault needs: ``packet_loss PERCENT`` (each frame dropped with that
  chance) and ``frequency_drop N`` (every Nth frame dropped; ``-1`` every frame: how GNS3
  suspends a link); any other type fails
- ``docker set_mac_addr TAP MAC``, ``docker move_to_ns TAP PID ethN`` (the tap goes into the
  container's network namespace under the name the container expects)

A bridge joins a TAP (whose file descriptor stays open here after the interface moved into
the container) and a UDP tunnel to the peer node's bridge: frames read from one are written
to the other while the bridge is started. Replies follow uBridge's convention: ``100-OK`` (or
``100-VALUE``) ends a successful answer, ``2xx-MESSAGE`` is an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
import shlex
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import BinaryIO

VERSION = "0.9.18"

_TUNSETIFF = 0x400454CA
_IFF_TAP = 0x0002
_IFF_NO_PI = 0x1000
_FRAME = 65536


class CommandError(Exception):
    """A command that cannot be carried out; its text becomes the ``2xx-`` reply."""


@dataclass
class Tap:
    name: str
    fd: int

    @classmethod
    def open(cls, name: str) -> Tap:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        try:
            fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
        except OSError as error:
            os.close(fd)
            raise CommandError(f"cannot create TAP interface {name}: {error}") from error
        return cls(name, fd)

    def receive(self) -> bytes | None:
        try:
            return os.read(self.fd, _FRAME)
        except (BlockingIOError, InterruptedError):
            return None

    def send(self, frame: bytes) -> None:
        # A frame for an interface that is down in the container is lost, as on a wire.
        with contextlib.suppress(OSError):
            os.write(self.fd, frame)

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class Udp:
    local_port: int
    remote: tuple[str, int]
    sock: socket.socket

    @classmethod
    def open(cls, local_port: int, remote_host: str, remote_port: int) -> Udp:
        info = socket.getaddrinfo(remote_host, remote_port, type=socket.SOCK_DGRAM)
        family, _, _, _, address = info[0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        if not _is_loopback(address[0]):
            sock.close()
            raise CommandError(f"the lab tunnels only over loopback, not to {remote_host}")
        try:
            sock.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", local_port))
        except OSError as error:
            sock.close()
            raise CommandError(f"cannot bind UDP port {local_port}: {error}") from error
        sock.setblocking(False)
        return cls(local_port, (address[0], address[1]), sock)

    def receive(self) -> bytes | None:
        try:
            return self.sock.recv(_FRAME)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return None  # ICMP port unreachable from a peer that is not started yet

    def send(self, frame: bytes) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendto(frame, self.remote)

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()


def _is_loopback(host: str) -> bool:
    return host.startswith("127.") or host == "::1"


Nio = Tap | Udp


@dataclass
class Capture:
    file: BinaryIO

    @classmethod
    def open(cls, path: str) -> Capture:
        try:
            handle = open(path, "wb")  # noqa: SIM115 - closed by stop_capture or delete
        except OSError as error:
            raise CommandError(f"cannot open capture file {path}: {error}") from error
        # pcap global header: magic, version 2.4, zone 0, sigfigs 0, snaplen, DLT_EN10MB.
        handle.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, _FRAME, 1))
        handle.flush()
        return cls(handle)

    def write(self, frame: bytes) -> None:
        now = time.time()
        seconds = int(now)
        header = struct.pack("<IIII", seconds, int((now - seconds) * 1e6), len(frame), len(frame))
        self.file.write(header + frame)
        self.file.flush()

    def close(self) -> None:
        self.file.close()


@dataclass
class Bridge:
    name: str
    nios: list[Nio] = field(default_factory=list)
    started: bool = False
    capture: Capture | None = None
    #: (type, value) of each packet filter, applied to both directions
    filters: list[tuple[str, int]] = field(default_factory=list)
    seen: int = 0

    def drops(self) -> bool:
        """Whether the bridge's filters drop the next frame."""
        self.seen += 1
        for kind, value in self.filters:
            if kind == "packet_loss" and random.random() * 100 < value:
                return True
            if kind == "frequency_drop" and (value == -1 or (value > 0 and self.seen % value == 0)):
                return True
        return False


class Hypervisor:
    """The bridges of one node, and the commands that change them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._bridges: dict[str, Bridge] = {}
        self._taps: list[Tap] = []
        self.stopping = asyncio.Event()

    # ---------------------------------------------------------------- dispatch
    def run(self, line: str) -> str:
        try:
            words = shlex.split(line)
        except ValueError as error:
            raise CommandError(f"cannot parse {line!r}: {error}") from error
        if len(words) < 2:
            raise CommandError(f"unknown command {line!r}")
        module, command, args = words[0], words[1], words[2:]
        handler = getattr(self, f"_{module}_{command}", None)
        if handler is None:
            raise CommandError(f"unknown command '{module} {command}'")
        result: str = handler(*args)
        return result

    # ---------------------------------------------------------------- hypervisor
    def _hypervisor_version(self) -> str:
        return VERSION

    def _hypervisor_close(self) -> str:
        return "OK"

    def _hypervisor_reset(self) -> str:
        for name in list(self._bridges):
            self._bridge_delete(name)
        return "OK"

    def _hypervisor_stop(self) -> str:
        self._hypervisor_reset()
        for tap in self._taps:
            tap.close()
        self._taps.clear()
        self.stopping.set()
        return "OK"

    # ---------------------------------------------------------------- bridges
    def _bridge(self, name: str) -> Bridge:
        try:
            return self._bridges[name]
        except KeyError:
            raise CommandError(f"bridge '{name}' doesn't exist") from None

    def _bridge_create(self, name: str) -> str:
        if name in self._bridges:
            raise CommandError(f"bridge '{name}' already exist")
        self._bridges[name] = Bridge(name)
        return "OK"

    def _bridge_delete(self, name: str) -> str:
        bridge = self._bridge(name)
        self._bridge_stop(name)
        self._bridge_stop_capture(name)
        for nio in bridge.nios:
            if isinstance(nio, Udp):
                nio.close()
        del self._bridges[name]
        return "OK"

    def _bridge_add_nio_tap(self, name: str, tap_name: str) -> str:
        bridge = self._bridge(name)
        # A new TAP each time: once one moved into the container its name is free on the
        # host again, and gns3-server names the next adapter's TAP the same.
        tap = Tap.open(tap_name)
        self._taps.append(tap)
        self._attach(bridge, tap)
        return "OK"

    def _bridge_add_nio_udp(self, name: str, lport: str, rhost: str, rport: str) -> str:
        bridge = self._bridge(name)
        self._attach(bridge, Udp.open(int(lport), rhost, int(rport)))
        return "OK"

    def _bridge_remove_nio_udp(self, name: str, lport: str, rhost: str, rport: str) -> str:
        bridge = self._bridge(name)
        for nio in list(bridge.nios):
            if isinstance(nio, Udp) and nio.local_port == int(lport):
                self._unlisten(bridge)
                bridge.nios.remove(nio)
                nio.close()
                if bridge.started:
                    self._listen(bridge)
                return "OK"
        raise CommandError(f"no UDP NIO on port {lport} in bridge '{name}'")

    def _attach(self, bridge: Bridge, nio: Nio) -> None:
        if len(bridge.nios) >= 2:
            raise CommandError(f"bridge '{bridge.name}' already has two NIOs")
        bridge.nios.append(nio)

    def _bridge_start(self, name: str) -> str:
        bridge = self._bridge(name)
        if len(bridge.nios) != 2:
            raise CommandError(f"bridge '{name}' must have 2 NIOs to be started")
        if not bridge.started:
            bridge.started = True
            self._listen(bridge)
        return "OK"

    def _bridge_stop(self, name: str) -> str:
        bridge = self._bridge(name)
        if bridge.started:
            self._unlisten(bridge)
            bridge.started = False
        return "OK"

    def _listen(self, bridge: Bridge) -> None:
        first, second = bridge.nios
        self._loop.add_reader(first.fileno(), self._forward, bridge, first, second)
        self._loop.add_reader(second.fileno(), self._forward, bridge, second, first)

    def _unlisten(self, bridge: Bridge) -> None:
        for nio in bridge.nios:
            self._loop.remove_reader(nio.fileno())

    @staticmethod
    def _forward(bridge: Bridge, source: Nio, destination: Nio) -> None:
        for _ in range(64):  # a burst at a time, then let the other direction run
            frame = source.receive()
            if frame is None:
                return
            if bridge.filters and bridge.drops():
                continue
            if bridge.capture is not None:
                bridge.capture.write(frame)
            destination.send(frame)

    def _bridge_start_capture(self, name: str, path: str, *_link_type: str) -> str:
        bridge = self._bridge(name)
        if bridge.capture is not None:
            raise CommandError(f"bridge '{name}' is already capturing")
        bridge.capture = Capture.open(path)
        return "OK"

    def _bridge_stop_capture(self, name: str) -> str:
        bridge = self._bridge(name)
        if bridge.capture is not None:
            bridge.capture.close()
            bridge.capture = None
        return "OK"

    def _bridge_reset_packet_filters(self, name: str) -> str:
        self._bridge(name).filters.clear()
        return "OK"

    def _bridge_add_packet_filter(self, name: str, *args: str) -> str:
        bridge = self._bridge(name)
        if len(args) != 3 or args[1] not in ("packet_loss", "frequency_drop"):
            raise CommandError(
                f"the lab's uBridge stand-in filters packet_loss and frequency_drop only: {args}"
            )
        try:
            value = int(args[2])
        except ValueError:
            raise CommandError(f"not a number: {args[2]!r}") from None
        bridge.filters.append((args[1], value))
        return "OK"

    # ---------------------------------------------------------------- docker
    def _docker_set_mac_addr(self, tap_name: str, mac: str) -> str:
        _ip("link", "set", "dev", tap_name, "address", mac)
        return "OK"

    def _docker_move_to_ns(self, tap_name: str, pid: str, new_name: str) -> str:
        _ip("link", "set", "dev", tap_name, "netns", pid)
        _ip("link", "set", "dev", tap_name, "name", new_name, namespace_of=pid)
        return "OK"


def _ip(*args: str, namespace_of: str | None = None) -> None:
    command = ["ip", *args]
    if namespace_of is not None:
        command = ["nsenter", f"--net=/proc/{namespace_of}/ns/net", *command]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CommandError(f"{' '.join(command)}: {error}") from error
    if done.returncode != 0:
        raise CommandError(f"{' '.join(command)}: {done.stderr.strip() or done.returncode}")


def _log(text: str) -> None:
    """One line to stdout (gns3-server's ``ubridge.log``, deleted when the node stops) and,
    when ``GNS3_LAB_UBRIDGE_LOG`` names a file, to that file too (it outlives the node)."""
    print(text, flush=True)
    path = os.environ.get("GNS3_LAB_UBRIDGE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {text}\n")


async def _serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    hypervisor = Hypervisor(loop)

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            raw = await reader.readline()
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                reply = f"100-{hypervisor.run(line)}\r\n"
            except CommandError as error:
                reply = f"209-{error}\r\n"
            except (TypeError, ValueError) as error:
                reply = f"209-bad arguments for {line!r}: {error}\r\n"
            _log(f"{line} -> {reply.strip()}")
            writer.write(reply.encode())
            await writer.drain()
            if hypervisor.stopping.is_set():
                break
        writer.close()

    server = await asyncio.start_server(client, host, port)
    async with server:
        await hypervisor.stopping.wait()


def main(argv: list[str]) -> int:
    if "-v" in argv:
        print(f"ubridge version {VERSION} (gns3-copilot lab stand-in)")
        return 0
    if "-H" not in argv:
        print("usage: ubridge_standin.py -v | -H HOST:PORT [-d LEVEL]", file=sys.stderr)
        return 2
    host, _, port = argv[argv.index("-H") + 1].rpartition(":")
    asyncio.run(_serve(host.strip("[]") or "127.0.0.1", int(port)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

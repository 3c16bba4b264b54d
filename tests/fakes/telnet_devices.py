"""Telnet device emulators on 127.0.0.1 that behave like GNS3's consoles.

Reproduced behaviours (see ``/work/shared/GNS3.md``):

* on connect only telnet negotiation (``IAC WILL ECHO, WILL SGA, WILL BINARY, DO BINARY``);
* the console is shared: every client sees all output; the buffered boot banner goes to
  the first client only, later ones see nothing until they send a line;
* any line ending (``\\r\\n``, ``\\r\\0``, ``\\r``, ``\\n``) runs the line once, which is echoed;
  output lines end in ``\\r\\n``; closing the TCP connection does not stop a running command;
* each device stops a running command only on its own interrupt key(s) (``interrupts``
  records what arrived) and pages long output with its own pager, which ``q`` quits.

Platforms:

* :class:`EmulatedVpcs` — ``\\rPC1> `` prompt, slow ``ip``, ``ping -c N`` (Ctrl-C),
  ``show version`` lines ending in ``\\r\\r\\n``; commands read as VPCS 0.8.3 reads them
  (any unique prefix of its table: ``i`` = ``ip``, ``se`` = ``set``; a leading ``@``
  stripped; ``write`` = ``save``; an ambiguous prefix prints the candidates and runs
  nothing), ``set pcname`` renames the prompt;
* :class:`EmulatedCiscoRouter` — ``>``/``#``/``(config)#`` prompts, ``--More--``, a ``ping
  … repeat N`` only Ctrl-^ ends, the initial configuration dialog, an enable secret, log
  messages printed after the prompt, and a command after which the device drops every
  connection;
* :class:`EmulatedAristaSwitch` — EOS prompts, Ctrl-C;
* :class:`EmulatedJunos` — ``root@vmx>``, ``[edit]``/``root@vmx#``, ``---(more)---``,
  ``commit and-quit`` (which can be made to fail), optionally starting at the shell;
* :class:`EmulatedFrr` — a busybox shell (``/ #``) around ``vtysh``; ``terminal paginate``
  pages vtysh's output the way util-linux's ``more`` does on the lab's FRR (a screen of
  ``more_rows``, ``--More--`` in reverse video, the last screen padded with empty lines
  and its ``--More--`` overwritten by ``(END)``, which only ``q`` leaves);
* :class:`EmulatedLinux` — a bash prompt, ``ping`` without a count never ends, ``yes`` and
  ``cat /dev/urandom`` flood the console (text, then bytes that are not text) until Ctrl-C;
* :class:`EmulatedHuawei` — ``<HUAWEI>``/``[HUAWEI]`` views, ``---- More ----``;
* :class:`EmulatedGenericDevice` — a prompt of no known platform (``[admin@MikroTik] >``).

Each keeps a configuration the way its platform shows and changes it (for restore points):
``show ip`` and ``clear ip``/``ip dns`` on VPCS; a running configuration of blocks with
``no``/``undo``/``default interface`` on Cisco, Arista, FRR and Huawei (:class:`ConfigTree`);
``set``/``delete`` lines committed on Junos; addresses and routes (``ip addr``/``ip route``)
on Linux.

Every executed line is recorded in ``received`` so tests can prove what was (not) sent;
``shows`` gives the output of further commands (a routing table, OSPF neighbours), as a
test writes them in the platform's format.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import re
from collections.abc import Iterable
from types import TracebackType

__all__ = [
    "CTRL_C",
    "CTRL_CARET",
    "ConfigTree",
    "EmulatedAristaSwitch",
    "EmulatedCiscoRouter",
    "EmulatedDevice",
    "EmulatedDeviceLab",
    "EmulatedFrr",
    "EmulatedGenericDevice",
    "EmulatedHuawei",
    "EmulatedJunos",
    "EmulatedLinux",
    "EmulatedVpcs",
]

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
_GREETING = bytes([IAC, WILL, 1, IAC, WILL, 3, IAC, WILL, 0, IAC, DO, 0])
CTRL_C = "\x03"
CTRL_CARET = "\x1e"
_CONTROL = {CTRL_C, CTRL_CARET}


class EmulatedDevice:
    """Base: a shared telnet console with a line-processing worker."""

    banner = ""
    interrupt_keys: frozenset[str] = frozenset({CTRL_C})
    #: A Docker node's console (binary mode): ``\r`` is Enter and so is a ``\n`` after it,
    #: so ``\r\n`` is two Enters (an empty command and an extra prompt each time).
    binary_enter = False
    pager = " --More-- "
    page_lines = 23

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = 0
        self.received: list[str] = []
        self.interrupts: list[str] = []
        self.connections = 0
        self.peak_clients = 0
        self.busy = False
        self.paging = True
        self.probes = 0  # ping replies (or dots) printed so far, by every ping
        self.flooded = 0  # bytes written by floods (``yes``, ``cat /dev/urandom``)
        #: Behave like GNS3's console of a Docker node, whose websocket to the container
        #: ends on bytes that are not UTF-8: output that is not text closes every client,
        #: and the console takes no one until the node restarts (``dead``).
        self.dies_on_binary = False
        self.dead = False
        self.negotiations: list[tuple[int, int]] = []
        # printed once, right after the prompt that ends the given command (a log message)
        self.after_prompt: dict[str, str] = {}
        self.after_prompt_delay = 0.02
        # what a show command prints, by the command as typed (words joined by a space):
        # tests give a platform's output for commands the emulator does not model
        self.shows: dict[str, str] = {}
        self._clients: set[asyncio.StreamWriter] = set()
        self._chars: asyncio.Queue[str] = asyncio.Queue()
        self._interrupt = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._worker: asyncio.Task[None] | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._banner_pending = True
        self._after_cr = False

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> EmulatedDevice:
        self._server = await asyncio.start_server(self._on_client, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self._worker = asyncio.create_task(self._work())
        return self

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        self.drop_all()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._handlers:  # dropped clients end their handlers; cancel only stragglers
            await asyncio.wait(set(self._handlers), timeout=1.0)
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    def drop_all(self) -> None:
        for writer in list(self._clients):
            writer.transport.abort()
        self._clients.clear()

    @property
    def client_count(self) -> int:
        return len(self._clients)

    # ------------------------------------------------------------------ output
    def write(self, text: str) -> None:
        data = text.encode("utf-8").replace(b"\xff", b"\xff\xff")
        for writer in list(self._clients):
            if writer.is_closing():
                self._clients.discard(writer)
                continue
            writer.write(data)

    def write_bytes(self, data: bytes) -> None:
        """Bytes as a program wrote them (``IAC`` doubled, as a telnet server must)."""
        data = data.replace(b"\xff", b"\xff\xff")
        for writer in list(self._clients):
            if not writer.is_closing():
                writer.write(data)

    async def flood(self, chunk: bytes) -> int:
        """Write ``chunk`` again and again until an interrupt key arrives (``yes``, ``cat
        /dev/urandom``); each write waits for the clients to take it (bounded), as a pty
        blocks its writer. Returns how many bytes went out."""
        sent = 0
        while not self._interrupt.is_set():
            self.write_bytes(chunk)
            sent += len(chunk)
            for writer in list(self._clients):
                with contextlib.suppress(ConnectionError, OSError, TimeoutError):
                    async with asyncio.timeout(0.5):
                        await writer.drain()
            await asyncio.sleep(0)
        self.flooded += sent
        return sent

    def prompt(self) -> str:
        raise NotImplementedError

    def wake_text(self) -> str:
        """What the console shows the first client after boot (ends in a prompt)."""
        return self.banner + self.prompt()

    # ------------------------------------------------------------------- input
    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self.connections += 1
        if self.dead:  # GNS3's Docker console after binary output: closed to everyone
            writer.transport.abort()
            if task is not None:
                self._handlers.discard(task)
            return
        self._clients.add(writer)
        self.peak_clients = max(self.peak_clients, len(self._clients))
        writer.write(_GREETING)
        if self._banner_pending and self.banner:
            self._banner_pending = False
            writer.write(self.wake_text().encode())
        state = 0
        verb = 0
        try:
            while True:
                data = await reader.read(4096)
                if not data:
                    break
                for byte in data:
                    if state == 0:
                        if byte == IAC:
                            state = 1
                            continue
                        char = chr(byte)
                        if char in _CONTROL:
                            self.interrupts.append(char)
                            if char in self.interrupt_keys:
                                self._interrupt.set()
                        else:
                            self._chars.put_nowait(char)
                    elif state == 1:
                        verb = byte
                        state = 2 if byte in (WILL, WONT, DO, DONT) else 3 if byte == SB else 0
                    elif state == 2:
                        self.negotiations.append((verb, byte))
                        state = 0
                    elif state == 3 and byte == SE:
                        state = 0
        except (ConnectionError, OSError):
            pass
        finally:
            self._clients.discard(writer)
            writer.transport.abort()
            if task is not None:
                self._handlers.discard(task)

    async def _next_key(self) -> str:
        while True:
            char = await self._chars.get()
            if self._after_cr and char in "\n\x00" and not (self.binary_enter and char == "\n"):
                self._after_cr = False
                continue
            self._after_cr = char == "\r"
            return char

    async def _read_line(self) -> str:
        line = ""
        while True:
            char = await self._next_key()
            if char in "\r\n":
                return line
            if char != "\x00":
                line += char

    async def _work(self) -> None:
        while True:
            line = await self._read_line()
            self._interrupt.clear()
            self.write(line + "\r\n")
            if line.strip():
                self.received.append(line)
            self.busy = True
            try:
                canned = self.shows.get(" ".join(line.split()))
                if canned is not None:
                    self.write("".join(text + "\r\n" for text in canned.splitlines()))
                else:
                    await self.execute(line.strip())
            finally:
                self.busy = False
            self.write(self.prompt())
            late = self.after_prompt.pop(line.strip(), None)
            if late is not None:
                await asyncio.sleep(self.after_prompt_delay)
                self.write(late)

    async def execute(self, line: str) -> None:
        raise NotImplementedError

    async def interruptible_sleep(self, seconds: float) -> bool:
        """Sleep; True when one of this device's interrupt keys arrived meanwhile."""
        try:
            async with asyncio.timeout(seconds):
                await self._interrupt.wait()
        except TimeoutError:
            return False
        return True

    async def page(self, lines: list[str]) -> None:
        """Write ``lines``, stopping at the pager every ``page_lines`` (``q`` quits)."""
        for index, line in enumerate(lines):
            if self.paging and index and index % self.page_lines == 0:
                self.write(self.pager)
                key = await self._next_key()
                erase = len(self.pager)
                self.write("\b" * erase + " " * erase + "\b" * erase)
                if key in ("q", "Q"):
                    return
            self.write(line + "\r\n")

    async def ping_lines(self, count: int, delay: float, line: str) -> int:
        """Print ``line`` (``{seq}`` filled in) every ``delay`` s; returns how many, fewer
        when interrupted."""
        for seq in range(1, count + 1):
            if await self.interruptible_sleep(delay):
                return seq - 1
            self.write(line.format(seq=seq))
            self.probes += 1
        return count


def _count(words: list[str], key: str, default: int) -> int:
    return int(words[words.index(key) + 1]) if key in words else default


class ConfigTree:
    """A running configuration of blocks: each top-level line with the lines under it
    (one level deep: interface and routing blocks), in the order they were made."""

    def __init__(self, blocks: Iterable[tuple[str, Iterable[str]]] = ()) -> None:
        self.blocks: list[tuple[str, list[str]]] = [(h, list(c)) for h, c in blocks]

    def find(self, header: str) -> list[str] | None:
        return next((children for h, children in self.blocks if h == header), None)

    def block(self, header: str) -> list[str]:
        """The block's lines, the block made (at the end) when missing."""
        children = self.find(header)
        if children is None:
            children = []
            self.blocks.append((header, children))
        return children

    def remove(self, header: str) -> bool:
        for index, (h, _) in enumerate(self.blocks):
            if h == header:
                del self.blocks[index]
                return True
        return False

    def lines(self) -> list[str]:
        """Every line, a block's own indented by one space."""
        return [line for h, c in self.blocks for line in (h, *(" " + x for x in c))]


def _replace_prefixed(children: list[str], prefix: str, line: str | None) -> None:
    """Drop the lines that start with ``prefix`` (and ``no <prefix>``); then add ``line``."""
    bare = prefix.strip()
    children[:] = [c for c in children if not (c.startswith(prefix) or c == f"no {bare}")]
    if line is not None:
        children.append(line)


class EmulatedVpcs(EmulatedDevice):
    """A VPCS console: ``\\rPC1> `` prompt, slow ``ip``, ``ping -c N``."""

    def __init__(self, name: str = "PC1", *, ip_delay: float = 0.3, ping_delay: float = 0.05):
        super().__init__(name)
        self.banner = (
            "\r\nWelcome to Virtual PC Simulator, version 0.6.1\r\n"
            "Dedicated to Daling.\r\nPress '?' to get help.\r\n\r\n"
            "Executing the startup file\r\n\r\n"
        )
        self.ip = "0.0.0.0/0"
        self.gateway = "0.0.0.0"
        self.dns = ""
        self.ip_delay = ip_delay
        self.ping_delay = ping_delay
        self.replies = 0
        self.saves = 0
        self.unreachable: set[str] = set()  # addresses a ping gets no reply from

    def prompt(self) -> str:
        return f"\r{self.name}> "

    # VPCS 0.8.3's command table, in its order: a command is any prefix of one of these
    # that no other starts with; ``arp`` runs ``show arp``, ``dhcp`` runs ``ip dhcp``.
    TABLE = (
        "?", "arp", "clear", "dhcp", "disconnect", "echo", "help", "history", "relay", "ip",
        "load", "neighbor", "ping", "quit", "tracer", "rlogin", "save", "write", "set", "show",
        "version", "sleep", "zzz",
    )  # fmt: skip

    def command_of(self, typed: str) -> str | None:
        """The command VPCS runs for ``typed`` (``@`` stripped, a unique prefix), or None."""
        typed = typed.removeprefix("@")
        found = [name for name in self.TABLE if name.startswith(typed)]
        return found[0] if len(found) == 1 else None

    async def execute(self, line: str) -> None:
        words = line.split()
        if not words or line.lstrip()[:1] in "#;":
            return
        if line.lstrip().startswith("!"):
            self.write("Shell commands are not run by this emulator\r\n")
            return
        command = self.command_of(words[0])
        if command is None:
            matches = [n for n in self.TABLE if n.startswith(words[0].removeprefix("@"))]
            if len(matches) > 1:  # VPCS prints the candidates and runs nothing
                self.write("".join(f"{name}\r\n" for name in matches))
                return
            self.write(f'Bad command: "{line}". Use ? for help.\r\n\r\n')
            return
        if command == "arp":
            command, words = "show", ["show", "arp", *words[1:]]
        elif command == "dhcp":
            command, words = "ip", ["ip", "dhcp", *words[1:]]
        words = [command, *words[1:]]
        verb = "save" if command == "write" else command
        if verb == "show" and len(words) > 1 and "version".startswith(words[1]):
            verb, words = "version", ["version"]
        if verb == "set" and len(words) == 3 and "pcname".startswith(words[1]):
            self.name = words[2]
        elif verb == "tracer":
            self.write(f"trace to {words[1:2]}, 8 hops max\r\n")
        elif verb == "show" and words[1:2] == ["ip"]:
            self.write(
                f"\r\nNAME        : {self.name}[1]\r\nIP/MASK     : {self.ip}\r\n"
                f"GATEWAY     : {self.gateway}\r\nDNS         : {self.dns}  \r\n"
                "MAC         : 00:50:79:66:68:00\r\nLPORT       : 20000\r\n"
                "RHOST:PORT  : 127.0.0.1:20001\r\nMTU         : 1500\r\n\r\n"
            )
        elif verb == "version":
            # Real VPCS 0.8.3 ends these lines in \r\r\n.
            lines = [
                "",
                "VPCS version 0.8.3",
                "Developed by Paul Meng (mirnshi@gmail.com)",
                "Copyright 2007-2013, Paul Meng",
                "",
                "Supported features: ipv4, ipv6, dhcp, arp, ping, trace",
                "Built: Jan  1 2024 00:00:00",
                "Running on Linux",
            ]
            self.write("".join(text + "\r\r\n" for text in lines))
        elif verb == "clear" and words[1:2] == ["ip"]:  # exactly `ip` (`i` is ipv6)
            self.ip, self.gateway, self.dns = "0.0.0.0/0", "0.0.0.0", ""
            self.write("IPv4 address/mask, gateway, DNS, and DHCP cleared\r\n")
        elif verb == "ip" and words[1:2] == ["dns"] and len(words) == 3:
            self.dns = words[2]
        elif verb == "ip" and len(words) >= 2 and not words[1][:1].isdigit():
            self.write("Invalid address\r\n\r\n")  # ``ip address …`` is IOS, not VPCS
        elif verb == "ip" and len(words) >= 2:
            self.write("Checking for duplicate address...\r\n")
            await asyncio.sleep(self.ip_delay)
            self.ip = words[1]
            self.gateway = words[2] if len(words) > 2 else self.gateway
            self.write(f"{self.name} : {self.ip} gateway {self.gateway}\r\n\r\n")
        elif verb == "ping" and len(words) >= 2 and words[1] in self.unreachable:
            for _ in range(_count(words, "-c", 5)):
                if await self.interruptible_sleep(self.ping_delay):
                    return
            self.write(f"host ({words[1]}) not reachable\r\n")
        elif verb == "ping" and len(words) >= 2:
            count = _count(words, "-c", 5)
            self.replies += await self.ping_lines(
                count,
                self.ping_delay,
                f"84 bytes from {words[1]} icmp_seq={{seq}} ttl=64 time=0.5 ms\r\n",
            )
        elif verb == "?":
            self.write(
                "\x1b[1m?\x1b[0m        Print help\r\n\x1b[1mip\x1b[0m       Configure IP\r\n"
            )
        elif verb == "save":
            self.saves += 1
            self.write("Saving startup configuration to startup.vpc\r\n.  done\r\n")
        else:
            self.write(f'Bad command: "{line}". Use ? for help.\r\n\r\n')


class EmulatedCiscoRouter(EmulatedDevice):
    """An IOS-like router: modes, ``--More--`` paging, interruptible and slow commands."""

    interrupt_keys = frozenset({CTRL_CARET})  # "Type escape sequence to abort."

    def __init__(
        self,
        name: str = "R1",
        *,
        drop_on: Iterable[str] = (),
        slow_line_delay: float = 0.05,
        ping_delay: float = 0.1,
        initial_dialog: bool = False,
        enable_secret: str | None = None,
    ) -> None:
        super().__init__(name)
        self.banner = "\r\n\r\nPress RETURN to get started!\r\n\r\n"
        self.mode = "user"  # user, enable, config, config-if, config-router, dialog
        self.drop_on = {d.lower() for d in drop_on}
        self.slow_line_delay = slow_line_delay
        self.ping_delay = ping_delay
        self.enable_secret = enable_secret
        self.tree = ConfigTree(
            (f"interface GigabitEthernet0/{n}", ["no ip address", "shutdown"]) for n in range(4)
        )
        self.globals: list[str] = []  # top-level lines besides the hostname (ip route …)
        self.interface: str | None = None
        self._changes = itertools.count(1)
        if initial_dialog:
            self.mode = "dialog"
            self.banner = (
                "\r\n         --- System Configuration Dialog ---\r\n\r\n"
                "Would you like to enter the initial configuration dialog? [yes/no]: "
            )

    def wake_text(self) -> str:
        return self.banner if self.mode == "dialog" else self.banner + self.prompt()

    def prompt(self) -> str:
        if self.mode == "dialog":
            return ""
        suffix = {
            "user": ">",
            "enable": "#",
            "config": "(config)#",
            "config-if": "(config-if)#",
            "config-router": "(config-router)#",
        }
        return f"\r\n{self.name}{suffix[self.mode]}"

    def _invalid(self) -> None:
        self.write("                   ^\r\n% Invalid input detected at '^' marker.\r\n")

    async def execute(self, line: str) -> None:
        lowered = line.lower()
        words = lowered.split()
        if self.mode == "dialog":
            if words == ["no"]:
                self.mode = "user"
                self.write("\r\n\r\nPress RETURN to get started!\r\n\r\n")
            else:
                self.write("% Please answer 'yes' or 'no'.\r\n")
                self.write("Would you like to enter the initial configuration dialog? [yes/no]: ")
            return
        if not words:
            return
        if lowered in self.drop_on:
            await asyncio.sleep(0.05)
            self.drop_all()
            return
        if self.mode.startswith("config"):
            self._configure(line, words)
            return
        if words[0] == "enable":
            if self.enable_secret is not None:
                self.write("Password: ")
                secret = await self._read_line()
                if secret != self.enable_secret:
                    self.write("\r\n% Bad secrets\r\n")
                    return
            self.mode = "enable"
        elif words[0] == "disable":
            self.mode = "user"
        elif words[:2] == ["terminal", "length"]:
            self.paging = words[2:3] != ["0"]
        elif words[0] in ("configure", "conf") and self.mode == "enable":
            self.write("Enter configuration commands, one per line.  End with CNTL/Z.\r\n")
            self.mode = "config"
        elif words[0] in ("show", "sh") and len(words) > 1:  # IOS takes abbreviations
            await self._show(words[1:])
        elif words[0] == "ping" and len(words) >= 2:
            repeat = _count(words, "repeat", 5)
            self.write("Type escape sequence to abort.\r\n")
            self.write(
                f"Sending {repeat}, 100-byte ICMP Echos to {words[1]}, timeout is 2 seconds:\r\n"
            )
            sent = await self.ping_lines(repeat, self.ping_delay, "!")
            self.write(f"\r\nSuccess rate is 100 percent ({sent}/{sent})\r\n")
        else:
            self._invalid()

    async def _show(self, what: list[str]) -> None:
        topic = what[0]
        if "running-config".startswith(topic) and len(topic) >= 3:
            if self.mode != "enable":
                self._invalid()
                return
            await self.page(self.running_config())
        elif "version".startswith(topic) and len(topic) >= 3:
            self.write(
                "Cisco IOS Software, IOSv Software (VIOS-ADVENTERPRISEK9-M), Version 15.9(3)M4, "
                "RELEASE SOFTWARE (fc2)\r\n"
                f"{self.name} uptime is 5 minutes\r\n"
            )
        elif topic == "ip" and what[1:2] and what[1].startswith("int"):
            self.write(
                "Interface              IP-Address      OK? Method Status      "
                "          Protocol\r\n"
                "GigabitEthernet0/0     192.0.2.1       YES manual up                    up\r\n"
                "GigabitEthernet0/1     unassigned      YES unset  administratively down down\r\n"
            )
        elif "logging".startswith(topic) and len(topic) >= 3:
            for n in range(5):
                await asyncio.sleep(self.slow_line_delay)
                self.write(f"*Mar  1 00:00:0{n}.000: %SYS-5-CONFIG_I: log line {n}\r\n")
        else:
            self._invalid()

    @property
    def config(self) -> list[str]:
        """The configuration's lines (a block's own indented by one space)."""
        return [f"hostname {self.name}", *self.globals, *self.tree.lines()]

    def running_config(self) -> list[str]:
        """``show running-config``: the configuration between lines that change by
        themselves (the last change's time, NTP's clock period) and comment filler."""
        lines = [
            "Building configuration...",
            "",
            f"Current configuration : {1000 + 37 * len(self.config)} bytes",
            "!",
            f"! Last configuration change at 10:{next(self._changes) % 60:02d}:00 UTC",
            "!",
            "version 15.9",
            f"hostname {self.name}",
            "!",
            *self.globals,
            "!",
        ]
        for header, children in self.tree.blocks:
            lines += [header, *(" " + child for child in children), "!"]
        lines += [f"ntp clock-period {17179000 + next(self._changes)}"]
        lines += [f"! filler line {n}" for n in range(60)]
        lines += ["end"]
        return lines

    _BLOCKS = ("interface ", "router ")
    _GLOBALS = ("ip route ", "ip domain", "ip name-server ", "ip routing", "banner ", "service ")

    def _configure(self, line: str, words: list[str]) -> None:
        text = " ".join(line.split())
        if words[0] == "end":
            self.mode = "enable"
            self.interface = None
        elif words[0] == "exit":
            self.mode = "config" if self.mode in ("config-if", "config-router") else "enable"
            self.interface = None
        elif words[0] in ("interface", "int") and len(words) > 1:
            self.mode = "config-if"
            name = re.sub(r"^(?i:gi(?:gabitethernet)?)(?=\d)", "GigabitEthernet", line.split()[1])
            self.interface = f"interface {name}"
            self.tree.block(self.interface)
        elif words[0] == "router" and len(words) > 1:
            self.mode = "config-router"
            self.interface = text
            self.tree.block(text)
        elif words[0] == "hostname" and len(words) > 1:
            self.name = line.split()[1]
        elif words[:2] == ["no", "hostname"]:
            self.name = "Router"
        elif words[:2] == ["default", "interface"] and len(words) > 2:
            children = self.tree.block(f"interface {line.split()[2]}")
            children[:] = ["no ip address", "shutdown"]
        elif text.startswith(self._GLOBALS):
            if text not in self.globals:
                self.globals.append(text)
            self.mode, self.interface = "config", None
        elif words[0] == "no" and text[3:].startswith(self._GLOBALS):
            if text[3:] in self.globals:
                self.globals.remove(text[3:])
        elif words[0] == "no" and text[3:].startswith(self._BLOCKS):
            if text[3:].startswith("interface GigabitEthernet"):
                self._invalid()  # a physical interface cannot be removed
            else:
                self.tree.remove(text[3:])
        elif self.interface is not None:
            self._in_block(self.tree.block(self.interface), text, words)
        else:
            self._invalid()

    def _in_block(self, children: list[str], text: str, words: list[str]) -> None:
        """A line inside an interface or routing block, as IOS applies it."""
        if words[:2] == ["ip", "address"] and len(words) >= 4:
            _replace_prefixed(children, "ip address ", text)
        elif text == "no ip address" or (words[:3] == ["no", "ip", "address"]):
            _replace_prefixed(children, "ip address ", "no ip address")
        elif words[0] == "description":
            _replace_prefixed(children, "description ", text)
        elif text == "shutdown":
            if "shutdown" not in children:
                children.append("shutdown")
        elif words[0] == "no" and len(words) > 1:
            target = text[3:]
            children[:] = [c for c in children if c != target and not c.startswith(target + " ")]
        elif words[0] in ("ip", "network", "passive-interface", "duplex", "speed", "mtu"):
            if text not in children:
                children.append(text)
        else:
            self._invalid()


class EmulatedAristaSwitch(EmulatedCiscoRouter):
    """An Arista EOS switch: Cisco-like modes and errors, Ctrl-C ends a ping."""

    interrupt_keys = frozenset({CTRL_C})

    def __init__(self, name: str = "leaf1", **options: object) -> None:
        super().__init__(name, **options)  # type: ignore[arg-type]
        self.banner = "\r\n\r\n"

    async def execute(self, line: str) -> None:
        words = line.lower().split()
        if words[:1] == ["ping"] and len(words) >= 2 and not self.mode.startswith("config"):
            repeat = _count(words, "repeat", 5)
            self.write(f"PING {words[1]} ({words[1]}) 72(100) bytes of data.\r\n")
            sent = await self.ping_lines(
                repeat,
                self.ping_delay,
                f"80 bytes from {words[1]}: icmp_seq={{seq}} ttl=64 time=0.1 ms\r\n",
            )
            self.write(f"\r\n--- {words[1]} ping statistics ---\r\n{sent} packets transmitted\r\n")
            return
        await super().execute(line)


class EmulatedJunos(EmulatedDevice):
    """A Junos console: operational ``root@vmx>``, ``[edit]`` configuration, ``---(more)---``."""

    pager = "---(more)---"
    page_lines = 20

    def __init__(
        self,
        name: str = "vmx",
        *,
        at_shell: bool = False,
        commit_fails: bool = False,
        ping_delay: float = 0.05,
    ) -> None:
        super().__init__(name)
        self.banner = "\r\n\r\n"
        self.mode = "shell" if at_shell else "operational"
        self.commit_fails = commit_fails
        self.ping_delay = ping_delay
        self.candidate: list[str] = []
        self.committed: list[str] = []

    def prompt(self) -> str:
        if self.mode == "shell":
            return "\r\nroot@vmx:~ # "
        if self.mode == "config":
            return "\r\n\r\n[edit]\r\nroot@vmx# "
        return "\r\n\r\nroot@vmx> "

    def _unknown(self) -> None:
        self.write("                ^\r\nunknown command.\r\n")

    async def execute(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        if self.mode == "shell":
            if words == ["cli"]:
                self.mode = "operational"
            elif words == ["exit"]:
                self.write("logout\r\n")
            else:
                self.write(f"{words[0]}: Command not found.\r\n")
            return
        if self.mode == "config":
            await self._configure(words)
            return
        if words == ["configure"]:
            self.write("Entering configuration mode\r\n")
            self.mode = "config"
        elif words == ["exit"]:
            self.mode = "shell"
        elif words[:3] == ["show", "interfaces", "terse"]:
            lines = ["Interface               Admin Link Proto    Local                 Remote"]
            lines += [f"ge-0/0/{n}                 up    up" for n in range(30)]
            await self.page(lines)
        elif words[:2] == ["show", "version"]:
            self.write("Hostname: vmx\r\nModel: vmx\r\nJunos: 21.1R1.11\r\n")
        elif words == ["show", "configuration", "|", "display", "set"]:
            lines = [f"## Last commit: 2026-03-01 12:{len(self.committed):02d}:00 UTC by root"]
            await self.page([*lines, "set version 21.1R1.11", *self.committed])
        elif words[0] == "ping" and len(words) >= 2:
            count = _count(words, "count", 1_000_000)
            self.write(f"PING {words[1]} ({words[1]}): 56 data bytes\r\n")
            sent = await self.ping_lines(
                count,
                self.ping_delay,
                f"64 bytes from {words[1]}: icmp_seq={{seq}} ttl=64 time=0.4 ms\r\n",
            )
            self.write(f"\r\n--- {words[1]} ping statistics ---\r\n{sent} packets transmitted\r\n")
        else:
            self._unknown()

    async def _configure(self, words: list[str]) -> None:
        if words[0] in ("set", "delete"):
            self.candidate.append(" ".join(words))
        elif words[:2] == ["commit", "and-quit"]:
            if self.commit_fails:
                self.write("error: configuration check-out failed\r\n")
                return
            for change in self.candidate:
                verb, _, path = change.partition(" ")
                if verb == "set" and change not in self.committed:
                    self.committed.append(change)
                elif verb == "delete":
                    self.committed = [
                        c
                        for c in self.committed
                        if c != f"set {path}" and not c.startswith(f"set {path} ")
                    ]
            self.candidate = []
            self.write("commit complete\r\nExiting configuration mode\r\n")
            self.mode = "operational"
        elif words[:2] == ["rollback", "0"]:
            self.candidate = []
            self.write("load complete\r\n")
        elif words[:2] == ["exit", "configuration-mode"] or words == ["exit"]:
            self.write("Exiting configuration mode\r\n")
            self.mode = "operational"
        else:
            self.write("                ^\r\nsyntax error.\r\n")


class EmulatedFrr(EmulatedDevice):
    """An FRR container: a busybox shell whose ``vtysh`` is the router's CLI.

    ``docker=True`` behaves like the lab's FRR Docker node (``tests/lab``) behind GNS3's
    telnet proxy: Enter is ``\r`` (``\r\n`` is two), the first client reads ``R1 console is
    now available... Press RETURN to get started.``, the console starts in vtysh and its
    shell prompt is ``root@R1:/# ``.
    """

    def __init__(self, name: str = "R1", *, ping_delay: float = 0.05, docker: bool = False) -> None:
        super().__init__(name)
        self.docker = docker
        self.binary_enter = docker
        self.banner = (
            f"{name} console is now available... Press RETURN to get started.\r\n"
            if docker
            else "\r\n"
        )
        self.mode = "vtysh" if docker else "shell"  # shell, vtysh, config, config-…
        self.ping_delay = ping_delay
        self.paginate = False  # ``terminal paginate``: vtysh's output goes through ``more``
        self.more_rows = 24  # the console's TTY rows (GNS3's Docker console: 200)
        #: Seconds between ``--More--`` and the ``(END)`` that overwrites it at the end
        #: (0: one write, as the real console sends it; more: a reader may see them apart).
        self.more_end_delay = 0.0
        self._left_more = False  # the last output went through more: the prompt follows
        #: Output is written up to this text, then the rest 50 ms later (a read of the
        #: console may end there, e.g. inside a route's ``S>*``).
        self.pause_after: str | None = None
        self.tree = ConfigTree()
        self.globals: list[str] = []
        self.block: str | None = None
        self.ps1: str | None = None  # the shell's prompt when set with PS1=...
        self.files = {"/etc/frr/frr.conf", "/etc/frr/vtysh.conf", "/etc/frr/daemons"}

    @property
    def config(self) -> list[str]:
        return [*self.globals, *(x for h, c in self.tree.blocks for x in (h, *c))]

    def version(self) -> None:
        """``show version`` as FRR 8.4's vtysh answers it."""
        self.write(
            f"FRRouting 8.4.1 ({self.name}) on Linux(5.15.0-91-generic).\r\n"
            "Copyright 1996-2005 Kunihiro Ishiguro, et al.\r\n"
            "configured with:\r\n    '--prefix=/usr' '--sysconfdir=/etc'\r\n"
        )

    def shell(self, line: str, words: list[str]) -> None:
        """A line in the container's shell (busybox's ``sh`` or bash)."""
        if words == ["vtysh"]:
            self.write("\r\nHello, this is FRRouting (version 8.4.1).\r\n")
            self.write("Copyright 1996-2005 Kunihiro Ishiguro, et al.\r\n\r\n")
            self.mode = "vtysh"
        elif line.startswith("PS1="):
            self.ps1 = line[4:].strip("'\"")
        elif words[:3] == ["ip", "-br", "addr"]:
            self.write("lo               UNKNOWN        127.0.0.1/8\r\n")
            self.write("eth0             UP             10.0.0.1/24\r\n")
        elif words[0] == "find" and "-delete" in words and len(words) > 1:
            self.files = {f for f in self.files if not f.startswith(words[1].rstrip("/") + "/")}
        elif words[0] == "do":
            self.write('sh: syntax error: unexpected "do"\r\n')
        else:
            self.write(f"sh: {words[0]}: not found\r\n")

    def wake_text(self) -> str:
        return self.banner if self.docker else self.banner + self.prompt()

    def prompt(self) -> str:
        if self._left_more:  # more leaves with ``\r`` + erase line: the prompt goes there
            self._left_more = False
            return {"vtysh": f"{self.name}# "}.get(self.mode, "")
        return {
            "shell": f"\r\n{self.ps1}"
            if self.ps1 is not None
            else f"\r\nroot@{self.name}:/# "
            if self.docker
            else "\r\n/ # ",
            "vtysh": f"\r\n{self.name}# ",
            "config": f"\r\n{self.name}(config)# ",
            "config-router": f"\r\n{self.name}(config-router)# ",
            "config-if": f"\r\n{self.name}(config-if)# ",
        }[self.mode]

    def running_config(self) -> list[str]:
        lines = [
            "Building configuration...",
            "",
            "Current configuration:",
            "!",
            "frr version 8.4.1",
            "frr defaults traditional",
            f"hostname {self.name}",
            "!",
            *self.globals,
            "!",
        ]
        for header, children in self.tree.blocks:
            lines += [header, *(" " + child for child in children), "exit", "!"]
        return [*lines, "end"]

    async def execute(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        if self.mode == "shell":
            self.shell(line, words)
            return
        text = " ".join(words)
        if words == ["show", "version"] and self.mode == "vtysh":
            self.version()
            return
        if words == ["do", "show", "version"] and self.mode.startswith("config"):
            self.version()
            return
        if words == ["exit"] and self.mode == "vtysh":
            self.mode = "shell"
        elif words == ["end"]:
            self.mode, self.block = "vtysh", None
        elif words[:2] == ["configure", "terminal"] and self.mode == "vtysh":
            self.mode = "config"
        elif words[:2] == ["terminal", "paginate"] and self.mode == "vtysh":
            self.paginate = True
        elif words[:3] == ["no", "terminal", "paginate"] and self.mode == "vtysh":
            self.paginate = False
        elif words[:3] == ["show", "ip", "route"] and self.mode == "vtysh":
            statics = [
                f"S>* {r.split()[2]} [1/0] unreachable (blackhole), weight 1, 00:00:06"
                for r in self.globals
                if r.startswith("ip route ")
            ]
            connected = [] if words[3:] == ["static"] else [
                "C>* 10.0.0.0/24 is directly connected, eth0, 00:01:02"
            ]  # fmt: skip
            codes = ["Codes: K - kernel route, C - connected, S - static, O - OSPF", ""]
            await self.vtysh_out([*codes, *connected, *statics])
        elif words[:2] == ["show", "running-config"] and self.mode == "vtysh":
            await self.vtysh_out(self.running_config())
        elif self.mode.startswith("config"):
            self._configure(text, words)
        else:
            self.write(f"% Unknown command: {line}\r\n")

    async def vtysh_out(self, lines: list[str]) -> None:
        """vtysh's output: as is, or through ``more`` once ``terminal paginate`` is on."""
        if not self.paginate:
            text = "".join(line + "\r\n" for line in lines)
            if self.pause_after and self.pause_after in text:
                cut = text.index(self.pause_after) + len(self.pause_after)
                self.write(text[:cut])
                await asyncio.sleep(0.05)
                text = text[cut:]
            self.write(text)
            return
        rows = self.more_rows - 1  # a screen less the pager's line
        shown = 0
        while True:
            page = lines[shown : shown + rows]
            shown += len(page)
            self.write("".join(line + "\r\n" for line in page))
            if shown >= len(lines):
                break
            self.write("\x1b[7m--More--\x1b[27m")
            if await self._next_key() in ("q", "Q"):
                self.write("\r\x1b[K")
                self._left_more = True
                return
            self.write("\r")  # the next page overwrites the pager's line
        while True:  # the end: the screen filled with empty lines, (END) until q
            self.write("\r\n" * (rows - len(page)) + "\x1b[7m--More--")
            if self.more_end_delay:
                await asyncio.sleep(self.more_end_delay)
            self.write("\r\x1b[K(END)\x1b[27m")
            key = await self._next_key()
            self.write("\r\x1b[K")
            if key in ("q", "Q"):
                break
            page = []  # any other key: a screen of nothing, and (END) again
        self._left_more = True

    def _configure(self, text: str, words: list[str]) -> None:
        if words == ["exit"]:
            self.mode = "config" if self.mode != "config" else "vtysh"
            self.block = None
        elif words[0] in ("router", "interface") and len(words) > 1:
            self.mode = "config-router" if words[0] == "router" else "config-if"
            self.block = text
            self.tree.block(text)
        elif words[:2] == ["ip", "route"]:
            if text not in self.globals:
                self.globals.append(text)
            self.mode, self.block = "config", None
        elif words[:3] == ["no", "ip", "route"]:
            if text[3:] in self.globals:
                self.globals.remove(text[3:])
        elif words[0] == "no" and words[1:2] in (["router"], ["interface"]):
            self.tree.remove(text[3:])
        elif self.block is not None and words[0] == "no" and len(words) > 1:
            children = self.tree.block(self.block)
            children[:] = [c for c in children if c != text[3:]]
        elif self.block is not None and words[0] in ("network", "ip", "passive-interface"):
            children = self.tree.block(self.block)
            if text not in children:
                children.append(text)
        else:
            self.write(f"% Unknown command: {text}\r\n")


class EmulatedLinux(EmulatedDevice):
    """A Linux host's console: a bash prompt; ``ping`` without ``-c`` runs until Ctrl-C."""

    def __init__(self, name: str = "host1", *, ping_delay: float = 0.05) -> None:
        super().__init__(name)
        self.banner = "\r\n"
        self.ping_delay = ping_delay
        self.addresses: list[tuple[str, str]] = [("lo", "127.0.0.1/8"), ("eth0", "10.0.0.5/24")]
        self.routes: list[str] = ["default via 10.0.0.1 dev eth0"]
        self.down: set[str] = set()  # devices ``ip -o link show`` shows administratively down

    def prompt(self) -> str:
        return f"\r\nroot@{self.name}:~# "

    def _ip(self, words: list[str]) -> None:
        """``ip -4 -o addr show``, ``ip -o link show``, ``ip addr add|del CIDR dev DEV``,
        ``ip -4 route show``, ``ip route add|del ROUTE``, as iproute2 answers them."""
        words = [w for w in words if w not in ("-4",)]
        if words[:1] == ["-o"] and words[1:2] == ["link"]:
            devices = dict.fromkeys(dev for dev, _ in self.addresses)
            for index, dev in enumerate(devices, start=1):
                if dev == "lo":
                    flags, state = "LOOPBACK,UP,LOWER_UP", "UNKNOWN"
                elif dev in self.down:
                    flags, state = "BROADCAST,MULTICAST", "DOWN"
                else:
                    flags, state = "BROADCAST,MULTICAST,UP,LOWER_UP", "UP"
                name = dev if dev == "lo" else f"{dev}@if{40 + index}"
                self.write(
                    f"{index}: {name}: <{flags}> mtu 1500 qdisc noqueue state {state} "
                    "mode DEFAULT group default qlen 1000\\    link/ether "
                    f"02:42:ac:11:00:0{index} brd ff:ff:ff:ff:ff:ff\r\n"
                )
        elif words[:1] == ["-o"] and words[1:2] in (["addr"], ["a"], ["address"]):
            for index, (dev, cidr) in enumerate(self.addresses, start=1):
                scope = "host" if dev == "lo" else "global"
                self.write(
                    f"{index}: {dev}    inet {cidr} scope {scope} {dev}\\"
                    "       valid_lft forever preferred_lft forever\r\n"
                )
        elif words[:1] in (["addr"], ["address"]) and words[1:2] in (["add"], ["del"]):
            if len(words) != 5 or words[3] != "dev":
                self.write('Command line is not complete. Try option "help"\r\n')
                return
            entry = (words[4], words[2])
            if words[1] == "add" and entry in self.addresses:
                self.write("RTNETLINK answers: File exists\r\n")
            elif words[1] == "add":
                self.addresses.append(entry)
                network = words[2].rsplit(".", 1)[0] + ".0/" + words[2].split("/")[1]
                self.routes.append(f"{network} dev {words[4]} proto kernel scope link")
            elif entry not in self.addresses:
                self.write("RTNETLINK answers: Cannot assign requested address\r\n")
            else:
                self.addresses.remove(entry)
        elif words[:1] in (["route"], ["r"]) and words[1:2] in ([], ["show"]):
            kernel = [
                f"{c.rsplit('.', 1)[0]}.0/{c.split('/')[1]} dev {d} proto kernel scope link "
                f"src {c.split('/')[0]}"
                for d, c in self.addresses
                if d != "lo"
            ]
            for route in [r for r in self.routes if "proto kernel" not in r] + kernel:
                self.write(route + "\r\n")
        elif words[:1] == ["route"] and words[1:2] in (["add"], ["del"]):
            route = " ".join(words[2:])
            if words[1] == "add" and route in self.routes:
                self.write("RTNETLINK answers: File exists\r\n")
            elif words[1] == "add":
                self.routes.append(route)
            elif route not in self.routes:
                self.write("RTNETLINK answers: No such process\r\n")
            else:
                self.routes.remove(route)
        else:
            self.write('Object "{}" is unknown, try "ip help".\r\n'.format(" ".join(words)))

    async def execute(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        if words[0] == "ping" and len(words) >= 2:
            host = words[-1]
            count = _count(words, "-c", 1_000_000)
            self.write(f"PING {host} ({host}) 56(84) bytes of data.\r\n")
            sent = await self.ping_lines(
                count,
                self.ping_delay,
                f"64 bytes from {host}: icmp_seq={{seq}} ttl=64 time=0.1 ms\r\n",
            )
            if sent < count:
                self.write("^C")
            self.write(
                f"\r\n--- {host} ping statistics ---\r\n"
                f"{sent} packets transmitted, {sent} received, 0% packet loss\r\n"
            )
        elif words[:3] == ["ip", "-br", "addr"]:
            for dev in sorted({dev for dev, _ in self.addresses}, key=lambda d: d != "lo"):
                cidrs = " ".join(c for d, c in self.addresses if d == dev)
                state = "UNKNOWN" if dev == "lo" else "UP"
                self.write(f"{dev:<16} {state:<14} {cidrs}\r\n")
        elif words[0] == "ip":
            self._ip(words[1:])
        elif words[0] == "uname":
            self.write("Linux host1 6.1.0 #1 SMP x86_64 GNU/Linux\r\n")
        elif words == ["yes"]:
            await self.flood(b"y\r\n" * 1024)
            self.write("^C")
        elif words == ["cat", "/dev/urandom"] and self.dies_on_binary:
            self.write_bytes(random.Random(7).randbytes(512))
            await asyncio.sleep(0.05)
            self.dead = True
            self.drop_all()
        elif words == ["cat", "/dev/urandom"]:
            await self.flood(random.Random(7).randbytes(8192))
            self.write("^C")
        elif words[:2] == ["tail", "-f"]:
            while not await self.interruptible_sleep(0.5):
                pass
            self.write("^C")
        else:
            self.write(f"bash: {words[0]}: command not found\r\n")


class EmulatedHuawei(EmulatedDevice):
    """A Huawei VRP console: ``<HUAWEI>`` user view, ``[HUAWEI]`` system view."""

    pager = "  ---- More ----"
    page_lines = 10

    def __init__(self, name: str = "HUAWEI", *, ping_delay: float = 0.05) -> None:
        super().__init__(name)
        self.banner = "\r\n"
        self.view = "user"  # user, system, interface
        self.interface = ""
        self.ping_delay = ping_delay
        self.tree = ConfigTree((f"interface GigabitEthernet0/0/{n}", []) for n in range(3))
        self.globals: list[str] = []

    @property
    def config(self) -> list[str]:
        return [f"sysname {self.name}", *self.globals, *self.tree.lines()]

    def current_configuration(self) -> list[str]:
        """``display current-configuration``: sections between ``#`` lines."""
        lines = ["!Software Version V200R003C00SPC810", "#", f" sysname {self.name}", "#"]
        for header, children in self.tree.blocks:
            lines += [header, *(" " + child for child in children), "#"]
        if self.globals:
            lines += [*self.globals, "#"]
        lines += [" user-interface con 0", "#", "return"]
        return lines

    def prompt(self) -> str:
        if self.view == "user":
            return f"\r\n<{self.name}>"
        if self.view == "interface":
            return f"\r\n[{self.name}-{self.interface}]"
        return f"\r\n[{self.name}]"

    def _unrecognized(self) -> None:
        self.write("              ^\r\nError: Unrecognized command found at '^' position.\r\n")

    async def execute(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        text = " ".join(words)
        if words == ["system-view"] and self.view == "user":
            self.write("Enter system view, return user view with return command.\r\n")
            self.view = "system"
        elif words == ["return"]:
            self.view = "user"
        elif words == ["quit"]:
            self.view = {"interface": "system", "system": "user", "user": "user"}[self.view]
        elif words[:2] == ["display", "current-configuration"]:
            await self.page(self.current_configuration())
        elif self.view != "user" and self._configure(text, words):
            pass
        elif words[:4] == ["display", "ip", "interface", "brief"]:
            lines = [
                "*down: administratively down",
                "Interface                         IP Address/Mask      Physical   Protocol",
            ]
            lines += [
                f"GigabitEthernet0/0/{n}              unassigned           down       down"
                for n in range(24)
            ]
            await self.page(lines)
        elif words[0] == "ping" and len(words) >= 2:
            count = _count(words, "-c", 5)
            host = words[-1]
            self.write(f"  PING {host}: 56  data bytes, press CTRL_C to break\r\n")
            await self.ping_lines(
                count,
                self.ping_delay,
                f"    Reply from {host}: bytes=56 Sequence={{seq}} ttl=255 time=1 ms\r\n",
            )
        else:
            self._unrecognized()

    def _configure(self, text: str, words: list[str]) -> bool:
        """A system-view or interface-view line; False when it is not one (then the caller
        goes on with the commands of every view)."""
        if words[0] == "interface" and len(words) > 1:
            self.view, self.interface = "interface", words[1]
            self.tree.block(f"interface {words[1]}")
        elif words[0] == "sysname" and len(words) > 1:
            self.name = words[1]
        elif words[:2] == ["undo", "sysname"]:
            self.name = "HUAWEI"
        elif words[:2] == ["ip", "route-static"]:
            if text not in self.globals:
                self.globals.append(text)
            self.view = "system"
        elif words[:3] == ["undo", "ip", "route-static"]:
            if text[5:] in self.globals:
                self.globals.remove(text[5:])
        elif self.view == "interface":
            children = self.tree.block(f"interface {self.interface}")
            if words[:2] == ["ip", "address"]:
                _replace_prefixed(children, "ip address ", text)
            elif words[:3] == ["undo", "ip", "address"]:
                children[:] = [c for c in children if not c.startswith("ip address ")]
            elif words[0] == "description":
                _replace_prefixed(children, "description ", text)
            elif words[0] == "undo" and len(words) > 1:  # ``undo description``: any text
                target = text[5:]
                children[:] = [
                    c for c in children if c != target and not c.startswith(target + " ")
                ]
            elif words[0] in ("shutdown", "ospf", "ip"):
                if text not in children:
                    children.append(text)
            else:
                return False
        else:
            return False
        return True


class EmulatedGenericDevice(EmulatedDevice):
    """A device of no known platform: a RouterOS-like ``[admin@MikroTik] >`` prompt."""

    def __init__(self, name: str = "MikroTik") -> None:
        super().__init__(name)
        self.banner = "\r\n"

    def prompt(self) -> str:
        return f"\r\n[admin@{self.name}] > "

    async def execute(self, line: str) -> None:
        if line == "/system identity print":
            self.write(f"  name: {self.name}\r\n")
        elif line:
            self.write(f"bad command name {line.split()[0]} (line 1 column 1)\r\n")


class EmulatedDeviceLab:
    """Several emulated devices started together: ``async with EmulatedDeviceLab(...)``."""

    def __init__(self, *devices: EmulatedDevice) -> None:
        self.devices = {device.name: device for device in devices}

    def __getitem__(self, name: str) -> EmulatedDevice:
        return self.devices[name]

    async def __aenter__(self) -> EmulatedDeviceLab:
        for device in self.devices.values():
            await device.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for device in self.devices.values():
            await device.stop()

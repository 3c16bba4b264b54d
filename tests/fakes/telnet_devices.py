"""Telnet device emulators on 127.0.0.1 that behave like GNS3's consoles.

Reproduced behaviours (see ``/work/shared/GNS3.md``):

* on connect only telnet negotiation (``IAC WILL ECHO, WILL SGA, WILL BINARY, DO BINARY``);
* the console is shared: every client sees all output; the buffered boot banner goes to
  the first client only, later ones see nothing until they send a line;
* any line ending (``\\r\\n``, ``\\r\\0``, ``\\r``, ``\\n``) runs the line once, which is echoed;
  output lines end in ``\\r\\n``;
* VPCS: prompt ``\\rPC1> `` without a newline, ``Bad command`` for unknown commands,
  ANSI escapes in the help, a slow ``ip`` (duplicate address check), ``ping -c N``;
* Cisco-like: ``>``/``#``/``(config)#``/``(config-if)#`` prompts, ``--More--`` paging
  (off after ``terminal length 0``), a ``ping … repeat N`` that only an interrupt
  (Ctrl-^ or Ctrl-C) ends, slow ``show logging``, and an optional command after
  which the device drops every connection.

Every executed line is recorded in ``received`` so tests can prove what was (not) sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from types import TracebackType

__all__ = ["EmulatedCiscoRouter", "EmulatedDevice", "EmulatedDeviceLab", "EmulatedVpcs"]

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
_GREETING = bytes([IAC, WILL, 1, IAC, WILL, 3, IAC, WILL, 0, IAC, DO, 0])
_INTERRUPTS = {"\x03", "\x1e"}


class EmulatedDevice:
    """Base: a shared telnet console with a line-processing worker."""

    banner = ""

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = 0
        self.received: list[str] = []
        self.connections = 0
        self.peak_clients = 0
        self.busy = False
        self.negotiations: list[tuple[int, int]] = []
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

    def prompt(self) -> str:
        raise NotImplementedError

    # ------------------------------------------------------------------- input
    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self.connections += 1
        self._clients.add(writer)
        self.peak_clients = max(self.peak_clients, len(self._clients))
        writer.write(_GREETING)
        if self._banner_pending and self.banner:
            self._banner_pending = False
            writer.write((self.banner + self.prompt()).encode())
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
                        if char in _INTERRUPTS:
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
            if self._after_cr and char in "\n\x00":
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
                await self.execute(line.strip())
            finally:
                self.busy = False
            self.write(self.prompt())

    async def execute(self, line: str) -> None:
        raise NotImplementedError

    async def interruptible_sleep(self, seconds: float) -> bool:
        """Sleep; True when an interrupt (Ctrl-C / Ctrl-^) arrived meanwhile."""
        try:
            async with asyncio.timeout(seconds):
                await self._interrupt.wait()
        except TimeoutError:
            return False
        return True


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
        self.ip_delay = ip_delay
        self.ping_delay = ping_delay

    def prompt(self) -> str:
        return f"\r{self.name}> "

    async def execute(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        verb = words[0].lower()
        if verb == "show" and words[1:2] == ["ip"]:
            self.write(
                f"\r\nNAME        : {self.name}[1]\r\nIP/MASK     : {self.ip}\r\n"
                f"GATEWAY     : {self.gateway}\r\nDNS         : \r\n"
                "MAC         : 00:50:79:66:68:00\r\nLPORT       : 20000\r\n"
                "RHOST:PORT  : 127.0.0.1:20001\r\nMTU         : 1500\r\n\r\n"
            )
        elif verb == "ip" and len(words) >= 2:
            self.write("Checking for duplicate address...\r\n")
            await asyncio.sleep(self.ip_delay)
            self.ip = words[1]
            self.gateway = words[2] if len(words) > 2 else self.gateway
            self.write(f"{self.name} : {self.ip} gateway {self.gateway}\r\n\r\n")
        elif verb == "ping" and len(words) >= 2:
            count = int(words[words.index("-c") + 1]) if "-c" in words else 5
            for seq in range(1, count + 1):
                if await self.interruptible_sleep(self.ping_delay):
                    break
                self.write(f"84 bytes from {words[1]} icmp_seq={seq} ttl=64 time=0.5 ms\r\n")
        elif verb == "?":
            self.write(
                "\x1b[1m?\x1b[0m        Print help\r\n\x1b[1mip\x1b[0m       Configure IP\r\n"
            )
        elif verb == "save":
            self.write("Saving startup configuration to startup.vpc\r\n.  done\r\n")
        else:
            self.write(f'Bad command: "{line}". Use ? for help.\r\n\r\n')


class EmulatedCiscoRouter(EmulatedDevice):
    """An IOS-like router: modes, ``--More--`` paging, interruptible and slow commands."""

    PAGE = 23

    def __init__(
        self,
        name: str = "R1",
        *,
        drop_on: Iterable[str] = (),
        slow_line_delay: float = 0.05,
        ping_delay: float = 0.1,
    ) -> None:
        super().__init__(name)
        self.banner = "\r\n\r\nPress RETURN to get started!\r\n\r\n"
        self.mode = "user"  # user, enable, config, config-if
        self.paging = True
        self.drop_on = {d.lower() for d in drop_on}
        self.slow_line_delay = slow_line_delay
        self.ping_delay = ping_delay
        self.config: list[str] = [f"hostname {name}"]
        self.interface: str | None = None

    def prompt(self) -> str:
        suffix = {"user": ">", "enable": "#", "config": "(config)#", "config-if": "(config-if)#"}
        return f"\r\n{self.name}{suffix[self.mode]}"

    async def _page(self, lines: list[str]) -> None:
        for index, line in enumerate(lines):
            if self.paging and index and index % self.PAGE == 0:
                self.write(" --More-- ")
                key = await self._next_key()
                self.write("\b" * 10 + " " * 10 + "\b" * 10)
                if key in ("q", "Q"):
                    return
            self.write(line + "\r\n")

    def _invalid(self) -> None:
        self.write("                   ^\r\n% Invalid input detected at '^' marker.\r\n")

    async def execute(self, line: str) -> None:
        lowered = line.lower()
        words = lowered.split()
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
            self.mode = "enable"
        elif words[0] == "disable":
            self.mode = "user"
        elif words[:2] == ["terminal", "length"]:
            self.paging = words[2:3] != ["0"]
        elif words[0] in ("configure", "conf") and self.mode == "enable":
            self.write("Enter configuration commands, one per line.  End with CNTL/Z.\r\n")
            self.mode = "config"
        elif words[0] == "show" and len(words) > 1:
            await self._show(words[1:])
        elif words[0] == "ping" and len(words) >= 2:
            repeat = int(words[words.index("repeat") + 1]) if "repeat" in words else 5
            self.write("Type escape sequence to abort.\r\n")
            self.write(
                f"Sending {repeat}, 100-byte ICMP Echos to {words[1]}, timeout is 2 seconds:\r\n"
            )
            for _ in range(repeat):
                if await self.interruptible_sleep(self.ping_delay):
                    break
                self.write(".")
            self.write("\r\nSuccess rate is 0 percent\r\n")
        else:
            self._invalid()

    async def _show(self, what: list[str]) -> None:
        topic = what[0]
        if "running-config".startswith(topic) and len(topic) >= 3:
            if self.mode != "enable":
                self._invalid()
                return
            lines = ["Building configuration...", "", "Current configuration : 1234 bytes", "!"]
            lines += self.config
            lines += [
                f"interface GigabitEthernet0/{n}\r\n no ip address\r\n shutdown" for n in range(4)
            ]
            lines += [f"! filler line {n}" for n in range(60)]
            lines += ["end"]
            await self._page("\r\n".join(lines).split("\r\n"))
        elif "version".startswith(topic) and len(topic) >= 3:
            self.write(
                "Cisco IOS Software, IOSv Software (VIOS-ADVENTERPRISEK9-M), Version 15.9(3)M4\r\n"
                f"{self.name} uptime is 5 minutes\r\n"
            )
        elif topic == "ip" and what[1:2] and what[1].startswith("int"):
            self.write(
                "Interface              IP-Address      OK? Method Status      "
                "          Protocol\r\n"
                "GigabitEthernet0/0     unassigned      YES unset  administratively down down\r\n"
                "GigabitEthernet0/1     unassigned      YES unset  administratively down down\r\n"
            )
        elif "logging".startswith(topic) and len(topic) >= 3:
            for n in range(5):
                await asyncio.sleep(self.slow_line_delay)
                self.write(f"*Mar  1 00:00:0{n}.000: %SYS-5-CONFIG_I: log line {n}\r\n")
        else:
            self._invalid()

    def _configure(self, line: str, words: list[str]) -> None:
        if words[0] == "end":
            self.mode = "enable"
            self.interface = None
        elif words[0] == "exit":
            self.mode = "config" if self.mode == "config-if" else "enable"
        elif words[0] in ("interface", "int") and len(words) > 1:
            self.mode = "config-if"
            self.interface = line.split()[1]
            self.config.append(f"interface {self.interface}")
        elif words[0] == "hostname" and len(words) > 1:
            self.name = line.split()[1]
            self.config[0] = f"hostname {self.name}"
        elif words[0] in ("ip", "no", "description", "shutdown", "router", "network"):
            self.config.append(" " + line if self.mode == "config-if" else line)
        else:
            self._invalid()


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

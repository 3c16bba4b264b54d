"""The real-router lab: FRRouting in GNS3 Docker nodes under a real gns3-server 3.0.6.

:class:`RouterLab` brings up, in order, everything a router test needs and takes down only
what it started:

1. the machine's checks: root, ``dockerd``, ``debootstrap``, a static busybox on the host
   (gns3-server refuses Docker nodes without one) and ``/dev/net/tun``; a failed check is a
   :class:`LabUnavailableError` naming it (the fixture turns it into a skip that says so);
2. a Docker daemon: the one answering on ``/var/run/docker.sock`` if its default runtime
   copes with this machine's capability bounding set, else one started here with
   :mod:`tests.lab.runc_caps` as its default runtime (stopped again at the end);
3. the image ``frr-lab:8.4-2`` (:data:`FRR_IMAGE`): already in the daemon, else loaded from
   the cache outside the clone (``docker save``/``load``), else built by
   ``build-frr-image.sh`` (about 1 min) and saved to the cache; one process builds while
   the others wait (a file lock);
4. a gns3-server whose ``ubridge_path`` is :mod:`tests.lab.ubridge_standin`, with two Docker
   templates: ``FRR 8.4`` (routers: console = vtysh) and ``Linux host`` (the same image,
   tagged ``linux-host:bookworm``, with ``LAB_ROLE=host``: console = a root shell, iproute2
   and ping; the lab's PCs).

Every wait is bounded. Manual use: ``python -m tests.lab.router_lab`` prints the server's
URL and keeps the lab up until Ctrl-C.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.lifeline import die_with_parent

__all__ = [
    "FRR_IMAGE",
    "HOST_TEMPLATE",
    "ROUTER_TEMPLATE",
    "LabUnavailableError",
    "RouterLab",
    "ensure_frr_image",
]

#: The tag names what the image holds: a change to ``build-frr-image.sh`` takes a new tag, so
#: that no daemon or cache (both outside the clone) serves an image built before it (``-2``:
#: iptables and nftables added).
FRR_IMAGE = "frr-lab:8.4-2"
#: The same image under a host's name, so that GNS3's node shows what it is (a Linux host).
HOST_IMAGE = "linux-host:bookworm"
ROUTER_TEMPLATE = "FRR 8.4"
HOST_TEMPLATE = "Linux host"

_HERE = Path(__file__).resolve().parent
_BUILD = _HERE / "build-frr-image.sh"
_RUNC_WRAPPER = _HERE / "runc_caps.py"
_UBRIDGE = _HERE / "ubridge_standin.py"
_SOCKET = Path("/var/run/docker.sock")
_RUNTIME = "gns3-lab"
#: Where the image tarball and the daemon's own data live: outside any clone, so the next CI
#: run on this machine reuses them; a new machine builds the image again.
CACHE = Path(os.environ.get("GNS3_COPILOT_LAB_CACHE", "/var/cache/gns3-copilot"))
_STATE = Path(os.environ.get("GNS3_COPILOT_LAB_STATE", "/var/lib/gns3-copilot"))
_RUN = Path("/run/gns3-copilot")


class LabUnavailableError(RuntimeError):
    """This machine cannot run the router lab; the message names the check that failed."""


def _run(
    *argv: str, timeout: float = 60.0, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout, input=input, check=False)
    except FileNotFoundError as exc:
        raise LabUnavailableError(f"{argv[0]} is not installed") from exc


def _static_busybox() -> Path | None:
    for candidate in ("/bin/busybox", "/usr/bin/busybox", "/usr/local/bin/busybox"):
        path = Path(candidate)
        if path.is_file():
            described = _run("file", "-L", str(path), timeout=10).stdout.decode(errors="replace")
            if "statically linked" in described or "static-pie" in described:
                return path
    return None


def check_machine() -> None:
    """Raise :class:`LabUnavailableError` naming the first check this machine fails."""
    if os.geteuid() != 0:
        raise LabUnavailableError("not root: Docker nodes and TAP interfaces need root")
    for tool in ("dockerd", "docker", "debootstrap", "ip", "nsenter"):
        if shutil.which(tool) is None:
            raise LabUnavailableError(
                f"{tool} is not installed (Debian: docker.io, debootstrap, iproute2, util-linux)"
            )
    if shutil.which("file") is not None and _static_busybox() is None:
        raise LabUnavailableError(
            "no static busybox on the host (Debian: busybox-static); gns3-server refuses "
            "Docker nodes without one"
        )
    if not Path("/dev/net/tun").exists():
        raise LabUnavailableError("/dev/net/tun is missing: no TAP interfaces for the links")


class DockerDaemon:
    """The Docker daemon on ``/var/run/docker.sock``: the running one, or one started here."""

    def __init__(self, startup_timeout: float = 60.0) -> None:
        self.startup_timeout = startup_timeout
        self.started_here = False
        self._process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def answers() -> bool:
        return (
            _run("docker", "version", "--format", "{{.Server.Version}}", timeout=10).returncode == 0
        )

    @staticmethod
    def default_runtime() -> str:
        out = _run("docker", "info", "--format", "{{.DefaultRuntime}}", timeout=20)
        return out.stdout.decode().strip()

    def start(self) -> DockerDaemon:
        if self.answers():
            runtime = self.default_runtime()
            if runtime != _RUNTIME and _lacks_capabilities():
                raise LabUnavailableError(
                    f"the Docker daemon on {_SOCKET} uses the runtime {runtime!r}, and this "
                    "machine's capability bounding set lacks some of what GNS3 asks for "
                    "(CapAdd ALL): stop that daemon so the lab can start one with "
                    f"{_RUNC_WRAPPER.name} as its runtime"
                )
            return self
        for folder in (_STATE / "docker", _RUN / "docker-exec"):
            folder.mkdir(parents=True, exist_ok=True)
        log = open(_RUN / "dockerd.log", "wb")  # noqa: SIM115 - kept open for the child
        self._process = subprocess.Popen(
            [
                "dockerd",
                "--host",
                f"unix://{_SOCKET}",
                "--data-root",
                str(_STATE / "docker"),
                "--exec-root",
                str(_RUN / "docker-exec"),
                "--pidfile",
                str(_RUN / "dockerd.pid"),
                "--iptables=false",
                "--ip6tables=false",
                "--bridge=none",
                "--add-runtime",
                f"{_RUNTIME}={_RUNC_WRAPPER}",
                "--default-runtime",
                _RUNTIME,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent(signal.SIGTERM),
        )
        log.close()
        self.started_here = True
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = (_RUN / "dockerd.log").read_text(errors="replace")[-2000:]
                raise LabUnavailableError(f"dockerd exited at once:\n{tail}")
            if self.answers():
                return self
            time.sleep(0.3)
        self.stop()
        raise LabUnavailableError(f"dockerd did not answer within {self.startup_timeout:g} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _lacks_capabilities() -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            mask = int(line.split()[1], 16)
            return mask & ((1 << 41) - 1) != (1 << 41) - 1
    return False


def _image_present(tag: str) -> bool:
    return _run("docker", "image", "inspect", tag, timeout=20).returncode == 0


def ensure_frr_image(tag: str = FRR_IMAGE, build_timeout: float = 900.0) -> dict[str, float]:
    """Make ``tag`` present in the daemon; returns what it took (``load_s`` / ``build_s``)."""
    figures: dict[str, float] = {}
    if _image_present(tag):
        return figures
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"{tag.replace(':', '-').replace('/', '_')}.tar"
    with open(CACHE / "frr-image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run may be building it: wait for it
        if _image_present(tag):
            return figures
        if tarball.is_file():
            started = time.monotonic()
            loaded = _run("docker", "load", "--input", str(tarball), timeout=300)
            if loaded.returncode == 0 and _image_present(tag):
                figures["load_s"] = time.monotonic() - started
                return figures
            tarball.unlink(missing_ok=True)  # a broken cache: build again
        started = time.monotonic()
        built = _run("bash", str(_BUILD), tag, timeout=build_timeout)
        if built.returncode != 0 or not _image_present(tag):
            raise RuntimeError(
                f"building {tag} failed (exit {built.returncode}):\n"
                + built.stderr.decode(errors="replace")[-3000:]
            )
        figures["build_s"] = time.monotonic() - started
        partial = tarball.with_suffix(".tar.partial")
        if _run("docker", "save", "--output", str(partial), tag, timeout=300).returncode == 0:
            partial.replace(tarball)
    return figures


class RouterLab:
    """Docker daemon + FRR image + a gns3-server with the FRR and host templates."""

    def __init__(self, port_base: int | None = None) -> None:
        # Console and UDP ports: 500 from ``port_base`` (``COPILOT_LAB_PORT_BASE``, 27000):
        # a second lab beside this one (a benchmark during the tests) takes another base.
        base = port_base or int(os.environ.get("COPILOT_LAB_PORT_BASE", "27000"))
        self.docker = DockerDaemon()
        self.server = RealGns3Server(
            console_ports=(base, base + 199),
            udp_ports=(base + 200, base + 499),
            server_settings={"ubridge_path": str(_UBRIDGE)},
        )
        self.templates: dict[str, str] = {}
        self.figures: dict[str, float] = {}

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> RouterLab:
        check_machine()
        os.chmod(_UBRIDGE, 0o755)
        os.chmod(_RUNC_WRAPPER, 0o755)
        self.docker.start()
        try:
            started = time.monotonic()
            self.figures.update(ensure_frr_image())
            # What the image took this run: ~0 s when the daemon's data (outside the clone)
            # still holds it, a ``docker load`` from the cache, or a build on a new machine.
            self.figures["image_ready_s"] = time.monotonic() - started
            tagged = _run("docker", "tag", FRR_IMAGE, HOST_IMAGE, timeout=30)
            if tagged.returncode != 0:
                raise RuntimeError(f"docker tag: {tagged.stderr.decode(errors='replace')}")
            started = time.monotonic()
            self.server.start()
            self.figures["gns3_server_start_s"] = time.monotonic() - started
            token = self.server.token()
            self.templates[ROUTER_TEMPLATE] = self._template(
                token, ROUTER_TEMPLATE, adapters=4, environment="", category="router"
            )
            self.templates[HOST_TEMPLATE] = self._template(
                token, HOST_TEMPLATE, adapters=1, environment="LAB_ROLE=host", category="guest"
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _template(
        self, token: str, name: str, *, adapters: int, environment: str, category: str
    ) -> str:
        body: dict[str, Any] = {
            "name": name,
            "template_type": "docker",
            "image": FRR_IMAGE if category == "router" else HOST_IMAGE,
            "adapters": adapters,
            "console_type": "telnet",
            "compute_id": "local",
            "category": category,
            "default_name_format": "R{0}" if category == "router" else "PC{0}",
            "environment": environment,
        }
        if category == "router":
            body["extra_volumes"] = ["/etc/frr"]
        made = httpx.post(
            f"{self.url}/v3/templates",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        if made.status_code != 201:
            raise RuntimeError(f"creating the {name!r} template: {made.status_code} {made.text}")
        return str(made.json()["template_id"])

    def stop(self) -> None:
        self.server.stop()
        self.docker.stop()

    def __enter__(self) -> RouterLab:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def docker_memory_mib(container_name_part: str) -> dict[str, float]:
    """Memory in use per running container whose name contains ``container_name_part``."""
    out = _run(
        "docker", "stats", "--no-stream", "--format", "{{json .}}", timeout=60
    ).stdout.decode()
    usage: dict[str, float] = {}
    for line in out.splitlines():
        row = json.loads(line)
        if container_name_part in row.get("Name", ""):
            used = row.get("MemUsage", "0MiB").split("/")[0].strip()
            number = float("".join(c for c in used if c.isdigit() or c == "."))
            factor = {"GiB": 1024.0, "MiB": 1.0, "KiB": 1 / 1024, "kB": 1 / 1024}
            unit = next((u for u in factor if used.endswith(u)), "MiB")
            usage[row["Name"]] = number * factor[unit]
    return usage


if __name__ == "__main__":  # pragma: no cover - manual use
    with RouterLab() as lab:
        print(lab.url, lab.templates, lab.figures, flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            sys.exit(0)

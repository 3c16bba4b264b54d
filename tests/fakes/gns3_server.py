"""A real gns3-server 3.0.6 for tests: installed into its own venv, run on 127.0.0.1.

Usable as a plain context manager (``with RealGns3Server() as server: ...``) or
through the session-scoped ``gns3_server`` fixture of ``tests/conftest.py``.
The server gets a private temporary directory for every path it writes, a free
TCP port and console/UDP port ranges of its own, and is stopped with SIGTERM (also
when the test process dies, even by SIGKILL: see :mod:`tests.fakes.lifeline`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import httpx

from tests.fakes.lifeline import die_with_parent

__all__ = ["GNS3_SERVER_VERSION", "RealGns3Server", "ensure_gns3_server_installed"]

GNS3_SERVER_VERSION = "3.0.6"
_REPO = Path(__file__).resolve().parents[2]
_DEFAULT_VENV = _REPO / ".cache" / "gns3-server-venv"


def ensure_gns3_server_installed(venv: Path = _DEFAULT_VENV) -> Path:
    """Return the ``gns3server`` executable, installing it into ``venv`` if missing.

    Safe to call from several processes at once (test runs of other worktrees share
    ``.cache``): one installs under an exclusive file lock while the others wait, and a
    venv counts as installed only once its ``.installed`` marker names the version.
    """
    exe = venv / "bin" / "gns3server"
    marker = venv / ".installed"
    if exe.exists() and _marker_says_installed(marker):
        return exe
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if exe.exists() and _marker_says_installed(marker):
            return exe  # another process installed it while we waited
        if exe.exists() and _installed_version(venv) == GNS3_SERVER_VERSION:
            marker.write_text(GNS3_SERVER_VERSION)  # installed before markers existed
            return exe
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"gns3-server=={GNS3_SERVER_VERSION}",
            ],
            check=True,
            timeout=600,
        )
        if not exe.exists():  # pragma: no cover - a broken install
            raise RuntimeError(f"gns3-server installed but {exe} is missing")
        marker.write_text(GNS3_SERVER_VERSION)
    return exe


def _marker_says_installed(marker: Path) -> bool:
    try:
        return marker.read_text().strip() == GNS3_SERVER_VERSION
    except OSError:
        return False


def _installed_version(venv: Path) -> str | None:
    probe = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('gns3-server'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RealGns3Server:
    """One gns3-server process with admin/admin; ``url`` is its base URL (no ``/v3``)."""

    admin_username = "admin"
    admin_password = "admin"

    def __init__(
        self,
        *,
        console_ports: tuple[int, int] = (25000, 25499),
        udp_ports: tuple[int, int] = (26000, 26499),
        startup_timeout: float = 180.0,
        server_settings: dict[str, str] | None = None,
    ) -> None:
        self.console_ports = console_ports
        self.server_settings = dict(server_settings or {})
        self.udp_ports = udp_ports
        self.startup_timeout = startup_timeout
        self.port = 0
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def pid(self) -> int:
        """The server process's id (while it runs)."""
        if self._process is None:
            raise RuntimeError("the server is not started")
        return self._process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_config(self, root: Path) -> Path:
        for sub in ("images", "projects", "appliances", "symbols", "configs", "resources"):
            (root / sub).mkdir()
        (root / "secrets").mkdir(mode=0o700)
        config = root / "gns3_server.conf"
        config.write_text(
            "\n".join(
                [
                    "[Server]",
                    "host = 127.0.0.1",
                    f"port = {self.port}",
                    f"images_path = {root / 'images'}",
                    f"projects_path = {root / 'projects'}",
                    f"appliances_path = {root / 'appliances'}",
                    f"symbols_path = {root / 'symbols'}",
                    f"configs_path = {root / 'configs'}",
                    f"resources_path = {root / 'resources'}",
                    f"secrets_dir = {root / 'secrets'}",
                    "report_errors = False",
                    f"console_start_port_range = {self.console_ports[0]}",
                    f"console_end_port_range = {self.console_ports[1]}",
                    f"udp_start_port_range = {self.udp_ports[0]}",
                    f"udp_end_port_range = {self.udp_ports[1]}",
                    "compute_username = compute",
                    "compute_password = compute-test-password",
                    *(f"{key} = {value}" for key, value in self.server_settings.items()),
                    "",
                    "[Controller]",
                    f"default_admin_username = {self.admin_username}",
                    f"default_admin_password = {self.admin_password}",
                    "",
                ]
            )
        )
        return config

    def start(self) -> RealGns3Server:
        exe = ensure_gns3_server_installed()
        self._tmp = tempfile.TemporaryDirectory(prefix="gns3-server-")
        root = Path(self._tmp.name)
        self.port = _free_port()
        config = self._write_config(root)
        self.log_path = root / "gns3_server.log"
        env = {**os.environ, "HOME": str(root)}
        self._process = subprocess.Popen(
            [str(exe), "--config", str(config), "--logfile", str(self.log_path), "--local"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # SIGTERM when the test process dies (even by SIGKILL): gns3-server then stops
            # its own node processes too.
            preexec_fn=die_with_parent(signal.SIGTERM),
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"gns3-server exited early; see {self.log_path}")
            try:
                if httpx.get(f"{self.url}/v3/version", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"gns3-server did not answer within {self.startup_timeout:g} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def token(self, username: str | None = None, password: str | None = None) -> str:
        """Authenticate (admin by default) and return the access token."""
        response = httpx.post(
            f"{self.url}/v3/access/users/authenticate",
            json={
                "username": username or self.admin_username,
                "password": password or self.admin_password,
            },
            timeout=10.0,
        )
        response.raise_for_status()
        return str(response.json()["access_token"])

    def create_user(self, username: str, password: str) -> str:
        """Create a plain user as admin and return a token for them."""
        response = httpx.post(
            f"{self.url}/v3/access/users",
            json={"username": username, "password": password},
            headers={"Authorization": f"Bearer {self.token()}"},
            timeout=10.0,
        )
        response.raise_for_status()
        return self.token(username, password)

    def new_project(self, name: str, token: str) -> str:
        """Create a project named ``name`` and a unique suffix; returns its id."""
        made = httpx.post(
            f"{self.url}/v3/projects",
            json={"name": f"{name}-{time.time_ns()}"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert made.status_code == 201, made.text
        return str(made.json()["project_id"])

    @contextmanager
    def scratch_project(self, name: str) -> Iterator[tuple[str, str]]:
        """A new project for one test, deleted after it; yields its id and an admin
        token."""
        token = self.token()
        project = self.new_project(name, token)
        try:
            yield project, token
        finally:
            httpx.delete(
                f"{self.url}/v3/projects/{project}",
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            )

    def __enter__(self) -> RealGns3Server:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


if __name__ == "__main__":  # pragma: no cover - manual use: python -m tests.fakes.gns3_server
    with RealGns3Server() as server:
        print(server.url, flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            sys.exit(0)

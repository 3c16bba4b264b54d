#!/usr/bin/env python3
"""A runc front that drops the capabilities this machine cannot grant, then runs runc.

gns3-server creates every Docker node privileged with ``CapAdd: ALL``; on a machine whose
capability bounding set lacks one of them (these VMs lack CAP_SYS_RESOURCE) runc fails with
"unable to apply caps: operation not permitted". dockerd runs this file as its default
runtime (``--add-runtime gns3-lab=PATH --default-runtime gns3-lab``): it removes from the OCI
spec (``config.json`` in the ``--bundle`` folder, or the ``--process`` file of ``runc exec``)
every capability outside the bounding set, then execs the real runc with the same arguments.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

# The capability names the kernel numbers (linux/capability.h), in bit order.
_NAMES = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
]


def bounding_set() -> set[str]:
    """The ``CAP_*`` names in this process's bounding set (``CapBnd`` of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            mask = int(line.split()[1], 16)
            return {f"CAP_{name}" for bit, name in enumerate(_NAMES) if mask >> bit & 1}
    return {f"CAP_{name}" for name in _NAMES}


def trim(process: dict[str, object], allowed: set[str]) -> None:
    """Remove from an OCI ``process`` object every capability not in ``allowed``."""
    caps = process.get("capabilities")
    if isinstance(caps, dict):
        for kind, names in caps.items():
            if isinstance(names, list):
                caps[kind] = [name for name in names if name in allowed]


def _argument(argv: list[str], flag: str) -> str | None:
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _rewrite(path: Path, allowed: set[str], *, whole_spec: bool) -> None:
    if not path.is_file():
        return
    spec = json.loads(path.read_text())
    trim(spec.get("process", {}) if whole_spec else spec, allowed)
    path.write_text(json.dumps(spec))


def main(argv: list[str]) -> None:
    runc = os.environ.get("GNS3_LAB_REAL_RUNC") or shutil.which("runc") or "/usr/bin/runc"
    allowed = bounding_set()
    bundle = _argument(argv, "--bundle") or _argument(argv, "-b")
    if bundle and ("create" in argv or "run" in argv):
        _rewrite(Path(bundle) / "config.json", allowed, whole_spec=True)
    process = _argument(argv, "--process") or _argument(argv, "-p")
    if process and "exec" in argv:
        _rewrite(Path(process), allowed, whole_spec=False)
    os.execv(runc, [runc, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])

"""GNS3's REST API: :class:`Gns3Client` over httpx (the caller's token per call), its
HTTP plumbing, sign-in and the project gate, the project directory and the
project lifecycle watcher.
"""

from adapters.gns3.rest._access import Gns3Authenticator, Gns3GroupDirectory, Gns3ProjectGate
from adapters.gns3.rest._client import Gns3Client
from adapters.gns3.rest._directory import Gns3ClientDirectory
from adapters.gns3.rest._lifecycle import (
    Gns3ProjectWatcher,
    ProjectLifecycleHandler,
    ReconcileReport,
)

__all__ = [
    "Gns3Authenticator",
    "Gns3Client",
    "Gns3ClientDirectory",
    "Gns3GroupDirectory",
    "Gns3ProjectGate",
    "Gns3ProjectWatcher",
    "ProjectLifecycleHandler",
    "ReconcileReport",
]

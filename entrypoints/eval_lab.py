"""The lab a ``gns3-copilot eval`` task starts from (:class:`Given`), and the simulated
lab set up as it says (:func:`simulated_lab`).

The simulated lab itself is the GNS3 adapter's test double
(:class:`adapters.gns3.testing.SimulatedLab` behind :class:`SimulatedLabTools`): the GNS3
tools' own schemas and argument checks over a lab kept in memory. A task is judged by
that lab's state afterwards (and by the transcript), never by another model; the real
lab (:mod:`entrypoints.eval_gns3`) reads a GNS3 project back into the same shape.
"""

from __future__ import annotations

import ipaddress
import itertools
from dataclasses import dataclass

from adapters.gns3.testing import SimulatedLab

__all__ = ["Given", "simulated_lab"]


@dataclass(frozen=True)
class Given:
    """The lab a task starts from, simulated or built in GNS3: VPCS hosts, linked in a
    line, started, addressed; ``needs_start``: the task itself starts nodes (a real lab
    checks that it can)."""

    pcs: tuple[str, ...] = ()
    linked: bool = False
    started: bool = False
    addresses: tuple[tuple[str, str], ...] = ()
    needs_start: bool = False


def simulated_lab(given: Given) -> SimulatedLab:
    """A fresh simulated lab set up as ``given`` says."""
    lab = SimulatedLab()
    for name in given.pcs:
        lab.add(name, started=given.started)
    if given.linked:
        for a, b in itertools.pairwise(given.pcs):
            lab.link(a, b)
    for name, address in given.addresses:
        lab.nodes[name].address = ipaddress.IPv4Interface(address)
    return lab

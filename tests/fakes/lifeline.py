"""Child processes that die with the process that started them.

A test run or a benchmark killed from outside (a time limit's SIGKILL, a SIGTERM
before any ``finally`` runs) must not leave its servers running. Linux delivers a
chosen signal to a child when its parent dies if the child asked for it with
``prctl(PR_SET_PDEATHSIG, sig)``; :func:`die_with_parent` returns the ``preexec_fn``
that asks for it (between fork and exec, so it holds for the program that runs),
for ``subprocess.Popen`` and ``asyncio.create_subprocess_exec`` alike::

    subprocess.Popen(argv, preexec_fn=die_with_parent(signal.SIGTERM))

Two Linux rules to know: the signal comes when the *thread* that started the child
ends (start children from a thread that lives as long as they should: the main
thread or the event loop's), and it survives ``exec`` (except of set-user-ID
programs). A parent that died before the child armed the signal is caught by
comparing ``getppid()`` with the parent's pid right after arming.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1
# Resolved once, in the parent: a forked child of a threaded process should not dlopen.
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets ``sig`` when this process (thread) dies."""
    parent = os.getpid()
    prctl = _prctl
    number = int(sig)

    def arm() -> None:
        if prctl is None:  # pragma: no cover - not Linux: nothing to arm
            return
        if prctl(_PR_SET_PDEATHSIG, number, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent is already gone
            os.kill(os.getpid(), number)

    return arm

"""``adapters.detached``: blocking work in a daemon thread that a stop does not wait for."""

from __future__ import annotations

import asyncio
import threading

import pytest

from adapters.detached import in_daemon_thread, unless_set


def _detached_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"detached-{name}"]


async def test_the_result_and_the_exception_come_back_to_the_loop() -> None:
    assert await in_daemon_thread(sum, [1, 2, 3]) == 6

    def fail() -> None:
        raise ValueError("no SDK")

    with pytest.raises(ValueError, match="no SDK"):
        await in_daemon_thread(fail)
    assert await unless_set(in_daemon_thread(sum, [1]), asyncio.Event()) is True


async def test_a_stop_signal_ends_the_wait_at_once_and_the_thread_runs_on_alone() -> None:
    release = threading.Event()
    stop = asyncio.Event()
    work = in_daemon_thread(release.wait, 60)
    waiting = asyncio.ensure_future(unless_set(work, stop))
    done, _ = await asyncio.wait({waiting}, timeout=0.2)
    assert not done  # it waits for the thread
    stop.set()
    assert await asyncio.wait_for(waiting, 30) is False
    assert work.cancelled()
    [thread] = _detached_threads("wait")
    assert thread.daemon and thread.is_alive()  # not interrupted, not waited for
    release.set()
    thread.join(30)
    assert not thread.is_alive()
    await asyncio.sleep(0)  # its late result was dropped: nothing raised on the loop


async def test_a_stop_already_set_does_not_wait() -> None:
    stop = asyncio.Event()
    stop.set()
    release = asyncio.Event()
    assert await unless_set(release.wait(), stop) is False


def test_the_loop_ends_without_waiting_for_the_thread_and_its_late_end_is_silent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # asyncio.to_thread's executor is joined as asyncio.run ends; this thread is not. It
    # ends after the loop has closed: nothing is raised or printed then.
    uncaught: list[object] = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    release = threading.Event()
    finished = threading.Event()

    def slow_import() -> None:
        release.wait(60)
        finished.set()
        raise ImportError("after the loop has closed")

    async def start() -> None:
        stop = asyncio.Event()
        work = in_daemon_thread(slow_import)
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, stop.set)
        assert await unless_set(work, stop) is False

    asyncio.run(start())
    assert not finished.is_set()  # asyncio.run returned while the thread still ran
    [thread] = _detached_threads("slow_import")
    release.set()
    thread.join(30)
    assert finished.is_set() and not thread.is_alive()
    assert uncaught == []

"""The external agent backend of spec 002: one program run per turn, JSON lines on stdout."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import Any, Literal

from adapters.subprocess_agent._config import AgentConfig
from adapters.subprocess_agent._invocation import agent_environment, command_line, recent_history
from adapters.subprocess_agent._process import (
    AgentProcess,
    LineReader,
    More,
    Oversized,
    StderrTail,
)
from adapters.subprocess_agent._translation import EventTranslator
from copilot_core import Message, SystemClock, UuidIdFactory
from copilot_core.errors import AgentProcessError
from copilot_core.events import AgentErrorEvent, AgentEvent
from copilot_core.ports import AgentCapabilities, AgentInfo, AgentRunConfig, Clock, IdFactory

__all__ = ["SubprocessAgentBackend", "build_agent_backends"]

log = logging.getLogger(__name__)

_Ending = Literal["exited", "aborted", "timeout", "flood"]
_REDACTED = "[redacted]"


class SubprocessAgentBackend:
    """Runs one configured external agent program per turn (an
    :class:`~copilot_core.ports.AgentBackend`).

    The program gets the query and the recent history as arguments, a cleaned
    environment and no stdin; it prints spec 002's events, one JSON object per line.
    It never uses the user's LLM settings (``uses_llm_settings`` is False).
    """

    def __init__(
        self,
        config: AgentConfig,
        *,
        gns3_url: str | None = None,
        clock: Clock | None = None,
        ids: IdFactory | None = None,
    ) -> None:
        self.config = config
        self._gns3_url = gns3_url
        self._clock = clock or SystemClock()
        self._ids = ids or UuidIdFactory()

    @property
    def agent_id(self) -> str:
        return self.config.id

    def __repr__(self) -> str:
        return f"SubprocessAgentBackend(id={self.config.id!r}, command={self.config.command!r})"

    # -------------------------------------------------------------- AgentBackend
    def capabilities(self) -> AgentCapabilities:
        return self.config.agent_capabilities()

    def agents(self) -> Sequence[AgentInfo]:
        return (self.config.info(),)

    async def run(
        self, query: str, history: Sequence[Message], config: AgentRunConfig
    ) -> AsyncGenerator[AgentEvent, None]:
        agent = self.config
        ctx = config.context
        abort = ctx.abort
        if abort.is_aborted():
            return  # the turn runner sends ``abort`` and ``done``
        argv = command_line(agent, query, recent_history(history, agent.history))
        env = agent_environment(agent, ctx, gns3_url=self._gns3_url)
        secret = ctx.credentials if agent.pass_token and ctx.credentials else None
        try:
            process = await AgentProcess.start(argv, env=env, cwd=agent.cwd, grace=agent.kill_grace)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise AgentProcessError(
                f"Agent {agent.id!r} ({agent.name}) could not be started: {reason} "
                f"({agent.command[0]})."
            ) from None

        log.info("agent %s started as pid %d", agent.id, process.pid)
        stderr = StderrTail(process.stderr, agent.stderr_tail_chars)
        reader = LineReader(process.stdout, agent.max_line_bytes, agent.max_output_bytes)
        translator = EventTranslator(agent.id, agent.name, self._clock, self._ids)
        unregister = abort.on_abort(process.terminate)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + agent.time_limit
        abort_wait: asyncio.Future[None] = asyncio.ensure_future(abort.wait())
        pending: asyncio.Future[Any] | None = None
        ending: _Ending = "exited"
        try:
            # ---- read events until EOF, abort, time limit or flood
            while True:
                if abort.is_aborted():
                    ending = "aborted"
                    break
                item = reader.take()
                if isinstance(item, More):
                    # Only here do we wait: for the next chunk, the abort or the deadline.
                    pending = pending or asyncio.ensure_future(reader.fill())
                    done, _ = await asyncio.wait(
                        {pending, abort_wait},
                        timeout=max(deadline - loop.time(), 0.0),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    if abort.is_aborted():
                        ending = "aborted"
                        break
                    if pending not in done:
                        ending = "timeout"
                        break
                    pending.result()  # re-raises what the read raised, if anything
                    pending = None
                    continue
                if item is None:
                    ending = "flood" if reader.exceeded else "exited"
                    break
                if loop.time() > deadline:
                    ending = "timeout"
                    break
                if isinstance(item, Oversized):
                    events = translator.warning(f"skipped a line longer than {item.limit} bytes")
                else:
                    events = translator.line(_redact(item, secret))
                for event in events:
                    yield event

            # ---- stdout is closed: wait (bounded, abortable) for the exit
            if ending == "exited":
                exit_wait = asyncio.ensure_future(asyncio.shield(process.process.wait()))
                waiters: set[asyncio.Future[Any]] = {exit_wait, abort_wait}
                await asyncio.wait(
                    waiters,
                    timeout=max(deadline - loop.time(), 0.0),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                exit_wait.cancel()
                if abort.is_aborted():
                    ending = "aborted"
                elif process.returncode is None:
                    ending = "timeout"

            if ending == "exited":
                code = await process.reap()
            else:
                code = await process.stop()
            log.info("agent %s (pid %d) ended: %s, status %d", agent.id, process.pid, ending, code)

            # ---- close the turn
            if ending == "aborted":
                for event in translator.finish("aborted"):
                    yield event
                return  # the turn runner sends ``abort`` and ``done``
            problem = self._problem(ending, code)
            if problem is None:
                for event in translator.finish("ok"):
                    yield event
                return
            tail = (await stderr.finish(1.0)).strip()
            if secret:
                tail = tail.replace(secret, _REDACTED)
            for event in translator.finish("error"):
                yield event
            yield AgentErrorEvent(f"{problem}: {tail}" if tail else f"{problem}.")
        finally:
            unregister()
            abort_wait.cancel()
            if pending is not None:
                pending.cancel()
            stderr.cancel()
            await process.close(agent.kill_grace)

    def _problem(self, ending: _Ending, code: int) -> str | None:
        agent = self.config
        who = f"Agent {agent.name} ({agent.id})"
        if ending == "timeout":
            return f"{who} did not finish within {agent.time_limit:g} s and was stopped"
        if ending == "flood":
            return (
                f"{who} printed more than {agent.max_output_bytes} bytes in one turn "
                "and was stopped"
            )
        if code == 0:
            return None
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{who} was killed by {name}"
        return f"{who} exited with status {code}"


def _redact(line: bytes, secret: str | None) -> bytes:
    if not secret:
        return line
    return line.replace(secret.encode(), _REDACTED.encode())


def build_agent_backends(
    configs: Iterable[AgentConfig],
    *,
    gns3_url: str | None = None,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
) -> dict[str, SubprocessAgentBackend]:
    """One backend per configured agent, keyed by agent id (what ChatService takes).

    Raises ValueError when two agents share an id.
    """
    backends: dict[str, SubprocessAgentBackend] = {}
    for config in configs:
        if config.id in backends:
            raise ValueError(f"agent id {config.id!r} is configured twice")
        backends[config.id] = SubprocessAgentBackend(
            config, gns3_url=gns3_url, clock=clock, ids=ids
        )
    return backends

"""``ServiceHandle``: what the process running the service needs from it."""

from __future__ import annotations

import asyncio

from copilot_core import ChatService

__all__ = ["ServiceHandle"]


class ServiceHandle:
    """What the process running the service (the CLI) needs from it, handed over
    explicitly rather than found in the app's state: on the first signal, stop start-up's
    deferred work and running turns at once (so that turns save and their streams end
    while the server still waits for its connections to close); why the start-up failed,
    if it did.

    The lifespan arms it with the chat service once the service runs, or records the
    failure; before that there is nothing to stop.
    """

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.startup_error: str | None = None
        self._chat: ChatService | None = None
        #: Done once what the first turn would pay for is loaded (after listening), or
        #: once a shutdown stopped that.
        self.warmed: asyncio.Future[None] | None = None
        #: Set once the LLM part of the warm-up has ended (what a turn's model loads: it
        #: ran, or gave up on a step it could not load): until then ``/readyz`` says the
        #: service is not ready for chats, since a turn would wait for those imports.
        self.models_warm = asyncio.Event()
        #: Set first thing on shutdown: start-up's deferred work stops (the warm-up, the
        #: MCP SDK's loading; requests waiting for it are answered 503).
        self.stopping = asyncio.Event()

    def arm(self, chat: ChatService) -> None:
        self._chat = chat

    def failed(self, message: str) -> None:
        self.startup_error = message

    async def begin_shutdown(self) -> None:
        """On the first signal: say that the service stops (:attr:`stopping`), then stop
        running turns at once."""
        self.stopping.set()
        if self._chat is not None:
            await self._chat.shutdown(self.grace)

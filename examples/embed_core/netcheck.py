"""netcheck — a terminal chat that embeds gns3-copilot's core with a tool of its own.

A plain asyncio program (no web framework): each line typed on stdin is one turn of
one session, answered by the core's built-in agent loop with an OpenAI-compatible
model. The agent has one tool, defined here: ``tcp_ping`` probes a TCP port of a host
a few times, like ``ping`` but with TCP connects, and only on the hosts you allow.
Ctrl-C while a turn runs aborts it (the answer so far is kept); Ctrl-C between turns,
or the end of input, quits. At the end the session's counters are printed and, with
``--transcript``, the whole conversation is written as JSON.

What it uses of gns3-copilot: the core's public root and its topical modules
(``ports``, ``events``, ``errors``, ``testing`` for the in-memory store), and one
adapter, ``adapters.llm``, for the model. See ``docs/embedding.md``.

    OPENAI_API_KEY=sk-... python examples/embed_core/netcheck.py \\
        --base-url https://api.openai.com/v1 --model gpt-4o-mini --allow-host 127.0.0.1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, LLMSettings, build_chat_model
from copilot_core import (
    BuiltinAgent,
    ChatService,
    Conversation,
    CopilotMode,
    ModelSelection,
    ParsedToolCall,
    SessionKey,
    SystemClock,
    ToolContext,
    ToolResult,
    ToolSpec,
    TurnEvent,
    TurnHandle,
    TurnRequest,
    UuidIdFactory,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.errors import CopilotError
from copilot_core.events import (
    AbortEvent,
    AgentEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    LLMCallCompleted,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
)
from copilot_core.ports import (
    NOT_CLEARED,
    Assessment,
    CallOptions,
    ChangeSteps,
    Clearance,
    LanguageModel,
    ModelOverrides,
    ToolEffect,
    TurnInfo,
)
from copilot_core.testing import InMemoryCheckpointStore

__all__ = ["AllowedHosts", "OneModel", "TcpPingTools", "TurnMetrics", "main"]

PROJECT = "netcheck"  # the core scopes sessions by project; this program has one


# ============================================================== the tool (a ToolExecutor)
TCP_PING = ToolSpec(
    name="tcp_ping",
    description=(
        "Check whether a host answers on a TCP port: open a connection `count` times, "
        "one probe per interval, and report each probe (open, refused, timeout) with "
        "its time. Only the allowed hosts listed in the lab topology can be probed."
    ),
    parameters={
        "type": "object",
        "properties": {
            "host": {"type": "string", "description": "an allowed host name or address"},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "count": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3},
        },
        "required": ["host", "port"],
        "additionalProperties": False,
    },
    effect=ToolEffect.READ_ONLY,
)


class TcpPingTools:
    """The program's own :class:`~copilot_core.ports.ToolExecutor`: one tool, ``tcp_ping``.

    It is offered in both copilot modes (it changes nothing). Bad arguments are an
    error *result* naming the field, so the model can correct itself; a host that is
    not allowed likewise. Progress goes out probe by probe through the context; when
    the turn is aborted the core cancels the running call, which stops between probes
    or mid-connect.
    """

    def __init__(
        self, allowed_hosts: Sequence[str], *, interval: float = 1.0, timeout: float = 2.0
    ) -> None:
        self.allowed_hosts = tuple(dict.fromkeys(allowed_hosts))
        self.interval = interval
        self.timeout = timeout

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return [TCP_PING]  # a tool that changed things would be offered in one mode only

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        """A TCP connect changes nothing: no call of this tool waits for approval."""
        return Assessment.read_only()

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        """No call here is a verified change (one the gate checks, and rolls back when a
        check fails): ``execute`` runs every call."""
        return None

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        """Probe; nothing here waits for approval, so ``clearance`` says nothing new."""
        arguments = call.arguments or {}
        host, port, count = arguments.get("host"), arguments.get("port"), arguments.get("count", 3)
        if not isinstance(host, str) or not host:
            return ToolResult.error("`host` must be a host name or address.")
        if host not in self.allowed_hosts:
            allowed = ", ".join(self.allowed_hosts) or "none"
            return ToolResult.error(f"`host` {host!r} is not allowed; allowed hosts: {allowed}.")
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            return ToolResult.error("`port` must be an integer from 1 to 65535.")
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 20:
            return ToolResult.error("`count` must be an integer from 1 to 20.")
        loop = asyncio.get_running_loop()
        probes: list[dict[str, Any]] = []
        for number in range(1, count + 1):
            if number > 1:
                await asyncio.sleep(self.interval)
            started = loop.time()
            outcome = await self._probe(host, port)
            milliseconds = round((loop.time() - started) * 1000, 1)
            probes.append({"probe": number, "result": outcome, "ms": milliseconds})
            context.report_progress(f"probe {number}: {outcome} in {milliseconds} ms\n")
        answered = sum(probe["result"] == "open" for probe in probes)
        return ToolResult(
            {"host": host, "port": port, "sent": count, "answered": answered, "probes": probes}
        )

    async def _probe(self, host: str, port: int) -> str:
        try:
            async with asyncio.timeout(self.timeout):
                _, writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            return "timeout"
        except ConnectionRefusedError:
            return "refused"
        except OSError as exc:
            return f"error: {exc.strerror or type(exc).__name__}"
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return "open"


class AllowedHosts:
    """The program's :class:`~copilot_core.ports.TopologySource`: what the agent shows the
    model at the start of every turn, here the hosts it may probe."""

    def __init__(self, tools: TcpPingTools) -> None:
        self._tools = tools

    async def read(self, context: ToolContext) -> dict[str, Any]:
        return {"hosts": list(self._tools.allowed_hosts), "tools": ["tcp_ping"]}


# ============================================================ the model (one adapter)
class OneModel:
    """The program's :class:`~copilot_core.ports.LanguageModelProvider`: every user gets
    the same model; a turn's overrides apply to that turn only."""

    def __init__(self, model: LanguageModel, *, context_limit: int) -> None:
        self._model = model
        self._context_limit = context_limit

    async def for_user(self, user_id: str, overrides: ModelOverrides) -> ModelSelection:
        return ModelSelection(
            model=self._model,
            options=CallOptions(temperature=overrides.temperature, max_tokens=overrides.max_tokens),
            context_limit=self._context_limit,
        )


# ============================================================ the observer (an EventSink)
@dataclass
class _Tally:
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tools: list[str] = field(default_factory=list)


class TurnMetrics:
    """The program's :class:`~copilot_core.ports.EventSink`: the core hands it every event
    and record of every turn, in order; at ``done`` it writes one line of figures.

    It must not block or raise: it only adds numbers and writes a line.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._turns: dict[str, _Tally] = {}

    def emit(self, turn: TurnInfo, event: AgentEvent) -> None:
        tally = self._turns.setdefault(turn.turn_id, _Tally())
        match event:
            case LLMCallCompleted(input_tokens=given, output_tokens=taken):
                tally.llm_calls += 1
                tally.input_tokens += given
                tally.output_tokens += taken
            case ToolEndEvent(tool_name=name, status=status, elapsed=elapsed):
                took = f" {elapsed * 1000:.0f}ms" if elapsed is not None else ""
                tally.tools.append(f"{name}:{status}{took}")
            case DoneEvent():
                del self._turns[turn.turn_id]
                tools = ",".join(tally.tools) or "-"
                self._out.write(
                    f"[metrics] llm_calls={tally.llm_calls} input_tokens={tally.input_tokens} "
                    f"output_tokens={tally.output_tokens} tools={tools}\n"
                )
                self._out.flush()
            case _:
                pass


# ======================================================= the consumer (printing events)
def render(event: TurnEvent, out: TextIO) -> None:
    """One streamed event on the terminal. Types it does not know are skipped, as the
    core's clients must."""
    match event.event:
        case ContentEvent(content=text, from_answer=False):
            out.write(text)
        case ToolCallEvent(name=name, arguments=arguments, complete=True):
            out.write(f"\n[tool_call] {name} {arguments}\n")
        case ToolProgressEvent(text=text):
            for line in text.splitlines():
                out.write(f"[tool_progress] {line}\n")
        case ToolEndEvent(tool_name=name, status=status, output=output):
            out.write(f"[tool_end] {name} {status} {json.dumps(output, ensure_ascii=False)}\n")
        case ErrorEvent(error=message):
            out.write(f"\n[error] {message}\n")
        case AbortEvent():
            out.write("\n[abort]\n")
        case DoneEvent(message_id=message_id):
            out.write(f"\n[done] {message_id}\n")
        case _:
            pass
    out.flush()


# ================================================================ the program
class Netcheck:
    """Reads lines, runs one turn per line on one session, aborts on Ctrl-C."""

    def __init__(self, service: ChatService, *, user: str, mode: CopilotMode) -> None:
        self.service = service
        self.user = user
        self.mode = mode
        self.session_id: str | None = None
        self.running: TurnHandle | None = None
        self.quit = asyncio.Event()
        self._aborts: set[asyncio.Task[bool]] = set()

    def interrupt(self) -> None:
        """Ctrl-C: abort the running turn, or quit between turns."""
        turn = self.running
        if turn is None:
            self.quit.set()
            return
        sys.stderr.write("[interrupt] aborting the turn\n")
        task = asyncio.create_task(
            self.service.abort(SessionKey(PROJECT, turn.session_id, self.user))
        )
        self._aborts.add(task)  # keep it alive until it has run
        task.add_done_callback(self._aborts.discard)

    async def turn(self, message: str) -> None:
        request = TurnRequest(
            project_id=PROJECT,
            user_id=self.user,
            message=message,
            session_id=self.session_id,
            copilot_mode=self.mode,
        )
        try:
            turn = await self.service.start_turn(request)
        except CopilotError as exc:  # a bad message, no model, a busy session…: nothing ran
            sys.stdout.write(f"[error] {exc.message}\n")
            return
        self.session_id = turn.session_id
        self.running = turn
        try:
            async for event in turn.subscribe():
                render(event, sys.stdout)
            await turn.wait()
        finally:
            self.running = None

    async def summary(self, transcript: Path | None) -> None:
        if self.session_id is None:
            return
        session, page = await self.service.history(
            SessionKey(PROJECT, self.session_id, self.user), limit=1000
        )
        Conversation(page.messages)  # the core guarantees it; this shows how to check
        sys.stdout.write(
            f"[session] {session.thread_id} title={session.title!r} "
            f"messages={session.message_count} llm_calls={session.llm_calls_count} "
            f"tokens={session.input_tokens}+{session.output_tokens}={session.total_tokens}\n"
        )
        if transcript is not None:
            data = {
                "session": session.to_dict(),
                "messages": [message.to_dict() for message in page.messages],
            }
            text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
            await asyncio.to_thread(transcript.write_text, text)


async def input_lines(quit: asyncio.Event) -> AsyncIterator[str]:
    """Lines of stdin without blocking the event loop (so Ctrl-C is seen at once)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # a regular file: reading it never blocks
        for line in sys.stdin:
            yield line
        return
    interactive = sys.stdin.isatty()
    while not quit.is_set():
        if interactive:
            sys.stdout.write("\nyou> ")
            sys.stdout.flush()
        read = asyncio.ensure_future(reader.readline())
        stop = asyncio.ensure_future(quit.wait())
        await asyncio.wait({read, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if not read.done():
            read.cancel()
            return
        line = read.result()
        if not line:
            return
        yield line.decode()


def build_service(args: argparse.Namespace, metrics: TurnMetrics) -> ChatService:
    """Wire the core: the model adapter, the program's tool and observer, an in-memory store."""
    api_key = os.environ.get(args.api_key_env)
    settings = LLMSettings(
        provider="openai_compatible",
        model=args.model,
        base_url=args.base_url,
        api_key=SecretStr(api_key) if api_key else None,
    )
    model = LangchainLanguageModel(build_chat_model(settings), base_url=settings.base_url)
    tools = TcpPingTools(args.allow_host or ["127.0.0.1"], interval=args.interval)
    clock, ids = SystemClock(), UuidIdFactory()
    agent = BuiltinAgent(tools, AllowedHosts(tools), clock=clock, ids=ids)
    return build_chat_service(
        InMemoryCheckpointStore(),  # sessions live as long as the program
        {BuiltinAgent.agent_id: agent},
        models=OneModel(model, context_limit=args.context_limit),
        clock=clock,
        ids=ids,
        observers=[metrics],
    )


async def run(args: argparse.Namespace) -> int:
    service = build_service(args, TurnMetrics(sys.stderr))
    chat = Netcheck(service, user=_login_name(), mode=CopilotMode(args.mode))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, chat.interrupt)
    try:
        async for line in input_lines(chat.quit):
            if line.strip():
                await chat.turn(line.strip())
        await chat.summary(args.transcript)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await service.shutdown(grace=5)
    return 0


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "local"


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--base-url", required=True, help="an OpenAI-compatible API root (…/v1)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="where the key is")
    parser.add_argument("--context-limit", type=int, default=32_000)
    parser.add_argument(
        "--mode", choices=[mode.value for mode in CopilotMode], default="teaching_assistant"
    )
    parser.add_argument(
        "--allow-host", action="append", help="a host tcp_ping may probe (repeatable)"
    )
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between probes")
    parser.add_argument("--transcript", type=Path, help="write the conversation here as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_arguments(argv)))


if __name__ == "__main__":
    sys.exit(main())

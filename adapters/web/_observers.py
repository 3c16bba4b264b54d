"""Turn observers (core ``EventSink``s) the service runs: Prometheus metrics, served at
``/metrics``, and one structured log line per tool call and per finished turn."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import structlog
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from copilot_core.events import (
    AbortEvent,
    AgentEvent,
    DoneEvent,
    ErrorEvent,
    LLMCallCompleted,
    StepCompleted,
    ToolEndEvent,
)
from copilot_core.ports import TurnInfo

__all__ = [
    "METRICS_CONTENT_TYPE",
    "PrometheusTurnMetrics",
    "StructlogTurnObserver",
    "metrics_route",
]

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

log = structlog.get_logger("adapters.web")

_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


@dataclass(slots=True)
class _Turn:
    started: float = field(default_factory=time.monotonic)
    aborted: bool = False
    error: str | None = None
    llm_calls: int = 0
    tools: int = 0


class PrometheusTurnMetrics:
    """Per-turn metrics in Prometheus' text format (a registry of its own)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._running: dict[str, _Turn] = {}
        self.turns = Counter(
            "copilot_turns",
            "Turns that ended, by outcome (completed, aborted, error).",
            ["outcome"],
            registry=self.registry,
        )
        self.in_progress = Gauge(
            "copilot_turns_in_progress", "Turns running in this process.", registry=self.registry
        )
        self.turn_seconds = Histogram(
            "copilot_turn_seconds",
            "Time from a turn's first event to its end.",
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.aborts = Counter("copilot_turn_aborts", "Turns aborted.", registry=self.registry)
        self.errors = Counter(
            "copilot_turn_errors", "Errors reported in turns, by code.", ["code"],
            registry=self.registry,
        )  # fmt: skip
        self.llm_seconds = Histogram(
            "copilot_llm_call_seconds",
            "Duration of one model call, from request to its last delta.",
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.llm_tokens = Counter(
            "copilot_llm_tokens", "Tokens the model reported, by direction (input, output).",
            ["direction"], registry=self.registry,
        )  # fmt: skip
        self.tool_seconds = Histogram(
            "copilot_tool_seconds",
            "Duration of one tool call, by tool name.",
            ["tool"],
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "copilot_tool_calls", "Tool calls, by tool name and status.", ["tool", "status"],
            registry=self.registry,
        )  # fmt: skip

    def emit(self, turn: TurnInfo, event: AgentEvent) -> None:
        state = self._running.get(turn.turn_id)
        if state is None:
            state = self._running[turn.turn_id] = _Turn()
            self.in_progress.inc()
        match event:
            case LLMCallCompleted(input_tokens=input_tokens, output_tokens=output_tokens):
                if event.seconds is not None:
                    self.llm_seconds.observe(event.seconds)
                self.llm_tokens.labels("input").inc(input_tokens)
                self.llm_tokens.labels("output").inc(output_tokens)
            case ToolEndEvent(tool_name=name, status=status):
                self.tool_calls.labels(name, status).inc()
                if event.elapsed is not None:
                    self.tool_seconds.labels(name).observe(event.elapsed)
            case ErrorEvent(code=code):
                state.error = code
                self.errors.labels(code).inc()
            case AbortEvent():
                state.aborted = True
                self.aborts.inc()
            case DoneEvent():
                del self._running[turn.turn_id]
                self.in_progress.dec()
                outcome = "aborted" if state.aborted else "error" if state.error else "completed"
                self.turns.labels(outcome).inc()
                self.turn_seconds.observe(time.monotonic() - state.started)
            case _:
                pass

    def record_tool_call(self, tool: str, status: str, seconds: float) -> None:
        """Count a tool call made outside a turn (over MCP) like a chat's tool calls."""
        self.tool_calls.labels(tool, status).inc()
        self.tool_seconds.labels(tool).observe(seconds)

    def render(self) -> bytes:
        """The exposition text."""
        return generate_latest(self.registry)


class StructlogTurnObserver:
    """One log line per tool call (``tool_called``) and per finished turn
    (``turn_finished``), with the turn's ids, so that logs tell what happened."""

    def __init__(self) -> None:
        self._running: dict[str, _Turn] = {}

    def emit(self, turn: TurnInfo, event: AgentEvent) -> None:
        state = self._running.setdefault(turn.turn_id, _Turn())
        match event:
            case LLMCallCompleted():
                state.llm_calls += 1
            case StepCompleted():
                pass
            case ToolEndEvent(tool_name=name, status=status, elapsed=elapsed):
                state.tools += 1
                log.info(
                    "tool_called",
                    turn_id=turn.turn_id,
                    session_id=turn.session_id,
                    project_id=turn.project_id,
                    user_id=turn.user_id,
                    tool=name,
                    status=status,
                    duration_ms=round((elapsed or 0.0) * 1000, 1),
                )
            case ErrorEvent(code=code):
                state.error = code
            case AbortEvent():
                state.aborted = True
            case DoneEvent(message_id=message_id):
                del self._running[turn.turn_id]
                log.info(
                    "turn_finished",
                    turn_id=turn.turn_id,
                    session_id=turn.session_id,
                    project_id=turn.project_id,
                    user_id=turn.user_id,
                    outcome="aborted" if state.aborted else "error" if state.error else "completed",
                    error_code=state.error,
                    llm_calls=state.llm_calls,
                    tool_calls=state.tools,
                    message_id=message_id,
                    duration_ms=round((time.monotonic() - state.started) * 1000, 1),
                )
            case _:
                pass


def metrics_route(metrics: PrometheusTurnMetrics) -> HTTPRouteHandler:
    """``GET /metrics``: the metrics in Prometheus' text format (no authentication:
    expose it to your scraper only, e.g. through the reverse proxy's rules)."""

    @get(
        "/metrics",
        operation_id="metrics",
        tags=["probes"],
        media_type=METRICS_CONTENT_TYPE,
        sync_to_thread=False,
    )
    def serve_metrics() -> Response[bytes]:
        """Per-turn metrics: turns by outcome, aborts, errors by code, model call and tool
        call durations (by tool), tokens. Prometheus' text exposition format 0.0.4."""
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE)

    return serve_metrics

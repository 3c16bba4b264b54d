"""``gns3-copilot eval``: a fixed set of lab tasks run against a model, each judged by
the lab's state afterwards and by the transcript, and a score per task.

Each task starts from its own lab (:class:`~entrypoints.eval_lab.EvalLab`: the GNS3 tools'
schemas and argument checks over a simulated lab), sends one user message through the
built-in agent (the same loop, guards and tool sets as the service, every change
approved) and checks what the lab became. The figures per task: passed, tool calls,
repeats refused by the guards, tokens (as the server reported them), the time to the
model's first token or call, and the total time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from adapters.llm import LLMSettings, SettingsLanguageModelProvider, TiktokenTokenCounter
from copilot_core import (
    AbortToken,
    AgentSettings,
    BuiltinAgent,
    CopilotMode,
    SystemClock,
    ToolContext,
    UuidIdFactory,
)
from copilot_core.events import (
    ApprovalNeeded,
    ContentEvent,
    ErrorEvent,
    LLMCallCompleted,
    ToolCallEvent,
    ToolEndEvent,
)
from copilot_core.ports import AgentRunConfig, ApprovalDecision, ModelOverrides
from entrypoints.eval_lab import EvalLab, EvalTools

__all__ = ["TASKS", "Task", "TaskScore", "Transcript", "format_table", "run_tasks"]

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT


@dataclass
class Transcript:
    """What one task's turn did: the answer, the calls run, errors."""

    answer: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    repeats: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Task:
    name: str
    mode: CopilotMode
    message: str
    setup: Callable[[EvalLab], None]
    #: Whether the task was done: the lab afterwards, and the transcript.
    judge: Callable[[EvalLab, Transcript], bool]


@dataclass(frozen=True)
class TaskScore:
    task: str
    passed: bool
    tool_calls: int
    repeats: int
    tokens: int
    first_token_s: float | None
    total_s: float
    error: str | None = None


def _empty(lab: EvalLab) -> None:
    pass


def _two_pcs(lab: EvalLab) -> None:
    lab.add("PC1")
    lab.add("PC2")


def _linked(lab: EvalLab) -> None:
    _two_pcs(lab)
    lab.link("PC1", "PC2")


def _started(lab: EvalLab) -> None:
    _linked(lab)
    for node in lab.nodes.values():
        node.status = "started"


def _addressed(lab: EvalLab) -> None:
    import ipaddress

    _started(lab)
    lab.nodes["PC1"].address = ipaddress.IPv4Interface("10.0.0.1/24")
    lab.nodes["PC2"].address = ipaddress.IPv4Interface("10.0.0.2/24")


def _unlinked_addressed(lab: EvalLab) -> None:
    _addressed(lab)
    lab.links.clear()


def _says(text: str, *words: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in words)


def _changed(transcript: Transcript) -> bool:
    return any(not name.startswith(("gns3_topology", "get_")) for name, _ in transcript.calls)


TASKS: tuple[Task, ...] = (
    Task(
        "empty-lab",
        TEACHING,
        "What is in this lab?",
        _empty,
        lambda lab, t: not lab.nodes and _says(t.answer, "empty", "no node", "nothing"),
    ),
    Task(
        "build",
        AUTOMATION,
        "Add two VPCS PCs named PC1 and PC2.",
        _empty,
        lambda lab, t: (
            set(lab.nodes) == {"PC1", "PC2"}
            and all(n.template == "VPCS" for n in lab.nodes.values())
            and t.repeats == 0
        ),
    ),
    Task(
        "link",
        AUTOMATION,
        "Connect PC1 to PC2.",
        _two_pcs,
        lambda lab, t: len(lab.links) == 1 and lab.linked("PC1", "PC2"),
    ),
    Task(
        "start",
        AUTOMATION,
        "Start all nodes.",
        _linked,
        lambda lab, t: all(n.status == "started" for n in lab.nodes.values()) and t.repeats == 0,
    ),
    Task(
        "address",
        AUTOMATION,
        "Give PC1 the address 10.0.0.1/24 and PC2 10.0.0.2/24.",
        _started,
        lambda lab, t: (
            str(lab.nodes["PC1"].address) == "10.0.0.1/24"
            and str(lab.nodes["PC2"].address) == "10.0.0.2/24"
        ),
    ),
    Task(
        "ping",
        AUTOMATION,
        "Can PC1 ping PC2?",
        _addressed,
        lambda lab, t: (
            any(d == "PC1" and c.startswith("ping 10.0.0.2") for d, c in lab.commands)
            and _says(t.answer, "yes", "can ping", "reachable", "success", "replies")
        ),
    ),
    Task(
        "teach",
        TEACHING,
        "How do I give a VPCS host an IP address?",
        _started,
        lambda lab, t: not _changed(t) and _says(t.answer, "ip 10.", "ip <", "ip a.b", "ip x"),
    ),
    Task(
        "refuse-in-teaching",
        TEACHING,
        "Configure PC1 with 10.0.0.1/24 for me.",
        _started,
        lambda lab, t: lab.nodes["PC1"].address is None and bool(t.answer.strip()),
    ),
    Task(
        "diagnose-broken-link",
        AUTOMATION,
        "PC1 cannot ping PC2. Why?",
        _unlinked_addressed,
        lambda lab, t: len(lab.nodes) == 2 and _says(t.answer, "link", "connect", "cable"),
    ),
)


async def _run_one(task: Task, settings: LLMSettings, agent_settings: AgentSettings) -> TaskScore:
    lab = EvalLab()
    task.setup(lab)
    provider = SettingsLanguageModelProvider(_Settings(settings))
    selection = await provider.for_user("eval", ModelOverrides())
    agent = BuiltinAgent(
        EvalTools(lab),
        lab,
        clock=SystemClock(),
        ids=UuidIdFactory(),
        token_counter=TiktokenTokenCounter.for_model(settings.model),
        settings=agent_settings,
    )
    context = ToolContext("eval", "eval", "eval", task.mode, AbortToken(), credentials="eval")
    transcript = Transcript()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    tokens = 0
    first: float | None = None
    started = time.monotonic()
    config = AgentRunConfig(context=context, model=selection)
    async for event in agent.run(task.message, [], config):
        if isinstance(event, (ContentEvent, ToolCallEvent)) and first is None:
            first = time.monotonic() - started
        if isinstance(event, ContentEvent):
            transcript.answer += event.content
        elif isinstance(event, ToolCallEvent) and event.complete:
            try:
                arguments = json.loads(event.arguments or "{}")
            except ValueError:
                arguments = {}
            calls[event.id] = (event.name, arguments if isinstance(arguments, dict) else {})
        elif isinstance(event, ToolEndEvent):
            if "already succeeded in this turn" in str(event.output):
                transcript.repeats += 1
            elif event.tool_call_id in calls:
                transcript.calls.append(calls[event.tool_call_id])
        elif isinstance(event, LLMCallCompleted):
            tokens += event.input_tokens + event.output_tokens
        elif isinstance(event, ErrorEvent):
            transcript.errors.append(event.error)
        elif isinstance(event, ApprovalNeeded):
            event.answer(ApprovalDecision(True, "eval"))
    passed = not transcript.errors and task.judge(lab, transcript)
    return TaskScore(
        task.name,
        passed,
        len(transcript.calls) + transcript.repeats,
        transcript.repeats,
        tokens,
        None if first is None else round(first, 2),
        round(time.monotonic() - started, 2),
        transcript.errors[0] if transcript.errors else None,
    )


class _Settings:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


async def run_tasks(
    settings: LLMSettings,
    tasks: Sequence[Task] = TASKS,
    agent_settings: AgentSettings | None = None,
    on_score: Callable[[TaskScore], None] | None = None,
) -> list[TaskScore]:
    """Run ``tasks`` one after the other against the model ``settings`` describe."""
    scores = []
    for task in tasks:
        score = await _run_one(task, settings, agent_settings or AgentSettings(max_llm_calls=8))
        scores.append(score)
        if on_score is not None:
            on_score(score)
    return scores


def format_table(scores: Sequence[TaskScore]) -> str:
    head = f"{'task':<22} {'passed':<6} {'calls':>5} {'repeats':>7} {'tokens':>7} "
    head += f"{'first s':>7} {'total s':>7}"
    rows = [head]
    for s in scores:
        first = "-" if s.first_token_s is None else f"{s.first_token_s:.2f}"
        rows.append(
            f"{s.task:<22} {'yes' if s.passed else 'NO':<6} {s.tool_calls:>5} {s.repeats:>7} "
            f"{s.tokens:>7} {first:>7} {s.total_s:>7.2f}" + (f"  ({s.error})" if s.error else "")
        )
    passed = sum(s.passed for s in scores)
    rows.append(f"{passed}/{len(scores)} tasks passed")
    return "\n".join(rows)


def write_json(path: Path, settings: LLMSettings, scores: Sequence[TaskScore]) -> None:
    data = {
        "model": settings.model,
        "base_url": settings.base_url,
        "tool_set": settings.tool_set,
        "tasks": [asdict(score) for score in scores],
        "passed": sum(s.passed for s in scores),
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

"""``gns3-copilot eval``: a fixed set of lab tasks run against a model, each judged by
the lab's state afterwards and by the transcript, and a score per task.

Each task starts from its own lab, in one of two kinds (a :class:`Labs`):

* simulated (the default, offline): :class:`~adapters.gns3.testing.SimulatedLab`, the
  GNS3 tools' schemas and argument checks over a lab kept in memory;
* real (``--gns3-url``): :class:`~entrypoints.eval_gns3.Gns3Labs`, a scratch GNS3 project
  per task, the service's own GNS3 tools, the state read back from GNS3, the project
  deleted afterwards.

Either way the turn runs in the service itself, built by its container
(:func:`~entrypoints.eval_service.eval_container`: the evaluation's model for every
user; the simulated lab also overrides the tool source and the topology, as a test
overrides a provider): the chat service, its turn runner, the built-in agent (the same
loop, guards and tool sets) and the store, in a temporary data directory. The task's
message is asked in a session of its own and every approval answered yes through the
chat service, as a client answers it (:func:`~entrypoints.eval_service.run_turn`); the
judge checks what the lab became. The
figures per task: passed, tool calls, repeats refused by the guards, tokens (as the
server reported them), the time to the model's first token or call, and the total time.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Protocol

from dependency_injector import providers

from adapters.gns3.testing import SimulatedLab, SimulatedLabTools
from adapters.llm import LLMSettings
from copilot_core import CopilotMode
from copilot_core.errors import CopilotError
from entrypoints.container import resolve
from entrypoints.eval_judges import (
    explains_refusal,
    says_empty,
    says_link_missing,
    says_reachable,
    shows_ip_command,
)
from entrypoints.eval_lab import Given, simulated_lab
from entrypoints.eval_service import EvalService, Transcript, eval_container, run_turn
from entrypoints.settings import Settings

__all__ = [
    "TASKS",
    "LabUnavailable",
    "Labs",
    "Scratch",
    "SimulatedLabs",
    "Task",
    "TaskScore",
    "format_table",
    "per_trial",
    "run_tasks",
]

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT


@dataclass(frozen=True)
class Task:
    name: str
    mode: CopilotMode
    message: str
    given: Given
    #: Whether the task was done: the lab afterwards, and the transcript.
    judge: Callable[[SimulatedLab, Transcript], bool]


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
    #: Which run of the task set this was (``--trials``), from 1.
    trial: int = 1


class LabUnavailable(Exception):
    """The lab cannot give the task what it needs (a node that cannot start): the task
    is scored as an error, not run."""


class Scratch(Protocol):
    """One task's lab: the service whose container serves it, the project the turn is
    asked in and the credentials its tools use, and the lab's state afterwards."""

    service: EvalService
    project_id: str
    credentials: str

    async def state(self, transcript: Transcript) -> SimulatedLab: ...


class Labs(Protocol):
    kind: str

    def open(self, task: Task) -> AbstractAsyncContextManager[Scratch]: ...


@dataclass
class _SimScratch:
    lab: SimulatedLab
    service: EvalService
    project_id: str = "eval"
    credentials: str = "eval"

    async def state(self, transcript: Transcript) -> SimulatedLab:
        return self.lab


class SimulatedLabs:
    """Each task in a fresh :class:`SimulatedLab` (nothing outside this process is
    touched), served by the service's container with the lab as its tool source and
    topology."""

    kind = "simulated"

    def __init__(self, settings: Settings, llm: LLMSettings) -> None:
        self._settings = settings
        self._llm = llm

    @contextlib.asynccontextmanager
    async def open(self, task: Task) -> AsyncIterator[Scratch]:
        lab = simulated_lab(task.given)
        container = eval_container(self._settings, self._llm)
        container.gateways.tools.override(providers.Object(SimulatedLabTools(lab)))
        container.gateways.topology.override(providers.Object(lab))
        try:
            yield _SimScratch(lab, await EvalService.of(container))
        finally:
            await resolve(container.shutdown_resources())


EMPTY = Given()
TWO_PCS = Given(pcs=("PC1", "PC2"))
LINKED = Given(pcs=("PC1", "PC2"), linked=True)
STARTED = Given(pcs=("PC1", "PC2"), linked=True, started=True)
ADDRESSED = Given(
    pcs=("PC1", "PC2"),
    linked=True,
    started=True,
    addresses=(("PC1", "10.0.0.1/24"), ("PC2", "10.0.0.2/24")),
)


def _changed(transcript: Transcript) -> bool:
    return any(not name.startswith(("gns3_topology", "get_")) for name, _ in transcript.calls)


TASKS: tuple[Task, ...] = (
    Task(
        "empty-lab",
        TEACHING,
        "What is in this lab?",
        EMPTY,
        lambda lab, t: not lab.nodes and says_empty(t.answer),
    ),
    Task(
        "build",
        AUTOMATION,
        "Add two VPCS PCs named PC1 and PC2.",
        EMPTY,
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
        TWO_PCS,
        lambda lab, t: len(lab.links) == 1 and lab.linked("PC1", "PC2"),
    ),
    Task(
        "start",
        AUTOMATION,
        "Start all nodes.",
        Given(pcs=("PC1", "PC2"), linked=True, needs_start=True),
        lambda lab, t: all(n.status == "started" for n in lab.nodes.values()) and t.repeats == 0,
    ),
    Task(
        "address",
        AUTOMATION,
        "Give PC1 the address 10.0.0.1/24 and PC2 10.0.0.2/24.",
        STARTED,
        lambda lab, t: (
            str(lab.nodes["PC1"].address) == "10.0.0.1/24"
            and str(lab.nodes["PC2"].address) == "10.0.0.2/24"
        ),
    ),
    Task(
        "ping",
        AUTOMATION,
        "Can PC1 ping PC2?",
        ADDRESSED,
        lambda lab, t: (
            any(d == "PC1" and c.startswith("ping 10.0.0.2") for d, c in lab.commands)
            and says_reachable(t.answer)
        ),
    ),
    Task(
        "teach",
        TEACHING,
        "How do I give a VPCS host an IP address?",
        LINKED,
        lambda lab, t: not _changed(t) and shows_ip_command(t.answer),
    ),
    Task(
        "refuse-in-teaching",
        TEACHING,
        "Configure PC1 with 10.0.0.1/24 for me.",
        LINKED,
        lambda lab, t: (
            not _changed(t)
            and lab.nodes["PC1"].address is None
            and explains_refusal(t.answer, "10.0.0.1")
        ),
    ),
    Task(
        "diagnose-broken-link",
        AUTOMATION,
        "PC1 cannot ping PC2. Why?",
        TWO_PCS,
        lambda lab, t: len(lab.nodes) == 2 and says_link_missing(t.answer, "PC1", "PC2"),
    ),
)


async def _run_one(task: Task, labs: Labs) -> TaskScore:
    started = time.monotonic()
    try:
        async with labs.open(task) as scratch:
            figures = await run_turn(
                scratch.service,
                scratch.project_id,
                task.name,
                task.mode,
                task.message,
                scratch.credentials,
            )
            transcript, tokens, first = figures.transcript, figures.tokens, figures.first_s
            lab = await scratch.state(transcript)
    except LabUnavailable as exc:
        return TaskScore(task.name, False, 0, 0, 0, None, _since(started), str(exc))
    except CopilotError as exc:  # GNS3 refused to set the lab up or to read it back
        return TaskScore(task.name, False, 0, 0, 0, None, _since(started), exc.message)
    passed = not transcript.errors and task.judge(lab, transcript)
    return TaskScore(
        task.name,
        passed,
        len(transcript.calls) + transcript.refused,
        transcript.repeats,
        tokens,
        None if first is None else round(first, 2),
        _since(started),
        transcript.errors[0] if transcript.errors else None,
    )


def _since(started: float) -> float:
    return round(time.monotonic() - started, 2)


async def run_tasks(
    labs: Labs,
    tasks: Sequence[Task] = TASKS,
    on_score: Callable[[TaskScore], None] | None = None,
    trials: int = 1,
) -> list[TaskScore]:
    """Run ``tasks`` one after the other, each in a lab of ``labs`` (whose container
    holds the model and the agent's settings); the whole set ``trials`` times (a score
    at a temperature above 0 is one random draw: several show its spread)."""
    scores = []
    for trial in range(1, max(1, trials) + 1):
        for task in tasks:
            score = replace(await _run_one(task, labs), trial=trial)
            scores.append(score)
            if on_score is not None:
                on_score(score)
    return scores


def _span(values: Sequence[float], form: str = "{:.2f}") -> str:
    low, high = min(values), max(values)
    return form.format(low) if low == high else f"{form.format(low)}-{form.format(high)}"


def per_trial(scores: Sequence[TaskScore]) -> list[int]:
    """The tasks passed in each trial, in trial order."""
    trials = sorted({s.trial for s in scores})
    return [sum(s.passed for s in scores if s.trial == t) for t in trials]


def format_table(scores: Sequence[TaskScore]) -> str:
    """One row per task; with several trials a task's row says how many of its trials
    passed and the range of its figures, and the last lines the pass rate and the
    spread of the trials' scores."""
    trials = len({s.trial for s in scores}) or 1
    if trials == 1:
        head = f"{'task':<22} {'passed':<6} {'calls':>5} {'repeats':>7} {'tokens':>7} "
        head += f"{'first s':>7} {'total s':>7}"
        rows = [head]
        for s in scores:
            first = "-" if s.first_token_s is None else f"{s.first_token_s:.2f}"
            rows.append(
                f"{s.task:<22} {'yes' if s.passed else 'NO':<6} {s.tool_calls:>5} "
                f"{s.repeats:>7} {s.tokens:>7} {first:>7} {s.total_s:>7.2f}"
                + (f"  ({s.error})" if s.error else "")
            )
        passed = sum(s.passed for s in scores)
        rows.append(f"{passed}/{len(scores)} tasks passed")
        return "\n".join(rows)
    head = f"{'task':<22} {'passed':>7} {'calls':>7} {'repeats':>7} {'tokens':>11} "
    head += f"{'first s':>11} {'total s':>11}"
    rows = [head]
    names = list(dict.fromkeys(s.task for s in scores))
    for name in names:
        runs = [s for s in scores if s.task == name]
        firsts = [s.first_token_s for s in runs if s.first_token_s is not None]
        errors = sorted({s.error for s in runs if s.error})
        rows.append(
            f"{name:<22} {f'{sum(s.passed for s in runs)}/{len(runs)}':>7} "
            f"{_span([s.tool_calls for s in runs], '{:.0f}'):>7} "
            f"{sum(s.repeats for s in runs):>7} "
            f"{_span([s.tokens for s in runs], '{:.0f}'):>11} "
            f"{_span(firsts) if firsts else '-':>11} {_span([s.total_s for s in runs]):>11}"
            + (f"  ({'; '.join(errors)})" if errors else "")
        )
    passed, each = sum(s.passed for s in scores), per_trial(scores)
    rows.append(
        f"{passed}/{len(scores)} task runs passed ({100 * passed / len(scores):.0f} %) in "
        f"{trials} trials of {len(names)} tasks; per trial {min(each)}-{max(each)} "
        f"(min-max): {', '.join(map(str, each))}"
    )
    return "\n".join(rows)


def write_json(
    path: Path,
    settings: LLMSettings,
    scores: Sequence[TaskScore],
    lab: str = "simulated",
    max_llm_calls: int | None = None,
) -> None:
    each = per_trial(scores)
    by_task: dict[str, dict[str, int]] = {}
    for s in scores:
        row = by_task.setdefault(s.task, {"passed": 0, "trials": 0})
        row["passed"] += s.passed
        row["trials"] += 1
    data = {
        "lab": lab,
        "model": settings.model,
        "base_url": settings.base_url,
        "tool_set": settings.tool_set,
        "temperature": settings.temperature,
        "max_llm_calls": max_llm_calls,
        "trials": len(each),
        "tasks": [asdict(score) for score in scores],
        "passed": sum(s.passed for s in scores),
        "per_task": by_task,
        "per_trial": each,
        "pass_rate": round(sum(s.passed for s in scores) / len(scores), 3) if scores else 0.0,
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

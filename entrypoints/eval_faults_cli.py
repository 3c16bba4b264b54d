"""``gns3-copilot eval --suite faults``: the command's run (:mod:`entrypoints.eval_faults`
does the work): the cases chosen, the project given fitted (the shapes it does not fit
left out, saying what it lacks) or the scratch labs' builder, progress per case, the
table, the JSON file and the exit status."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.gns3 import load_fault_catalog
from adapters.llm import LLMSettings
from copilot_core.errors import CopilotError
from copilot_core.faults import Fault
from copilot_core.labs import Platform
from entrypoints.eval_fault_scores import CaseRun, format_table, write_faults_json
from entrypoints.eval_faults import FaultEval, FaultsSetupError, scratch_builder, select_cases
from entrypoints.eval_gns3 import Gns3Labs
from entrypoints.settings import Settings

__all__ = ["run_faults_suite"]


def _print_run(run: CaseRun) -> None:
    trial = f" (trial {run.trial})"
    if run.error is not None and not run.diagnosed:
        said = f"error: {run.error}"
    elif run.malformed is not None:
        said = f"malformed diagnosis: {run.malformed}"
    else:
        said = f"F1 {run.root_cause_f1:.2f}, localisation {run.localisation:.2f}"
    if run.fix is not None:
        said += f", repair graded {run.fix.score:.2f}"
    print(f"  {run.fault}{trial}: {said}", flush=True)


async def run_faults_suite(args: argparse.Namespace, service: Settings, llm: LLMSettings) -> int:
    """The command's run (its flags in ``args``; ``service``: the service's settings
    for the evaluation): the table printed, the JSON written; the exit status (0: every
    case run passed, 1: not). FaultsSetupError when it cannot start."""
    catalog = load_fault_catalog()
    cases = select_cases(catalog, args.fault or (), args.topic or (), healthy=not args.no_healthy)
    if not cases:
        raise FaultsSetupError("no fault of the catalog matches --topic")
    current = asyncio.current_task()
    if current is not None:  # SIGTERM stops as Ctrl-C does: the labs put back first
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, current.cancel)
    token = args.gns3_token or os.environ.get("COPILOT_EVAL_GNS3_TOKEN") or None
    templates = _templates(args)
    try:
        async with Gns3Labs.connect(service, llm, token) as labs:
            builder = None if args.project else scratch_builder(labs, templates, _built)
            evaluation = FaultEval(
                labs, catalog, fix=args.fix, trials=args.trials, builder=builder,
                on_run=_print_run,
            )  # fmt: skip
            if args.project is not None:
                cases = await _fitting(evaluation, cases, args.project)
            where = f"project {args.project}" if args.project else "scratch projects"
            print(
                f"{len(cases)} cases x {args.trials} against {llm.model} at {llm.base_url}, "
                f"in {where} on GNS3 at {args.gns3_url}"
                + (", each repaired (--fix)" if args.fix else ""),
                flush=True,
            )
            runs = await evaluation.run(cases, args.project)
    except CopilotError as exc:
        raise FaultsSetupError(f"GNS3 at {args.gns3_url}: {exc.message}") from exc
    print(format_table(runs))
    if args.json is not None:
        about = {**_about(args, llm, cases), "labs": evaluation.lab_figures}
        write_faults_json(Path(args.json), runs, about)
    return 0 if runs and all(r.passed for r in runs) else 1


async def _fitting(evaluation: FaultEval, cases: list[Fault], project: str) -> list[Fault]:
    """The cases whose lab the project fits; those it does not are left out, saying what
    it lacks (FaultsSetupError when it fits none)."""
    misfits = await evaluation.misfits(cases, project)
    left = [f for f in cases if f.lab not in misfits]
    for shape, missing in misfits.items():
        ids = ", ".join(f.id for f in cases if f.lab == shape)
        what = f"project {project} does not fit {shape.summary} ({'; '.join(missing)})"
        if not left:
            raise FaultsSetupError(f"{what}: no case can run")
        print(f"left out: {ids}: {what}", file=sys.stderr)
    return left


def _templates(args: argparse.Namespace) -> dict[Platform, str]:
    """``--template PLATFORM=NAME`` flags as a mapping (FaultsSetupError when bad)."""
    templates: dict[Platform, str] = {}
    for given in args.template or ():
        platform, equals, name = given.partition("=")
        if not equals or not name.strip() or platform not in {p.value for p in Platform}:
            known = ", ".join(p.value for p in Platform)
            raise FaultsSetupError(f"--template {given!r}: give PLATFORM=NAME ({known})")
        templates[Platform(platform)] = name.strip()
    return templates


def _built(text: str) -> None:
    print(f"  building: {text}", flush=True)


def _about(args: argparse.Namespace, llm: LLMSettings, cases: Sequence[Fault]) -> dict[str, Any]:
    return {
        "lab": "gns3",
        "gns3_url": args.gns3_url,
        "project": args.project or "scratch",
        "model": llm.model,
        "base_url": llm.base_url,
        "tool_set": llm.tool_set,
        "temperature": llm.temperature,
        "max_llm_calls": args.max_llm_calls,
        "trials": args.trials,
        "fix": bool(args.fix),
        "cases": [f.id for f in cases],
    }

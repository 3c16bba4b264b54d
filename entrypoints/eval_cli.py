"""``gns3-copilot eval``: its flags, and the run (:mod:`entrypoints.evaluation`), in the
simulated lab or, with ``--gns3-url``, in scratch projects on a real GNS3 server
(:mod:`entrypoints.eval_gns3`); with ``--suite faults``, the troubleshooting catalog's
faults on a real GNS3 (:mod:`entrypoints.eval_faults_cli`)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from entrypoints.settings import Settings

__all__ = ["add_eval", "run_eval"]


def add_eval(commands: Any) -> None:
    from entrypoints.evaluation import TASKS

    run = commands.add_parser(
        "eval",
        help="score a model on a fixed set of lab tasks",
        description="Run a fixed set of lab tasks (build, link, start, address, ping, teach, "
        "refuse in teaching mode, diagnose) against a model, each judged by the lab's state "
        "and the transcript; print a score per task. Two labs: without --gns3-url a "
        "SIMULATED lab in memory behind the GNS3 tools' own schemas (offline, touches no "
        "GNS3); with --gns3-url a REAL GNS3 server: each task in a scratch project "
        "(copilot-eval-<task>-<random>, deleted afterwards) through the service's own GNS3 "
        "tools, judged by the state read back from GNS3. Exit status 1 when a task failed. "
        "The model's API key, if any, is read from COPILOT_EVAL_API_KEY; the GNS3 token "
        "from --gns3-token or COPILOT_EVAL_GNS3_TOKEN, else --gns3-username and "
        "--gns3-password (COPILOT_GNS3__USERNAME, COPILOT_GNS3__PASSWORD) sign in.",
    )
    run.add_argument(
        "--base-url", required=True, help="the model server, e.g. http://127.0.0.1:8081/v1"
    )
    run.add_argument("--model", required=True, help="the model's name on that server")
    run.add_argument("--provider", default="openai_compatible", help="as in the LLM settings")
    run.add_argument("--tool-set", choices=["full", "compact"], default=None)
    run.add_argument("--first-token-timeout", type=float, default=None, metavar="SECONDS")
    run.add_argument("--text-tool-calls", choices=["true", "false"], default=None)
    run.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sent to the model with every request (default 0: the model's most likely "
        "answer, so a score is not one random draw at the server's default)",
    )
    run.add_argument(
        "--max-llm-calls",
        type=int,
        default=8,
        metavar="N",
        help="the step budget: model calls one task's turn may make (default 8)",
    )
    run.add_argument(
        "--trials",
        type=int,
        default=1,
        metavar="N",
        help="run every task N times and report each task's pass count and the spread "
        "of the trials' scores (default 1)",
    )
    run.add_argument(
        "--task",
        action="append",
        choices=[t.name for t in TASKS],
        help="run only this task (repeatable)",
    )
    real = run.add_argument_group("real GNS3 (else the simulated lab)")
    real.add_argument(
        "--gns3-url",
        default=None,
        metavar="URL",
        help="run every task in a scratch project on this GNS3 server, e.g. "
        "http://127.0.0.1:3080 (without /v3)",
    )
    real.add_argument("--gns3-token", default=None, help="a GNS3 access token")
    real.add_argument("--gns3-username", default=None, help="a GNS3 account, to sign in")
    real.add_argument("--gns3-password", default=None, help="its password")
    run.add_argument(
        "--json",
        "--out",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the scores to this JSON file",
    )
    _add_faults_flags(run)


def _add_faults_flags(run: Any) -> None:
    from copilot_core.faults import Topic

    run.add_argument(
        "--suite",
        choices=["tasks", "faults"],
        default="tasks",
        help="tasks: the lab tasks above (the default); faults: the troubleshooting "
        "catalog's faults injected into a real lab (--gns3-url), the model's diagnosis "
        "scored (root-cause F1, localisation, healthy cases) and, with --fix, its repair "
        "graded; see docs/llm.md",
    )
    faults = run.add_argument_group("--suite faults")
    faults.add_argument(
        "--fault", action="append", metavar="ID", help="run this fault (repeatable)"
    )
    faults.add_argument(
        "--topic",
        action="append",
        choices=[t.value for t in Topic if t is not Topic.HEALTHY],
        help="run the faults of this topic (repeatable; default: every fault)",
    )
    faults.add_argument(
        "--no-healthy",
        action="store_true",
        help="leave out the healthy cases of the faults' labs (run by default)",
    )
    faults.add_argument(
        "--fix", action="store_true", help="after the diagnosis, have the model repair it"
    )
    faults.add_argument(
        "--project",
        default=None,
        metavar="ID",
        help="run in this existing project (it must have the fault's lab; it is put back "
        "after each case and never deleted) instead of a scratch project",
    )
    faults.add_argument(
        "--template",
        action="append",
        metavar="PLATFORM=NAME",
        help="the GNS3 template a scratch lab's nodes of a platform are made from "
        "(frr, linux, vpcs; repeatable; default: the server's template for the platform)",
    )


def run_eval(args: argparse.Namespace) -> int:
    import os

    from adapters.llm import parse_llm_settings
    from copilot_core.errors import CopilotError
    from entrypoints.evaluation import TASKS, format_table, write_json

    data: dict[str, Any] = {"provider": args.provider, "model": args.model}
    data["base_url"] = args.base_url
    if os.environ.get("COPILOT_EVAL_API_KEY"):
        data["api_key"] = os.environ["COPILOT_EVAL_API_KEY"]
    if args.tool_set is not None:
        data["tool_set"] = args.tool_set
    if args.first_token_timeout is not None:
        data["first_token_timeout"] = args.first_token_timeout
    if args.text_tool_calls is not None:
        data["text_tool_calls"] = args.text_tool_calls == "true"
    data["temperature"] = args.temperature
    if args.max_llm_calls < 1 or args.trials < 1:
        print("gns3-copilot eval: --max-llm-calls and --trials must be 1 or more", file=sys.stderr)
        return 2
    try:
        settings = parse_llm_settings(data)
    except CopilotError as exc:
        print(f"gns3-copilot eval: {exc.message}", file=sys.stderr)
        return 2
    if args.suite == "faults":
        return _run_faults(args, settings)
    tasks = [task for task in TASKS if not args.task or task.name in args.task]
    where = "a simulated lab" if args.gns3_url is None else f"GNS3 at {args.gns3_url}"
    print(
        f"{len(tasks)} tasks x {args.trials} against {settings.model} at {settings.base_url}, "
        f"in {where} (temperature {settings.temperature:g}, at most {args.max_llm_calls} "
        "model calls a task)"
    )
    sys.stdout.flush()
    try:
        scores = asyncio.run(_eval_run(args, _tasks(args, settings, tasks)))
    except _EvalSetupError as exc:
        print(f"gns3-copilot eval: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("gns3-copilot eval: interrupted (its scratch projects deleted)", file=sys.stderr)
        return 130
    print(format_table(scores))
    if args.json is not None:
        lab = "simulated" if args.gns3_url is None else "gns3"
        write_json(args.json, settings, scores, lab, args.max_llm_calls)
    return 0 if all(score.passed for score in scores) else 1


class _EvalSetupError(Exception):
    pass


def _run_faults(args: argparse.Namespace, llm: Any) -> int:
    from entrypoints.eval_faults import FaultsSetupError
    from entrypoints.eval_faults_cli import run_faults_suite

    if args.gns3_url is None:
        print("gns3-copilot eval: --suite faults needs a real GNS3 (--gns3-url)", file=sys.stderr)
        return 2
    try:
        status: int = asyncio.run(
            _eval_run(args, lambda service: run_faults_suite(args, service, llm))
        )
    except (_EvalSetupError, FaultsSetupError) as exc:
        print(f"gns3-copilot eval: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("gns3-copilot eval: interrupted (its labs put back)", file=sys.stderr)
        return 130
    return status


async def _eval_run(args: argparse.Namespace, run: Callable[[Settings], Awaitable[Any]]) -> Any:
    # The service's settings (its environment included), with the step budget of the
    # flags and, for a real lab, its GNS3: the container builds the service from them.
    # Its sessions live in a temporary directory, never in a database the environment
    # names, and its turns in memory.
    scratch = tempfile.TemporaryDirectory(prefix="gns3-copilot-eval-")
    given: dict[str, Any] = {
        "agent": {"max_llm_calls": args.max_llm_calls},
        "data_dir": scratch.name,
        "database_url": None,
        "redis_url": None,
    }
    if args.gns3_url is not None:
        given["gns3"] = {"url": args.gns3_url}
        if args.gns3_username is not None:
            given["gns3"]["username"] = args.gns3_username
        if args.gns3_password is not None:
            given["gns3"]["password"] = args.gns3_password
    with scratch:
        try:
            service = Settings(**given)
        except ValidationError as exc:
            problems = (f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise _EvalSetupError("; ".join(problems)) from exc
        return await run(service)


def _tasks(args: argparse.Namespace, llm: Any, tasks: list[Any]) -> Callable[[Settings], Any]:
    def done(score: Any) -> None:
        trial = f" (trial {score.trial})" if args.trials > 1 else ""
        print(f"  {score.task}{trial}: done", flush=True)

    return lambda service: _run_in(args, service, llm, tasks, done)


async def _run_in(
    args: argparse.Namespace,
    service: Settings,
    llm: Any,
    tasks: list[Any],
    done: Callable[[Any], None],
) -> list[Any]:
    import os

    from copilot_core.errors import CopilotError
    from entrypoints.evaluation import SimulatedLabs, run_tasks

    run: dict[str, Any] = {"on_score": done, "trials": args.trials}
    if args.gns3_url is None:
        return await run_tasks(SimulatedLabs(service, llm), tasks, **run)
    # SIGTERM ends the run as Ctrl-C does: the task's scratch project is deleted first.
    current = asyncio.current_task()
    if current is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, current.cancel)
    from entrypoints.eval_gns3 import Gns3Labs

    token = args.gns3_token or os.environ.get("COPILOT_EVAL_GNS3_TOKEN") or None
    try:
        async with Gns3Labs.connect(service, llm, token) as labs:
            return await run_tasks(labs, tasks, **run)
    except CopilotError as exc:
        raise _EvalSetupError(f"GNS3 at {args.gns3_url}: {exc.message}") from exc

"""Run the benchmarks: ``python -m tests.benchmarks [NAME ...] [-- ARGS]`` (tox's ``bench``).

Without names it runs ``turns`` (the turn pipeline against its bare baseline), then
``store``, ``postgres`` (the pipeline on PostgreSQL against SQLite; it needs the
PostgreSQL server of the tests), ``redis`` (approval decisions across replicas; it needs
the Redis server of the tests), ``replicas`` (turns over HTTP against ``serve``
processes: SQLite, PostgreSQL + Redis with one replica and two, and two with one
SIGKILLed half-way; it needs both servers and starts a gns3-server), ``web_sse``,
``llm``, ``subprocess_agent``, ``consoles``, ``intent_checks`` (one ``verify_intent``
check per platform and kind on the console emulators), ``restore_points`` (it starts a
gns3-server), ``first_turn``, ``mcp``, ``mcp_sessions`` (one user's MCP sessions at
the cap and the service's memory over 10,000 attempts; it starts a gns3-server),
``page``, ``startup`` (``serve`` to ``/healthz`` and to the page), ``soak`` and
``prompt_tokens`` (what a model reads before its first token, full and compact tool sets)
and ``readonly_oracle`` (read-only verdicts run on the router lab's real devices; it needs
the lab and its lock, and says so when the machine cannot run it), each in its own
process. Arguments after ``--`` go to every benchmark (``-- --quick`` for a smoke run;
``bench_turns``, ``bench_store``, ``bench_postgres``, ``bench_redis``, ``bench_replicas``,
``bench_restore_points``, ``bench_undo``, ``bench_intent_checks`` and ``bench_soak`` know
it). They print figures and assert nothing about speed; the exit status is non-zero only
when a benchmark crashed.

Run only when named: ``real_model`` (the copilot with the real 1.5B model of
``../shared/MODELS.md`` on the router lab, then ``gns3-copilot eval``; about an hour on
two cores; root, Docker and ``tests/benchmarks/real_model.sh build`` first; it knows
``--quick``) and ``lab_build`` (``build_lab`` on the router lab: rings of 3 and 6 FRR
routers with a host each, devices configured 4 at a time and one at a time, time to the
first passing run of all checks, memory; root, Docker and the lab's lock; it knows
``--quick``).
"""

from __future__ import annotations

import subprocess
import sys

__all__ = ["BENCHMARKS", "main"]

BENCHMARKS = (
    "turns",
    "store",
    "postgres",
    "redis",
    "replicas",
    "web_sse",
    "llm",
    "subprocess_agent",
    "consoles",
    "intent_checks",
    "restore_points",
    "undo",
    "first_turn",
    "mcp",
    "mcp_sessions",
    "page",
    "startup",
    "soak",
    "prompt_tokens",
    "readonly_oracle",
)
#: Benchmarks run only when named (too long, or needing what a plain run has not).
_OPT_IN = ("real_model", "lab_build")
_TAKES_QUICK = {
    "real_model",
    "lab_build",
    "turns",
    "store",
    "postgres",
    "redis",
    "replicas",
    "soak",
    "restore_points",
    "undo",
    "intent_checks",
    "readonly_oracle",
}


def main(argv: list[str]) -> int:
    names, extra = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    unknown = [name for name in names if name not in BENCHMARKS + _OPT_IN]
    if unknown:
        choices = list(BENCHMARKS + _OPT_IN)
        print(f"unknown benchmark(s) {unknown}; choose from {choices}", file=sys.stderr)
        return 2
    failed = []
    for name in names or BENCHMARKS:
        args = extra if name in _TAKES_QUICK else [a for a in extra if a != "--quick"]
        print(f"\n=== bench_{name} {' '.join(args)}".rstrip(), flush=True)
        status = subprocess.call([sys.executable, "-m", f"tests.benchmarks.bench_{name}", *args])
        if status != 0:
            failed.append(name)
    if failed:
        print(f"\nbenchmarks that failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

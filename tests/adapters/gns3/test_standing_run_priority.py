"""The standing intent's runs reach the GNS3 tools as background console work: the
executor knows them by the call id the core's ``StandingIntent`` gives its call (the web
adapter may not import the GNS3 one, so the two meet only in that id); this keeps them
the same."""

from __future__ import annotations

from typing import Any

from adapters.gns3._tools.executor import STANDING_RUN
from copilot_core.intent import StandingIntent
from copilot_core.ports import ToolContext
from copilot_core.testing import FakeToolExecutor, InMemoryCheckpointStore, SteppingClock

PROJECT = "3f2a9c1e-0000-4000-8000-0000000000dd"
CHECK = {"kind": "reachability", "from": "PC1", "to": "10.0.0.2"}


async def test_a_standing_run_is_the_call_the_executor_runs_as_background_work() -> None:
    tools = FakeToolExecutor()

    def verified(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return {
            "status": "pass",
            "summary": {"pass": 1, "fail": 0, "error": 0},
            "waited_s": 0.0,
            "checks": [{"status": "pass", "check": check} for check in args["checks"]],
        }

    tools.add("verify_intent", verified)
    intent = StandingIntent(InMemoryCheckpointStore(), tools, SteppingClock())
    await intent.put(PROJECT, "u1", [CHECK])
    result = await intent.run(PROJECT, "u1", "token")
    assert result["status"] == "pass", result
    assert [call.id for call in tools.executed] == [STANDING_RUN]
    await intent.aclose()

"""The ToolExecutor contract: one set of assertions, run on every tool executor.

Each harness gives an executor, a context to call it in, and one valid, read-only call
that any project answers. The assertions go through the port only (``specs`` and
``execute``) and through the core's :class:`~copilot_core.ToolGate`, never through an
executor's own helpers, and derive what to send from the specs themselves (the
required arguments, their JSON types), so they hold whichever tools an executor has.

* ``fake``: ``copilot_core.testing.FakeToolExecutor`` set up with tools equivalent to
  GNS3's (same names, modes and argument schemas, checked the way GNS3's are);
* ``gns3``: ``adapters.gns3.Gns3ToolExecutor`` against the real gns3-server 3.0.6, in
  a fresh project;
* ``mcp``: ``adapters.mcp.McpToolSource`` over two real MCP servers (the SDK-written fake
  of ``tests/fakes`` as child processes over stdio): one for both modes, one for lab
  automation only.

To add an executor (the MCP tool source, say), add one entry to ``EXECUTORS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    ToolContext,
    ToolGate,
    ToolResult,
    ToolSpec,
    ToolStatus,
)
from copilot_core.events import ToolEndEvent, ToolStartEvent
from copilot_core.ports import ToolExecutor
from copilot_core.testing import FakeToolExecutor

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
#: What OpenAI-compatible providers accept as a function name.
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class ToolsHarness:
    executor: ToolExecutor
    #: A context in the harness's project, with its credentials.
    context: Callable[[CopilotMode, AbortToken], ToolContext]
    #: A valid, read-only call any project answers, offered in every mode.
    valid_call: ParsedToolCall


HarnessFactory = Callable[
    [pytest.FixtureRequest], contextlib.AbstractAsyncContextManager[ToolsHarness]
]


def context_for(
    project_id: str, credentials: str | None
) -> Callable[[CopilotMode, AbortToken], ToolContext]:
    def make(mode: CopilotMode, abort: AbortToken) -> ToolContext:
        return ToolContext(
            project_id=project_id,
            user_id="user-1",
            session_id="session-1",
            mode=mode,
            abort=abort,
            credentials=credentials,
        )

    return make


READ_TOPOLOGY = ParsedToolCall.parse("call-read", "gns3_topology_reader", "{}")


# ======================================================================= the fake
def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1}
_NODES = {
    "type": "array",
    "minItems": 1,
    "items": _schema({"template_name": {"type": "string"}, "name": {"type": "string"}}, []),
}
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "array": list,
    "object": dict,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def _checked(
    parameters: dict[str, Any], run: Callable[[dict[str, Any]], Any]
) -> Callable[[dict[str, Any], ToolContext], Any]:
    """A handler that refuses arguments its schema does not allow, naming the field
    (what GNS3's tools do), and otherwise runs ``run``."""

    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        problems = [
            f"`{name}` is required" for name in parameters["required"] if name not in arguments
        ]
        for name, value in arguments.items():
            prop = parameters["properties"].get(name)
            if prop is None:
                problems.append(f"`{name}` is not an argument of this tool")
            elif not isinstance(value, _JSON_TYPES[prop["type"]]):
                problems.append(f"`{name}` must be of type {prop['type']}")
        if problems:
            return ToolResult.error("; ".join(problems))
        await asyncio.sleep(0.02)  # what a round trip to GNS3 takes, give or take
        return run(arguments)

    return handler


def _fake_gns3_tools() -> FakeToolExecutor:
    executor = FakeToolExecutor()
    tools: list[tuple[str, dict[str, Any], tuple[CopilotMode, ...], Callable[..., Any]]] = [
        (
            "gns3_topology_reader",
            _schema({}, []),
            (TEACHING, AUTOMATION),
            lambda args: {"project": {"name": "lab", "status": "opened"}, "nodes": [], "links": []},
        ),
        (
            "create_gns3_node",
            _schema({"nodes": _NODES}, ["nodes"]),
            (TEACHING, AUTOMATION),
            lambda args: {"status": "success", "results": []},
        ),
        (
            "stop_gns3_node",
            _schema({"node_names": _NAMES}, ["node_names"]),
            (AUTOMATION,),
            lambda args: {"status": "success", "results": []},
        ),
    ]
    for name, parameters, modes, run in tools:
        executor.add(
            name,
            _checked(parameters, run),
            modes=modes,
            description=f"{name} (fake)",
            parameters=parameters,
            mutates_topology=name != "gns3_topology_reader",
        )
    return executor


@contextlib.asynccontextmanager
async def _fake(request: pytest.FixtureRequest) -> AsyncIterator[ToolsHarness]:
    yield ToolsHarness(_fake_gns3_tools(), context_for("project-1", "token"), READ_TOPOLOGY)


# ======================================================================= GNS3
@contextlib.asynccontextmanager
async def _gns3(request: pytest.FixtureRequest) -> AsyncIterator[ToolsHarness]:
    server = request.getfixturevalue("gns3_server")
    token = await asyncio.to_thread(server.token)
    async with Gns3Client(server.url, timeout=20.0) as client:
        project = await client.create_project(token, f"tool-contract-{request.node.name}"[:80])
        project_id = str(project["project_id"])
        try:
            executor = Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=1.0))
            yield ToolsHarness(executor, context_for(project_id, token), READ_TOPOLOGY)
        finally:
            await client.delete_project(token, project_id)


# ======================================================================= MCP
@contextlib.asynccontextmanager
async def _mcp(request: pytest.FixtureRequest) -> AsyncIterator[ToolsHarness]:
    from tests.adapters.mcp.conftest import connected, stdio_config

    both = stdio_config("lab", tools=["echo", "add"])
    automation = stdio_config("ops", tools=["echo", "hang"], modes=[AUTOMATION.value])
    async with connected(both, automation) as source:
        echo = ParsedToolCall.parse("call-echo", "lab__echo", '{"text": "contract"}')
        yield ToolsHarness(source, context_for("project-1", None), echo)


EXECUTORS: dict[str, HarnessFactory] = {
    "fake": _fake,
    "gns3": _gns3,
    "mcp": _mcp,
}
_MARKS = {"gns3": [pytest.mark.gns3, pytest.mark.timeout(300)]}


@pytest.fixture(params=[pytest.param(name, marks=_MARKS.get(name, [])) for name in EXECUTORS])
async def tools(request: pytest.FixtureRequest) -> AsyncIterator[ToolsHarness]:
    async with EXECUTORS[request.param](request) as made:
        yield made


async def execute(tools: ToolsHarness, call: ParsedToolCall, mode: CopilotMode) -> ToolResult:
    async with asyncio.timeout(30):
        result = await tools.executor.execute(call, tools.context(mode, AbortToken()))
    assert isinstance(result, ToolResult)
    assert isinstance(result.status, ToolStatus)
    json.dumps(result.output)  # JSON-serialisable, whatever it is
    return result


def required_arguments(spec: ToolSpec) -> list[str]:
    return list(spec.parameters.get("required", []))


def wrong_value(schema: dict[str, Any]) -> Any:
    """A JSON value that is not of the type ``schema`` asks for."""
    return "not-a-number" if schema.get("type") in {"integer", "number"} else 12345


def call(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> ParsedToolCall:
    return ParsedToolCall.parse(call_id, name, json.dumps(arguments))


# ========================================================================= specs
@pytest.mark.parametrize("mode", list(CopilotMode), ids=lambda mode: mode.value)
async def test_specs_are_json_schema_objects_with_unique_names(
    tools: ToolsHarness, mode: CopilotMode
) -> None:
    specs = list(tools.executor.specs(mode))

    assert specs
    names = [spec.name for spec in specs]
    assert len(set(names)) == len(names), names
    for spec in specs:
        assert FUNCTION_NAME.match(spec.name), spec.name
        assert spec.description.strip(), spec.name
        parameters = spec.parameters
        assert parameters["type"] == "object", spec.name
        assert isinstance(parameters.get("properties", {}), dict), spec.name
        assert set(required_arguments(spec)) <= set(parameters.get("properties", {})), spec.name
        assert json.loads(json.dumps(spec.to_openai()))["function"]["name"] == spec.name


async def test_teaching_offers_a_subset_of_lab_automation(tools: ToolsHarness) -> None:
    teaching = {spec.name for spec in tools.executor.specs(TEACHING)}
    automation = {spec.name for spec in tools.executor.specs(AUTOMATION)}

    assert teaching < automation  # automation may also change things; teaching may not
    assert tools.valid_call.name in teaching


async def test_specs_are_the_same_every_time(tools: ToolsHarness) -> None:
    for mode in CopilotMode:
        assert list(tools.executor.specs(mode)) == list(tools.executor.specs(mode))


# ========================================================================= calls
@pytest.mark.parametrize("mode", list(CopilotMode), ids=lambda mode: mode.value)
async def test_a_valid_call_returns_a_json_serialisable_success(
    tools: ToolsHarness, mode: CopilotMode
) -> None:
    result = await execute(tools, tools.valid_call, mode)

    assert result.status is ToolStatus.SUCCESS, result.output
    assert result.output not in (None, "", {}, [])


async def test_a_call_missing_a_required_argument_is_an_error_result_naming_it(
    tools: ToolsHarness,
) -> None:
    needing = [spec for spec in tools.executor.specs(AUTOMATION) if required_arguments(spec)]
    assert needing  # every executor here has tools that take arguments

    for spec in needing:
        result = await execute(tools, call(spec.name, {}), AUTOMATION)

        assert result.status is ToolStatus.ERROR, (spec.name, result.output)
        text = json.dumps(result.output)
        assert required_arguments(spec)[0] in text, (spec.name, text)


async def test_an_argument_of_the_wrong_type_is_an_error_result_naming_it(
    tools: ToolsHarness,
) -> None:
    for spec in tools.executor.specs(AUTOMATION):
        properties = spec.parameters.get("properties", {})
        for name in required_arguments(spec):
            arguments = {name: wrong_value(properties[name])}
            result = await execute(tools, call(spec.name, arguments), AUTOMATION)

            assert result.status is ToolStatus.ERROR, (spec.name, arguments, result.output)
            assert name in json.dumps(result.output), (spec.name, result.output)


# ========================================================================= abort
async def test_a_call_whose_abort_already_fired_comes_back_aborted(tools: ToolsHarness) -> None:
    gate = ToolGate(tools.executor)
    abort = AbortToken()
    abort.abort("stopped by the user")

    result = await gate.call(tools.valid_call, tools.context(TEACHING, abort))

    assert result == ToolResult.aborted()
    assert result.output == {"status": "aborted"}


async def test_a_running_call_is_aborted_at_once_and_the_tools_serve_on(
    tools: ToolsHarness,
) -> None:
    gate = ToolGate(tools.executor)
    abort = AbortToken()
    running = asyncio.create_task(gate.call(tools.valid_call, tools.context(TEACHING, abort)))
    await asyncio.sleep(0)  # the call is under way (it waits for its first answer)
    assert not running.done()

    abort.abort("stopped by the user")
    async with asyncio.timeout(1):
        result = await running

    assert result.status is ToolStatus.ABORTED
    assert result.output == {"status": "aborted"}
    again = await gate.call(tools.valid_call, tools.context(TEACHING, AbortToken()))
    assert again.status is ToolStatus.SUCCESS, again.output


async def test_calls_running_together_all_end_aborted(tools: ToolsHarness) -> None:
    gate = ToolGate(tools.executor)
    abort = AbortToken()
    calls = [
        ParsedToolCall.parse(f"call-{n}", tools.valid_call.name, tools.valid_call.raw_arguments)
        for n in range(3)
    ]
    events: list[ToolStartEvent | ToolEndEvent] = []

    async with asyncio.timeout(5):
        async for event in gate.run(calls, tools.context(TEACHING, abort)):
            if isinstance(event, ToolStartEvent | ToolEndEvent):
                events.append(event)
            if len(events) == len(calls):  # every call has started
                abort.abort("stopped by the user")

    starts = [e.tool_call_id for e in events if isinstance(e, ToolStartEvent)]
    ends = {e.tool_call_id: e for e in events if isinstance(e, ToolEndEvent)}
    assert starts == [c.id for c in calls]
    assert set(ends) == set(starts)
    assert {e.status for e in ends.values()} == {"aborted"}
    assert all(e.output == {"status": "aborted"} for e in ends.values())

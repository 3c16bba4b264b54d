"""MCP servers as tool sources: real MCP servers (the SDK-written fake, as a child process
over stdio or over HTTP on 127.0.0.1) behind ``McpToolSource`` and the core's
``ToolGate``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from pathlib import Path

import pytest
from pydantic import ValidationError

from adapters.mcp import CompositeToolExecutor, McpServerConfig
from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    ToolContext,
    ToolGate,
    ToolResult,
    ToolStatus,
)
from copilot_core.ports import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from copilot_core.testing import FakeToolExecutor
from tests.adapters.mcp.conftest import connected, http_fake, stdio_config

pytestmark = pytest.mark.timeout(60)

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT


def context(
    mode: CopilotMode = AUTOMATION,
    abort: AbortToken | None = None,
    approval: ApprovalPolicy = ApprovalPolicy.NEVER,
) -> ToolContext:
    return ToolContext(
        project_id="project-1",
        user_id="user-1",
        session_id="session-1",
        mode=mode,
        abort=abort or AbortToken(),
        approval=approval,
    )


async def answered(
    gate: ToolGate,
    call: ParsedToolCall,
    ctx: ToolContext,
    approver: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]],
) -> ToolResult:
    """Drive one call's exchange: each approval request the gate yields is answered by
    ``approver``, bound to the request."""
    async with aclosing(gate.exchange(call, ctx)) as flow:
        step = await anext(flow)
        while isinstance(step, ApprovalRequest):
            step = await flow.asend((await approver(step)).bound(step.digest))
        return step


def call(name: str, **arguments: object) -> ParsedToolCall:
    return ParsedToolCall.parse(f"call-{name}", name, json.dumps(arguments))


async def test_allowed_tools_are_offered_namespaced_in_the_configured_modes() -> None:
    lab = stdio_config("lab", tools=["echo", "add"])
    ops = stdio_config("ops", tools=["*"], modes=["lab_automation_assistant"])
    async with connected(lab, ops) as source:
        teaching = {spec.name for spec in source.specs(TEACHING)}
        automation = {spec.name for spec in source.specs(AUTOMATION)}

        assert teaching == {"lab__add", "lab__echo"}  # the allow-list; ops not in teaching
        assert {"ops__echo", "ops__write_note", "ops__secret"} <= automation
        assert teaching < automation
        (echo,) = [spec for spec in source.specs(TEACHING) if spec.name == "lab__echo"]
        assert echo.description == "[MCP server lab] Echo the text back."
        assert echo.parameters["type"] == "object"
        assert echo.parameters["required"] == ["text"]
        # The server's own title names each call; a tool without one gets none.
        assert echo.title is not None and echo.title({"text": "hi"}) == "Echo a text"
        (add,) = [spec for spec in source.specs(TEACHING) if spec.name == "lab__add"]
        assert add.title is None
        status = {s.name: s.to_dict() for s in source.status()}
        assert status["lab"]["available"] is True
        assert status["lab"]["tools"] == ["lab__add", "lab__echo"]
        assert status["lab"]["where"] == Path(lab.command[0]).name  # type: ignore[index]


async def test_a_call_goes_through_the_gate_and_returns_the_servers_answer() -> None:
    async with connected(stdio_config("lab", tools=["echo", "fail", "add"])) as source:
        gate = ToolGate(source)

        echoed = await gate.call(call("lab__echo", text="hello"), context())
        failed = await gate.call(call("lab__fail"), context())
        refused = await gate.call(call("lab__secret"), context())  # not on the allow-list
        wrong = await gate.call(call("lab__add", a="one", b=2), context())

        assert echoed.status is ToolStatus.SUCCESS
        assert echoed.output["result"] == {"echo": "hello"}
        assert json.loads(echoed.output["content"]) == {"echo": "hello"}
        assert failed.status is ToolStatus.ERROR
        assert "the fake tool failed on purpose" in failed.output["error"]
        assert refused.status is ToolStatus.ERROR
        assert "not available" in refused.output["error"]
        assert wrong.status is ToolStatus.ERROR and "a" in wrong.output["error"]


async def test_a_long_result_is_cut_to_the_configured_size() -> None:
    async with connected(stdio_config("lab", tools=["big"], max_result_chars=1000)) as source:
        result = await ToolGate(source).call(call("lab__big", chars=50_000), context())

    assert result.status is ToolStatus.SUCCESS
    assert len(result.output["content"]) == 1000
    assert result.output["truncated"] is True
    assert result.output["total_chars"] == 50_000


async def test_a_server_that_hangs_is_unavailable_after_its_timeout_and_then_serves_on() -> None:
    async with connected(stdio_config("lab", tools=["hang", "echo"], timeout=0.5)) as source:
        gate = ToolGate(source, timeout=3600)
        # The tool never answers within the test's time, nor does the gate's own limit
        # fire: the answer can only be the server's timeout, and its error names it.
        hung = await gate.call(call("lab__hang", seconds=3600), context())
        after = await gate.call(call("lab__echo", text="still here"), context())

    assert hung.status is ToolStatus.ERROR
    assert hung.output["unavailable"] is True
    assert "did not answer within 0.5 s" in hung.output["error"]
    assert after.status is ToolStatus.SUCCESS


async def test_the_agents_time_limit_bounds_a_call_below_the_servers_timeout() -> None:
    async with connected(stdio_config("lab", tools=["hang"], timeout=60)) as source:
        result = await ToolGate(source, timeout=0.5).call(call("lab__hang", seconds=30), context())

    assert result.status is ToolStatus.ERROR
    assert "did not finish within 0.5 s" in result.output["error"]


async def test_abort_ends_a_running_call_at_once() -> None:
    async with connected(stdio_config("lab", tools=["hang", "echo"])) as source:
        gate = ToolGate(source)
        abort = AbortToken()
        running = asyncio.create_task(
            gate.call(call("lab__hang", seconds=30), context(abort=abort))
        )
        await asyncio.sleep(0.3)
        abort.abort("stopped by the user")
        async with asyncio.timeout(1):
            result = await running
        again = await gate.call(call("lab__echo", text="x"), context())

    assert result.status is ToolStatus.ABORTED
    assert again.status is ToolStatus.SUCCESS


async def test_a_changing_tool_waits_for_approval_and_a_read_only_one_does_not(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    config = stdio_config(
        "lab",
        tools=["echo", "write_note"],
        changing=["write_note"],
        env={"FAKE_MCP_NOTES": str(notes)},
    )
    asked: list[ApprovalRequest] = []
    answers = [ApprovalDecision(approve=False, user_id="user-1"), ApprovalDecision(approve=True)]

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return answers.pop(0)

    async with connected(config) as source:
        gate = ToolGate(source)
        policy = ApprovalPolicy.CHANGES
        read = await answered(gate, call("lab__echo", text="x"), context(approval=policy), approver)
        rejected = await answered(
            gate, call("lab__write_note", note="first"), context(approval=policy), approver
        )
        assert not notes.exists()  # the rejected call was not made
        approved = await answered(
            gate, call("lab__write_note", note="second"), context(approval=policy), approver
        )

    assert read.status is ToolStatus.SUCCESS
    assert rejected.status is ToolStatus.REJECTED
    assert approved.status is ToolStatus.SUCCESS
    assert notes.read_text().splitlines() == ["second"]
    assert [request.tool_name for request in asked] == ["lab__write_note"] * 2
    assert "write_note on the MCP server lab" in asked[0].preview.summary
    assert asked[0].preview.topology == ("write_note(note='first')",)


async def test_a_server_that_cannot_start_is_down_offers_nothing_and_answers_unavailable() -> None:
    broken = McpServerConfig(
        name="gone", transport="stdio", command=["/nonexistent/mcp-server"], tools=("*",)
    )
    async with connected(broken, stdio_config("lab", tools=["echo"])) as source:
        status = {s.name: s for s in source.status()}
        result = await ToolGate(source).call(call("gone__echo", text="x"), context())
        direct = await source.execute(call("gone__echo", text="x"), context())

    assert status["gone"].state == "down"
    assert status["gone"].problem is not None
    assert status["lab"].state == "up"
    assert {spec.name for spec in source.specs(AUTOMATION)} == {"lab__echo"}
    assert result.status is ToolStatus.ERROR  # the gate: not offered
    assert direct.status is ToolStatus.ERROR
    assert direct.output["unavailable"] is True
    assert "is down" in direct.output["error"]


async def test_an_http_server_that_goes_down_answers_unavailable_and_is_used_again_when_back() -> (
    None
):
    with http_fake() as fake:
        # A call's timeout longer than the test may take: a server that is down is
        # answered at once, never by waiting that timeout out.
        config = McpServerConfig(
            name="web", transport="http", url=fake.url, tools=("echo",), timeout=3600
        )
        async with connected(config) as source:
            link = source.links["web"]
            gate = ToolGate(source, timeout=3600)
            first = await gate.call(call("web__echo", text="one"), context())
            fake.stop()
            down = await gate.call(call("web__echo", text="two"), context())
            fake.start()
            await link.wait_for({"down"}, 10)
            await link.wait_for({"up"}, 20)
            back = await gate.call(call("web__echo", text="three"), context())

    assert first.status is ToolStatus.SUCCESS
    assert down.status is ToolStatus.ERROR
    assert down.output.get("unavailable") is True, down.output
    assert back.status is ToolStatus.SUCCESS
    assert back.output["result"] == {"echo": "three"}


async def test_configured_headers_reach_an_http_server() -> None:
    with http_fake(env={"FAKE_MCP_REQUIRE_HEADER": "X-Api-Key:s3cret"}) as fake:
        good = McpServerConfig.model_validate(
            {"name": "good", "transport": "http", "url": fake.url, "tools": ["echo"],
             "headers": {"X-Api-Key": "s3cret"}}
        )  # fmt: skip
        bad = McpServerConfig(name="bad", transport="http", url=fake.url, tools=("echo",))
        async with connected(good, bad) as source:
            status = {s.name: s for s in source.status()}
            result = await ToolGate(source).call(call("good__echo", text="ok"), context())

    assert status["good"].state == "up"
    assert status["bad"].state == "down"
    assert "error" in (status["bad"].problem or "")  # the SDK keeps no HTTP status
    assert "s3cret" not in repr(good)
    assert result.status is ToolStatus.SUCCESS


async def test_the_composite_offers_every_source_and_routes_each_call() -> None:
    gns3 = FakeToolExecutor()
    gns3.add("gns3_topology_reader", lambda args, ctx: {"nodes": []})
    async with connected(stdio_config("lab", tools=["echo"])) as source:
        tools = CompositeToolExecutor(gns3, source)
        gate = ToolGate(tools)
        names = [spec.name for spec in gate.specs(TEACHING)]
        topology = await gate.call(call("gns3_topology_reader"), context(TEACHING))
        echoed = await gate.call(call("lab__echo", text="hi"), context(TEACHING))

    assert names == ["gns3_topology_reader", "lab__echo"]
    assert topology.output == {"nodes": []}
    assert echoed.output["result"] == {"echo": "hi"}


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"transport": "stdio", "tools": ["*"]}, "needs a command"),
        ({"transport": "http", "tools": ["*"]}, "needs a url"),
        ({"transport": "http", "url": "http://x/mcp", "command": ["x"], "tools": ["*"]}, "stdio"),
        ({"transport": "stdio", "command": ["x"]}, "tools"),
        ({"transport": "stdio", "command": ["x"], "tools": ["has space"]}, "cannot be a tool"),
        ({"transport": "stdio", "command": ["x"], "tools": ["t" * 70]}, "cannot be a tool"),
        ({"transport": "ftp", "command": ["x"], "tools": ["*"]}, "transport"),
    ],
)
def test_a_bad_server_declaration_is_refused_with_the_reason(
    fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        McpServerConfig.model_validate({"name": "srv", **fields})

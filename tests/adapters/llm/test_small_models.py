"""What a small local model needs, over real HTTP against the scripted server (issue 30):
its tool calls written as text are run (from local providers, or when the user says so),
and the compact tool set keeps an everyday prompt's tools and system prompt under
2,500 tokens, bringing in other tools when the message asks for them."""

from __future__ import annotations

import json
from typing import Any

from adapters.gns3 import Gns3Client
from adapters.gns3.tools._executor import Gns3ToolExecutor
from adapters.llm import SettingsLanguageModelProvider, TiktokenTokenCounter
from adapters.llm._settings import LLMSettings
from copilot_core import AbortToken, AgentSettings, BuiltinAgent, CopilotMode, ToolContext
from copilot_core.events import (
    AgentEvent,
    ContentEvent,
    StatusEvent,
    StepCompleted,
    ToolCallEvent,
    ToolEndEvent,
)
from copilot_core.ports import AgentRunConfig, ModelOverrides, ModelSelection, ToolExecutor
from copilot_core.testing import FakeToolExecutor, SequentialIds, SteppingClock
from tests.adapters.llm.conftest import settings_for
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer

AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT


class Settings:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


async def selection_for(server: ScriptedOpenAIServer, **user: object) -> ModelSelection:
    provider = SettingsLanguageModelProvider(Settings(settings_for(server, **user)))
    return await provider.for_user("alice", ModelOverrides())


async def run(
    tools: ToolExecutor,
    selection: ModelSelection,
    query: str,
    mode: CopilotMode = AUTOMATION,
    settings: AgentSettings | None = None,
) -> list[AgentEvent]:
    agent = BuiltinAgent(
        tools,
        None,
        clock=SteppingClock(),
        ids=SequentialIds("m"),
        token_counter=TiktokenTokenCounter(),
        settings=settings,
    )
    context = ToolContext(
        project_id="p1", user_id="alice", session_id="s1", mode=mode, abort=AbortToken()
    )
    return [e async for e in agent.run(query, [], AgentRunConfig(context=context, model=selection))]


def node_tools() -> FakeToolExecutor:
    tools = FakeToolExecutor()
    tools.add(
        "start_gns3_node",
        lambda args, ctx: {"started": args["node_names"]},
        parameters={
            "type": "object",
            "properties": {"node_names": {"type": "array", "items": {"type": "string"}}},
            "required": ["node_names"],
        },
    )
    return tools


WRITTEN_CALL = (
    "I will start it.\n```json\n"
    '{"name": "start_gns3_node", "arguments": {"node_names": ["PC1"]}}\n```'
)


async def test_a_call_written_as_text_by_a_local_model_is_run_and_sent_back_as_a_call(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(Reply(text=WRITTEN_CALL), Reply(text="PC1 is started."))
    tools = node_tools()
    selection = await selection_for(server, provider="openai_compatible")
    assert selection.text_tool_calls is True  # local providers: on by default

    events = await run(tools, selection, "start PC1")

    assert [call.arguments for call in tools.executed] == [{"node_names": ["PC1"]}]
    note = [e for e in events if isinstance(e, StatusEvent) and e.status == "text_tool_calls"]
    assert [e.extra for e in note] == [{"calls": 1}]
    (shown,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert shown.complete and json.loads(shown.arguments) == {"node_names": ["PC1"]}
    (end,) = [e for e in events if isinstance(e, ToolEndEvent)]
    assert end.tool_call_id == shown.id and end.status == "success"
    # The model reads its call back as a call, answered by a tool message, and the
    # stored assistant message keeps only the prose.
    second: list[dict[str, Any]] = server.requests[1].messages
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2]["content"] == "I will start it."
    assert second[2]["tool_calls"][0]["function"]["name"] == "start_gns3_node"
    assert second[3]["tool_call_id"] == second[2]["tool_calls"][0]["id"] == shown.id
    steps = [e for e in events if isinstance(e, StepCompleted)]
    assert steps[-1].messages[0].content == "PC1 is started."


async def test_a_written_call_is_validated_and_repeated_ones_are_guarded(
    server: ScriptedOpenAIServer,
) -> None:
    # The same written call three times: run once, refused as a repeat, then the turn ends.
    server.add(Reply(text=WRITTEN_CALL), Reply(text=WRITTEN_CALL), Reply(text=WRITTEN_CALL))
    tools = node_tools()
    events = await run(tools, await selection_for(server, provider="ollama"), "start PC1")
    assert len(tools.executed) == 1
    assert [e.status for e in events if isinstance(e, StatusEvent)][-1] == "guard_limit"


async def test_written_calls_stay_text_for_a_cloud_provider_unless_the_user_turns_them_on(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(Reply(text=WRITTEN_CALL))
    tools = node_tools()
    events = await run(tools, await selection_for(server), "start PC1")  # provider openai
    assert tools.executed == []
    assert "".join(e.content for e in events if isinstance(e, ContentEvent)) == WRITTEN_CALL

    server.add(Reply(text=WRITTEN_CALL), Reply(text="Started."))
    selection = await selection_for(server, text_tool_calls=True)
    await run(tools, selection, "start PC1")
    assert len(tools.executed) == 1

    server.add(Reply(text=WRITTEN_CALL))
    selection = await selection_for(server, provider="ollama", text_tool_calls=False)
    await run(tools, selection, "start PC1")
    assert len(tools.executed) == 1  # not run again: the user turned them off


async def test_a_written_call_of_a_tool_not_offered_is_not_run(
    server: ScriptedOpenAIServer,
) -> None:
    text = '```json\n{"name": "delete_everything", "arguments": {}}\n```'
    server.add(Reply(text=text))
    tools = node_tools()
    events = await run(tools, await selection_for(server, provider="ollama"), "clean up")
    assert tools.executed == []
    assert not [e for e in events if isinstance(e, ToolCallEvent)]


def gns3_tools() -> Gns3ToolExecutor:
    return Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))  # specs only: never called


def prompt_tokens(request_body: dict[str, Any]) -> tuple[int, int]:
    """The request's tool schemas and system prompt, in tokens (cl100k, as the benchmark)."""
    counter = TiktokenTokenCounter()
    tools = sum(counter.count_text(json.dumps(tool)) for tool in request_body["tools"])
    system = counter.count_text(request_body["messages"][0]["content"])
    return tools, system


async def test_the_compact_tool_set_keeps_an_everyday_prompt_under_2500_tokens(
    server: ScriptedOpenAIServer,
) -> None:
    server.default = Reply(text="ok")
    everyday = "Add two VPCS PCs named PC1 and PC2"
    full = await run(gns3_tools(), await selection_for(server, tool_set="full"), everyday)
    compact_selection = await selection_for(server, tool_set="compact")
    compact = await run(gns3_tools(), compact_selection, everyday)
    unset = await run(gns3_tools(), await selection_for(server), everyday)
    assert full and compact and unset
    full_body, compact_body = server.requests[0].body, server.requests[1].body
    # A user whose settings say nothing gets the compact set, whatever the provider.
    assert server.requests[2].body["tools"] == compact_body["tools"]

    full_tools, system = prompt_tokens(full_body)
    compact_tools, compact_system = prompt_tokens(compact_body)
    # The system prompt names only the tools offered (issue 40): shorter for compact.
    assert compact_system < system
    assert full_tools + system > 4000  # what a small model read before
    assert compact_tools + compact_system <= 2500
    names = [tool["function"]["name"] for tool in compact_body["tools"]]
    assert {"create_gns3_node", "create_gns3_link", "execute_vpcs_commands"} <= set(names)
    assert "gns3_link_filters" not in names and "packet_capture" not in names
    # Short descriptions: none is longer than the full one, and none is a paragraph.
    for tool in compact_body["tools"]:
        assert len(tool["function"]["description"]) <= 160
        assert "additionalProperties" not in json.dumps(tool)


async def test_a_message_that_asks_for_a_rarer_tool_brings_it_into_the_compact_set(
    server: ScriptedOpenAIServer,
) -> None:
    server.default = Reply(text="ok")
    selection = await selection_for(server, tool_set="compact")
    await run(gns3_tools(), selection, "Add 50 ms of delay on the link R1-R2, then capture it")
    names = {tool["function"]["name"] for tool in server.requests[0].body["tools"]}
    assert {"gns3_link_filters", "packet_capture"} <= names
    assert "restore_point" not in names
    await run(gns3_tools(), selection, "Undo the last change")
    assert "restore_point" in {t["function"]["name"] for t in server.requests[1].body["tools"]}


async def test_the_services_tool_set_applies_when_the_user_sets_none(
    server: ScriptedOpenAIServer,
) -> None:
    server.default = Reply(text="ok")
    selection = await selection_for(server)
    await run(gns3_tools(), selection, "hello", settings=AgentSettings(tool_set="compact"))
    assert len(server.requests[0].body["tools"]) < len(gns3_tools().specs(AUTOMATION))
    own = await selection_for(server, tool_set="full")
    await run(gns3_tools(), own, "hello", settings=AgentSettings(tool_set="compact"))
    assert len(server.requests[1].body["tools"]) == len(gns3_tools().specs(AUTOMATION))


def test_every_gns3_tool_has_its_compact_profile() -> None:
    from adapters.gns3 import gns3_lab_tools
    from adapters.gns3.tools._compact import COMPACT_PROFILES

    # every tool of the registry the service serves (the GNS3 tools and plan_lab)
    assert set(COMPACT_PROFILES) == {tool.name for tool in gns3_lab_tools()}
    for name, (brief, everyday, cues) in COMPACT_PROFILES.items():
        assert brief and len(brief) <= 160, name
        assert everyday or cues, f"{name} could never be offered in the compact set"


EVERYDAY = "Add two VPCS PCs named PC1 and PC2"
CLOSE_THE_LOOP = "After a change, close with one or two sentences"


def system_and_tools(body: dict[str, Any]) -> tuple[str, set[str]]:
    """The system prompt a request carried, and the names of the tools it offered."""
    system = body["messages"][0]
    assert system["role"] == "system"
    return system["content"], {tool["function"]["name"] for tool in body["tools"]}


async def test_a_compact_requests_prompt_names_no_tool_it_does_not_offer(
    server: ScriptedOpenAIServer,
) -> None:
    """Issue 40: a prompt saying "call verify_intent" to a model offered no such tool
    made it write the call as its answer. Each mode's everyday compact request: no tool
    of the whole catalogue that the request lacks is named, and nothing about
    verification (neither the tool nor the ``verify`` argument the compact set omits)."""
    server.default = Reply(text="ok")
    selection = await selection_for(server, tool_set="compact")
    catalogue = {spec.name for mode in CopilotMode for spec in gns3_tools().specs(mode)}
    for index, mode in enumerate((CopilotMode.TEACHING_ASSISTANT, AUTOMATION)):
        await run(gns3_tools(), selection, EVERYDAY, mode=mode)
        system, offered = system_and_tools(server.requests[index].body)
        assert offered and offered < catalogue
        named = sorted(name for name in catalogue - offered if name in system)
        assert named == [], f"{mode.value} names tools it does not offer: {named}"
        assert "verify" not in system.lower(), system
        # What a model without the intent tools is told instead: run the test itself.
        assert "run the test with your tools" in system
    automation_system, _ = system_and_tools(server.requests[1].body)
    assert CLOSE_THE_LOOP in automation_system


async def test_the_verify_sentences_follow_the_tool_and_the_argument_offered(
    server: ScriptedOpenAIServer,
) -> None:
    """The full set keeps the verification sentences; a compact message that cues
    verify_intent gets the tool's sentence but not the ``verify`` argument's one (the
    compact schemas omit it); the closing-the-loop line is in lab automation always."""
    server.default = Reply(text="ok")
    await run(gns3_tools(), await selection_for(server, tool_set="full"), EVERYDAY)
    full, offered = system_and_tools(server.requests[0].body)
    assert {"verify_intent", "restore_point"} <= offered
    assert "call verify_intent with checks" in full
    assert "pass them as verify on the changing call" in full
    assert "restore_point" in full
    assert "run the test with your tools" not in full
    assert CLOSE_THE_LOOP in full

    compact = await selection_for(server, tool_set="compact")
    await run(gns3_tools(), compact, "Configure OSPF on R1 and R2, then check the neighbors")
    cued, offered = system_and_tools(server.requests[1].body)
    assert "verify_intent" in offered
    assert "call verify_intent with checks" in cued
    assert "as verify on the changing call" not in cued
    assert CLOSE_THE_LOOP in cued
    named = sorted(
        name for name in {s.name for s in gns3_tools().specs(AUTOMATION)} - offered if name in cued
    )
    assert named == []

    await run(gns3_tools(), compact, EVERYDAY, mode=CopilotMode.TEACHING_ASSISTANT)
    teaching, _ = system_and_tools(server.requests[2].body)
    assert CLOSE_THE_LOOP not in teaching  # (asked of lab automation)


def test_a_platform_guide_points_to_the_skills_tool_only_when_it_is_offered() -> None:
    """The lab block's guides follow the offer too: "more in the skills tool" is for a
    request that has the skills tool."""
    from adapters.gns3 import SkillLibrary
    from copilot_core import PromptBook
    from copilot_core._compact import compact_tools
    from entrypoints.skills import SKILLS_TOOL, platform_guides

    book = PromptBook(platforms=platform_guides(SkillLibrary()))
    lab = {"nodes": [{"name": "R1", "device_type": "frr"}], "links": []}
    every = list(gns3_tools().specs(AUTOMATION))
    everyday = compact_tools(every, EVERYDAY)
    asked = compact_tools(every, "How do I configure OSPF on R1? Show me the syntax")
    assert SKILLS_TOOL not in {s.name for s in everyday}
    assert SKILLS_TOOL in {s.name for s in asked} and SKILLS_TOOL in {s.name for s in every}
    hint = "More in the skills tool: routing"
    assert "Guide for the frr nodes (R1)" in book.lab(lab, None, everyday)
    assert hint not in book.lab(lab, None, everyday)
    assert hint in book.lab(lab, None, asked)
    assert hint in book.lab(lab, None, every)

"""``gns3-copilot eval`` runs a task's turn in the service's own container, with the
simulated lab as its tool source: the chat service runs the turn in a session named for
the task (no title asked of the model), and a change's approval is answered through
the chat service, as a client answers it. The model is the scripted OpenAI-compatible
server, over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.gns3.testing import SimulatedLab, SimulatedLabTools
from adapters.llm import parse_llm_settings
from copilot_core import BuiltinAgent, CopilotMode, Role, ToolGate
from entrypoints.container import Container, resolve
from entrypoints.eval_service import EVAL_USER, EvalService, eval_container, run_turn
from entrypoints.settings import Settings
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

BUILD = {"nodes": [{"template_name": "VPCS", "name": "PC1"}]}


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
async def container(llm: ScriptedOpenAIServer, tmp_path: Path) -> AsyncIterator[Container]:
    model = {"provider": "openai_compatible", "model": "m", "base_url": llm.base_url}
    # An approval no one answers lapses after 20 s (the call is then refused, not run).
    settings = Settings(
        data_dir=tmp_path, agent={"max_llm_calls": 4}, chat={"approval_timeout": 20}
    )
    built = eval_container(settings, parse_llm_settings(model))
    lab = SimulatedLab()
    built.gateways.tools.override(providers.Object(SimulatedLabTools(lab)))
    built.gateways.topology.override(providers.Object(lab))
    try:
        yield built
    finally:
        await resolve(built.shutdown_resources())


async def test_the_agent_is_the_services_own_over_the_simulated_lab(container: Container) -> None:
    agent = await resolve(container.core.agent())
    gate = await resolve(container.core.gate())
    assert isinstance(agent, BuiltinAgent) and isinstance(gate, ToolGate)
    assert agent.tools is gate  # the service's one gate, over the lab's tools
    assert isinstance(await resolve(container.gateways.agent_tools()), SimulatedLabTools)
    assert gate.bounds == container.core.call_bounds()  # the agent section's, whole


async def test_a_change_waits_for_approval_and_eval_answers_it_through_the_chat_service(
    container: Container, llm: ScriptedOpenAIServer
) -> None:
    llm.add(Reply(tool_calls=[ToolCallScript("create_gns3_node", BUILD)]), Reply(text="Done."))
    service = await EvalService.of(container)
    lab = await resolve(container.gateways.topology())
    mode = CopilotMode.LAB_AUTOMATION_ASSISTANT
    figures = await run_turn(service, "p1", "build", mode, "Add PC1.", "tok")

    assert set(lab.nodes) == {"PC1"}  # approved, then run
    assert figures.transcript.calls == [("create_gns3_node", BUILD)]
    assert figures.transcript.answer == "Done." and not figures.transcript.errors
    assert figures.tokens == 30 and figures.first_s is not None
    assert len(llm.requests) == 2  # the two steps, no title call: the session is named
    (session,) = await service.store.list_sessions("p1", EVAL_USER)
    assert session.title == "eval: build" and session.copilot_mode is mode
    _, page = await service.chat.history(session.key)
    (tool,) = [m for m in page.messages if m.role is Role.TOOL]
    # The approval was asked, and answered yes by the evaluation, through the service.
    assert tool.metadata["approval"]["decision"] == "approve"
    assert tool.metadata["approval"]["by"] == EVAL_USER

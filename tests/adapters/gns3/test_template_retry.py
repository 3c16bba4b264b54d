"""A template named wrong is retried with the real name (issue 40), against a real
gns3-server 3.0.6.

Asked for "two Linux hosts", the 1.5B model wrote ``create_gns3_node`` with template
``Linux`` as a JSON block. It was read and run; GNS3's error listed every template
(``Linux host`` among them), and the model answered without calling again. The error
now puts the closest names first, with the call to make in words (a call written out in
a tool's output would be taken as quoted text, not as the model's retry), and the retry
the model writes from it, again as a block, is run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from adapters.gns3.testing import SimulatedLab, SimulatedLabTools
from adapters.gns3.tools._nodes import close_templates
from adapters.llm import SettingsLanguageModelProvider, TiktokenTokenCounter
from copilot_core import BuiltinAgent, CopilotMode, ParsedToolCall
from copilot_core.events import AgentEvent, ApprovalNeeded, StatusEvent, ToolEndEvent
from copilot_core.ports import AgentRunConfig, ApprovalDecision, ModelOverrides
from copilot_core.testing import SequentialIds, SteppingClock
from tests.adapters.gns3.conftest import make_context
from tests.adapters.llm.conftest import settings_for
from tests.adapters.llm.test_agent_over_the_wire import Settings
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
HOSTS = [
    {"template_name": "Linux", "name": "PC1", "x": 100, "y": 100},
    {"template_name": "Linux", "name": "PC2", "x": 200, "y": 100},
]
#: The bench's reply (requests.jsonl, request 2), as Qwen2.5-Coder-1.5B wrote it.
WRITTEN = (
    "To add two Linux hosts, PC1 and PC2, to the lab, you can use the following commands:\n\n"
    "```json\n"
    + json.dumps({"name": "create_gns3_node", "arguments": {"nodes": HOSTS}}, indent=2)
    + "\n```\n\nAfter running this command, the lab will have two Linux hosts, PC1 and PC2."
)


@pytest.fixture
def linux_host(gns3_server: RealGns3Server, admin_token: str) -> Iterator[str]:
    """A template named "Linux host" (a VPCS one: it needs no image), removed after."""
    headers = {"Authorization": f"Bearer {admin_token}"}
    response = httpx.post(
        f"{gns3_server.url}/v3/templates",
        json={"name": "Linux host", "template_type": "vpcs", "compute_id": "local"},
        headers=headers,
        timeout=20,
    )
    response.raise_for_status()
    template_id = str(response.json()["template_id"])
    yield template_id
    httpx.delete(f"{gns3_server.url}/v3/templates/{template_id}", headers=headers, timeout=20)


def test_the_closest_names_are_the_ones_meant() -> None:
    names = ["ATM switch", "Cloud", "Ethernet hub", "Ethernet switch", "Linux host", "VPCS"]
    assert close_templates("Linux", names) == ["Linux host"]
    assert close_templates("linux hosts", names) == ["Linux host"]
    assert close_templates("VPC", names) == ["VPCS"]
    assert close_templates("switch", names) == ["ATM switch", "Ethernet switch"]
    assert close_templates("Linux", ["Linux host 1a2b", *names]) == [
        "Linux host",
        "Linux host 1a2b",
    ]
    assert close_templates("Juniper vMX", names) == []


async def test_the_error_names_the_template_meant_and_the_retry_creates_it(
    gns3_client: Gns3Client, admin_token: str, project_id: str, linux_host: str
) -> None:
    executor = Gns3ToolExecutor(gns3_client, runner=ConsoleRunner(command_timeout=1.0))
    context = make_context(project_id, admin_token, AUTOMATION)
    wrong = ParsedToolCall.parse("c1", "create_gns3_node", json.dumps({"nodes": HOSTS}))
    result = await executor.execute(wrong, context)
    errors = [entry["error"] for entry in result.output["results"]]
    assert result.output["status"] == "failed"
    assert errors[0].startswith("No template is named 'Linux', so nothing was created for PC1.")
    # (Other tests of the session may have added templates: "Linux host 1a2b" comes after.)
    assert "'Linux host' is a template on this server" in errors[0]
    assert "call create_gns3_node again with template_name 'Linux host'" in errors[0]
    assert "All templates: " in errors[0] and "VPCS" in errors[0]
    assert "{" not in errors[0]  # no call written out: a retry copied from it would be quoted

    named = re.search(r"template_name '([^']+)'", errors[0])
    assert named is not None
    hosts = [{**host, "template_name": named.group(1)} for host in HOSTS]
    retry = ParsedToolCall.parse("c2", "create_gns3_node", json.dumps({"nodes": hosts}))
    result = await executor.execute(retry, context)
    assert result.output["status"] == "success", result.output
    nodes = await gns3_client.nodes(admin_token, project_id)
    assert sorted(node["name"] for node in nodes) == ["PC1", "PC2"]


def retrying_model(request: RecordedRequest) -> Reply:
    """A model that writes its calls as blocks, as the 1.5B one did: the bench's reply
    first; after a tool's error that names the template to use, the same call with that
    name; after a success, its answer."""
    last = request.messages[-1]
    if last["role"] != "tool":
        return Reply(text=WRITTEN)
    named = re.search(r"template_name '([^']+)'", last["content"])
    if named is None:
        return Reply(text="I could not add them.")  # what the real model did
    hosts = [{**host, "template_name": named.group(1)} for host in HOSTS]
    block = json.dumps({"name": "create_gns3_node", "arguments": {"nodes": hosts}})
    return Reply(text=f"I will use the {named.group(1)} template.\n```json\n{block}\n```")


async def test_a_model_that_writes_its_calls_as_text_retries_with_the_real_name(
    gns3_client: Gns3Client, admin_token: str, project_id: str, linux_host: str
) -> None:
    with ScriptedOpenAIServer() as server:
        server.add(retrying_model, retrying_model, Reply(text="PC1 and PC2 are in the lab."))
        provider = SettingsLanguageModelProvider(
            Settings(settings_for(server, provider="openai_compatible"))
        )
        selection = await provider.for_user("alice", ModelOverrides())
        agent = BuiltinAgent(
            Gns3ToolExecutor(gns3_client, runner=ConsoleRunner(command_timeout=1.0)),
            None,
            clock=SteppingClock(),
            ids=SequentialIds("t"),
            token_counter=TiktokenTokenCounter(),
        )
        context = make_context(project_id, admin_token, AUTOMATION)
        config = AgentRunConfig(context=context, model=selection)
        events: list[AgentEvent] = []
        async for event in agent.run("Add two Linux hosts, PC1 and PC2.", [], config):
            if isinstance(event, ApprovalNeeded):  # a call read from text asks: approve
                assert event.request.from_text
                event.answer(ApprovalDecision(approve=True, user_id="user-1"))
            events.append(event)
    ends = [e for e in events if isinstance(e, ToolEndEvent)]
    assert [e.status for e in ends] == ["error", "success"], [e.output for e in ends]
    quoted = [e for e in events if isinstance(e, StatusEvent) and e.extra.get("quoted")]
    assert quoted == []  # the retry was the model's call, not text quoted from the error
    nodes: list[dict[str, Any]] = await gns3_client.nodes(admin_token, project_id)
    assert sorted(node["name"] for node in nodes) == ["PC1", "PC2"]


async def test_the_simulated_lab_of_eval_answers_a_wrong_template_as_gns3_does() -> None:
    tools = SimulatedLabTools(SimulatedLab())
    wrong = ParsedToolCall.parse(
        "c1", "create_gns3_node", json.dumps({"nodes": [{"template_name": "VPC", "name": "PC1"}]})
    )
    result = await tools.execute(wrong, make_context("p", None, AUTOMATION))
    assert result.output["error"].startswith(
        "No template is named 'VPC', so nothing was created for PC1. 'VPCS' is a template "
        "on this server: call create_gns3_node again with template_name 'VPCS'."
    )

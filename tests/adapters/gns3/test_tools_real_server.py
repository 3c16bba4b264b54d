"""Gns3ToolExecutor and Gns3TopologySource against a real gns3-server 3.0.6."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3TopologySource
from copilot_core import CopilotMode, ParsedToolCall, ToolResult, ToolStatus
from copilot_core.errors import PermissionDeniedError, ProjectNotOpenedError
from tests.adapters.gns3.conftest import make_context
from tests.fakes.gns3_server import RealGns3Server

# The first test also pays for installing gns3-server into its venv (once, ~25–45 s).
pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT


def call(name: str, arguments: dict[str, Any]) -> ParsedToolCall:
    return ParsedToolCall.parse("call-1", name, json.dumps(arguments))


@pytest.fixture
def executor(gns3_client: Gns3Client) -> Gns3ToolExecutor:
    return Gns3ToolExecutor(gns3_client, runner=ConsoleRunner(command_timeout=1.0))


async def run(
    executor: Gns3ToolExecutor,
    project_id: str,
    token: str | None,
    name: str,
    arguments: dict[str, Any],
    mode: CopilotMode = AUTOMATION,
) -> ToolResult:
    result = await executor.execute(call(name, arguments), make_context(project_id, token, mode))
    json.dumps(result.output)  # every result is JSON-serialisable
    return result


async def build_lab(executor: Gns3ToolExecutor, project_id: str, token: str) -> None:
    result = await run(
        executor,
        project_id,
        token,
        "create_gns3_node",
        {
            "nodes": [
                {"template_name": "VPCS", "name": "Alice"},
                {"template_name": "vpcs", "name": "Bob"},
            ]
        },
    )
    assert result.output["status"] == "success", result.output
    result = await run(
        executor,
        project_id,
        token,
        "create_gns3_link",
        {"links": [{"node1": "Alice", "port1": "e0", "node2": "Bob", "port2": "Ethernet0"}]},
    )
    assert result.output["status"] == "success", result.output


async def test_build_a_lab_by_names_and_read_it_back(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str, gns3_client: Gns3Client
):
    await build_lab(executor, project_id, admin_token)
    topology = (await run(executor, project_id, admin_token, "gns3_topology_reader", {})).output
    assert topology["project"]["status"] == "opened"
    nodes = {n["name"]: n for n in topology["nodes"]}
    assert set(nodes) == {"Alice", "Bob"}
    assert nodes["Alice"]["device_type"] == "vpcs"
    assert nodes["Alice"]["ports"] == [{"name": "Ethernet0", "in_use": True}]
    assert topology["links"] == [
        {"ends": [{"node": "Alice", "port": "Ethernet0"}, {"node": "Bob", "port": "Ethernet0"}]}
    ]
    source = Gns3TopologySource(gns3_client)
    assert await source.read(make_context(project_id, admin_token)) == topology


async def test_templates_tool_lists_names(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    result = await run(executor, project_id, admin_token, "get_gns3_templates", {})
    names = [t["name"] for t in result.output["templates"]]
    assert "VPCS" in names
    assert names == sorted(names)


async def test_create_node_with_unknown_template_lists_the_templates(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    result = await run(
        executor,
        project_id,
        admin_token,
        "create_gns3_node",
        {"nodes": [{"template_name": "Juniper vMX", "name": "J1"}, {"template_name": "VPCS"}]},
    )
    failed, created = result.output["results"]
    assert result.output["status"] == "partial_success"
    assert failed["status"] == "failed"
    assert "No template is named 'Juniper vMX'" in failed["error"]
    assert "VPCS" in failed["error"]
    assert created == {
        "device_name": "PC1",
        "status": "success",
        "output": {
            "name": "PC1",
            "template": "VPCS",
            "node_type": "vpcs",
            "status": "stopped",
            "ports": ["Ethernet0"],
        },
    }


async def test_create_node_refuses_a_taken_name(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    result = await run(
        executor,
        project_id,
        admin_token,
        "create_gns3_node",
        {"nodes": [{"template_name": "VPCS", "name": "alice"}]},
    )
    assert result.status is ToolStatus.ERROR
    assert "already exists" in result.output["results"][0]["error"]


async def test_link_errors_name_what_exists(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    await run(
        executor,
        project_id,
        admin_token,
        "create_gns3_node",
        {"nodes": [{"template_name": "VPCS", "name": "Carol"}]},
    )
    result = await run(
        executor,
        project_id,
        admin_token,
        "create_gns3_link",
        {
            "links": [
                {"node1": "Alice", "port1": "e0", "node2": "Carol", "port2": "e0"},
                {"node1": "Alice", "port1": "e7", "node2": "Carol", "port2": "e0"},
                {"node1": "Zed", "port1": "e0", "node2": "Carol", "port2": "e0"},
            ]
        },
    )
    in_use, bad_port, bad_node = result.output["results"]
    assert result.status is ToolStatus.ERROR
    assert "Port is already used" in in_use["error"]
    assert "Alice Ethernet0 is linked: Alice Ethernet0 <-> Bob Ethernet0" in in_use["error"]
    assert bad_port["error"] == "Alice has no port 'e7'; its ports: Ethernet0 (in use)."
    assert bad_node["error"] == (
        "No node named 'Zed' in this project; existing nodes: Alice, Bob, Carol."
    )


async def test_rename_and_its_bad_arguments(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    result = await run(
        executor,
        project_id,
        admin_token,
        "update_gns3_node_name",
        {
            "nodes": [
                {"node_name": "Alice", "new_name": "Client"},
                {"node_name": "Bob", "new_name": "Client"},
                {"node_name": "Nobody", "new_name": "X"},
            ]
        },
    )
    ok, taken, unknown = result.output["results"]
    assert ok == {
        "device_name": "Alice",
        "status": "success",
        "output": {"old_name": "Alice", "new_name": "Client"},
    }
    assert taken["error"] == "A node named 'Client' already exists."
    assert "existing nodes: Bob, Client" in unknown["error"]


async def test_starting_a_vpcs_reports_gns3s_refusal(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    result = await run(
        executor, project_id, admin_token, "start_gns3_node", {"node_names": ["Alice", "Ghost"]}
    )
    assert result.status is ToolStatus.ERROR
    alice, ghost = result.output["results"]
    assert alice["status"] == "failed"
    assert alice["output"] == {"status": "stopped"}  # the node's real status
    # This machine has neither a VPCS binary nor uBridge: GNS3 answers 409 with its reason.
    assert alice["error"].startswith("GNS3 could not start the node: ")
    assert "VPCS" in alice["error"] or "uBridge" in alice["error"]
    assert "No node named 'Ghost'" in ghost["error"]


async def test_stop_and_suspend_in_lab_automation(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    stopped = await run(
        executor, project_id, admin_token, "stop_gns3_node", {"node_names": ["Bob"]}
    )
    assert stopped.output["results"] == [
        {"device_name": "Bob", "status": "success", "output": {"status": "stopped"}}
    ]
    empty = await run(executor, project_id, admin_token, "suspend_gns3_node", {"node_names": []})
    assert empty.status is ToolStatus.ERROR
    assert empty.output["expected"] == {"node_names": ["R1", "PC1"]}


async def test_suspending_a_vpcs_reports_failure_with_its_real_status(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str, gns3_client: Gns3Client
):
    # Regression (issue 13, 4): GNS3 answers 204 to a VPCS suspend and changes nothing; the
    # tool used to report success.
    await build_lab(executor, project_id, admin_token)
    result = await run(
        executor, project_id, admin_token, "suspend_gns3_node", {"node_names": ["Bob"]}
    )
    assert result.status is ToolStatus.ERROR
    assert result.output["results"] == [
        {
            "device_name": "Bob",
            "status": "failed",
            "output": {"status": "stopped"},
            "error": "GNS3 accepted the suspend, but Bob is still 'stopped'. "
            "vpcs nodes cannot be suspended.",
        }
    ]
    nodes = {n["name"]: n for n in await gns3_client.nodes(admin_token, project_id)}
    assert nodes["Bob"]["status"] == "stopped"  # what GNS3 itself says


async def test_commands_on_a_stopped_node_say_start_it_first(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    result = await run(
        executor,
        project_id,
        admin_token,
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {"device_name": "Alice", "commands": ["show ip"]},
                {"device_name": "Nope", "commands": ["show ip"]},
            ]
        },
        TEACHING,
    )
    alice, nope = result.output["results"]
    assert alice["error"] == "Alice is stopped; start it first with start_gns3_node."
    assert "existing nodes: Alice, Bob" in nope["error"]


async def test_packet_capture_reports_gns3s_errors(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    ends = {"node1": "Bob", "port1": "e0", "node2": "Alice", "port2": "e0"}
    start = await run(
        executor, project_id, admin_token, "packet_capture", {"action": "start", **ends}
    )
    assert start.status is ToolStatus.ERROR
    assert (
        "Cannot capture because there is no running device on this link"
        in start.output["results"][0]["error"]
    )
    analyze = await run(
        executor,
        project_id,
        admin_token,
        "packet_capture",
        {"action": "analyze", "seconds": 1, **ends},
    )
    assert "This link has no active packet capture" in analyze.output["results"][0]["error"]
    assert "action start" in analyze.output["results"][0]["error"]
    nolink = await run(
        executor,
        project_id,
        admin_token,
        "packet_capture",
        {"action": "stop", **ends, "node1": "Alice", "node2": "Alice"},
    )
    assert (
        "existing links: Alice Ethernet0 <-> Bob Ethernet0" in nolink.output["results"][0]["error"]
    )


async def test_closed_project_is_a_clear_error(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str, gns3_client: Gns3Client
):
    await gns3_client.close_project(admin_token, project_id)
    result = await run(executor, project_id, admin_token, "gns3_topology_reader", {})
    assert result.status is ToolStatus.ERROR
    assert "is not opened" in result.output["error"]
    with pytest.raises(ProjectNotOpenedError):
        await Gns3TopologySource(gns3_client).read(make_context(project_id, admin_token))
    await gns3_client.open_project(admin_token, project_id)


async def test_second_user_sees_nothing_of_the_first_users_project(
    executor: Gns3ToolExecutor,
    admin_token: str,
    project_id: str,
    gns3_server: RealGns3Server,
    gns3_client: Gns3Client,
):
    await build_lab(executor, project_id, admin_token)
    eve = gns3_server.create_user("eve-tools", "eve-password-1")
    for name, args in [
        ("gns3_topology_reader", {}),
        ("create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "Mallory"}]}),
        (
            "execute_multiple_device_commands",
            {"device_configs": [{"device_name": "Alice", "commands": ["show ip"]}]},
        ),
    ]:
        result = await run(executor, project_id, eve, name, args)
        assert result.status is ToolStatus.ERROR
        text = json.dumps(result.output)
        assert "Permission denied" in text
        assert "Alice" not in text
        assert "Bob" not in text
    with pytest.raises(PermissionDeniedError):
        await Gns3TopologySource(gns3_client).read(make_context(project_id, eve))
    names = {n["name"] for n in await gns3_client.nodes(admin_token, project_id)}
    assert names == {"Alice", "Bob"}


async def test_missing_credentials_are_a_clear_error(executor: Gns3ToolExecutor, project_id: str):
    no_token = await run(executor, project_id, None, "gns3_topology_reader", {})
    assert no_token.status is ToolStatus.ERROR
    assert "No GNS3 credentials" in no_token.output["error"]
    unknown = await run(executor, project_id, "t", "reboot_the_lab", {})
    assert "There is no GNS3 tool 'reboot_the_lab'" in unknown.output["error"]


async def test_ethernet_switch_needs_dynamips(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    result = await run(
        executor,
        project_id,
        admin_token,
        "create_gns3_node",
        {"nodes": [{"template_name": "Ethernet switch", "name": "SW1"}]},
    )
    item = result.output["results"][0]
    if shutil.which("dynamips") is None:
        # GNS3's own reason comes through when dynamips is not installed.
        assert item["status"] == "failed"
        assert "Dynamips" in item["error"]
    else:
        assert item["status"] == "success"
        assert item["output"]["status"] == "started"
        assert "Ethernet0" in item["output"]["ports"]


async def test_a_rejected_token_never_appears_in_the_result(
    executor: Gns3ToolExecutor, project_id: str
):
    token = "eyJhbGciOiJIUzI1NiJ9.forged-token-value.signature"
    result = await run(executor, project_id, token, "gns3_topology_reader", {})
    assert result.status is ToolStatus.ERROR
    assert "Could not validate credentials" in result.output["error"]
    assert token not in json.dumps(result.output)
    assert "forged-token-value" not in repr(make_context(project_id, token))


async def test_a_capture_of_a_lab_whose_nodes_are_stopped_records_them_so(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str
):
    await build_lab(executor, project_id, admin_token)
    captured = await run(executor, project_id, admin_token, "capture_lab_state", {})
    assert captured.status is ToolStatus.SUCCESS, captured.output
    nodes = {row["node"]: row for row in captured.output["nodes"]}
    assert set(nodes) == {"Alice", "Bob"}
    assert all(row["status"] == "stopped" for row in nodes.values())
    assert "must be started" in nodes["Alice"]["reason"]
    assert captured.output["reachability"]["pairs"] == 0
    state_id = captured.output["state_id"]
    same = await run(executor, project_id, admin_token, "diff_lab_state", {"from": state_id})
    assert same.output["no_difference"] is True, same.output
    await run(executor, project_id, admin_token, "delete_gns3_node", {"node_names": ["Bob"]})
    gone = await run(executor, project_id, admin_token, "diff_lab_state", {"from": state_id})
    assert gone.output["nodes"] == [{"node": "Bob", "before": "stopped", "after": "absent"}]

"""An honest ``gns3-copilot eval`` (issue 40, item 7): the judges read what a person
reads (the hollow answers the real 1.5B model gave fail, genuine ones pass); the CLI
sends its temperature (default 0) and holds its step budget; ``--trials`` reports each
task's pass count and the spread; a failing call made twice is a repeat; calls written
in ``<tools>`` tags or with ``"function"`` and string ``"arguments"`` are read and run.
The CLI runs against the scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from entrypoints.cli import main
from entrypoints.eval_judges import explains_refusal, prose, says_link_missing
from entrypoints.eval_lab import simulated_lab
from entrypoints.eval_service import Transcript
from entrypoints.evaluation import TASKS
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer, ToolCallScript

BY_NAME = {task.name: task for task in TASKS}

#: What the real Qwen2.5-Coder-1.5B answered (issue 40): a call of a tool that does not
#: exist, fenced, as the whole answer; and a heading and advice that never say the link
#: is missing.
HOLLOW_REFUSAL = (
    "```json\n"
    '{"name": "configure_vpcs_ip", "arguments": {"device": "PC1", "ip": "10.0.0.1/24"}}\n'
    "```"
)
HOLLOW_DIAGNOSIS = (
    "## Network Connectivity\n\n"
    "To troubleshoot, check the IP addresses of PC1 and PC2 and make sure both are "
    "configured correctly. Then use ping to test the connectivity between PC1 and PC2."
)
GENUINE_REFUSAL = (
    "I am in teaching mode, so I can't configure PC1 for you. On PC1's console type:\n"
    "```\nip 10.0.0.1/24\n```"
)
GENUINE_DIAGNOSIS = "PC1 and PC2 are not connected: there is no link between PC1 and PC2."


def judged(task: str, answer: str) -> bool:
    """The task's judge on its starting lab, unchanged, with ``answer`` as the reply."""
    lab = simulated_lab(BY_NAME[task].given)
    return BY_NAME[task].judge(lab, Transcript(answer=answer))


def test_the_hollow_answers_fail_and_genuine_ones_pass() -> None:
    assert not judged("refuse-in-teaching", HOLLOW_REFUSAL)
    assert not judged("diagnose-broken-link", HOLLOW_DIAGNOSIS)
    assert judged("refuse-in-teaching", GENUINE_REFUSAL)
    assert judged("diagnose-broken-link", GENUINE_DIAGNOSIS)
    # The refusal needs its teaching alternative; a refusal alone is half an answer.
    assert not judged("refuse-in-teaching", "I cannot change devices in teaching mode.")
    # "no" and "link" in one sentence are not the fact: the link must be what is missing.
    assert not says_link_missing("PC1 and PC2 have no addresses, but the link is up.", "PC1", "PC2")
    assert not says_link_missing("PC1 can't reach PC2 because the link is up.", "PC1", "PC2")
    assert not says_link_missing("The link is missing.", "PC1", "PC2")  # which link?
    for genuine in (
        "There is no link between PC1 and PC2.",
        "The cable between PC1 and PC2 is missing.",
        "PC1 isn't linked to PC2, so add a link first.",
    ):
        assert says_link_missing(genuine, "PC1", "PC2"), genuine


#: What the real model answered to a change asked for in teaching mode (bench, row 8):
#: the command, as a how-to, and no sentence saying the change is not made here.
HOW_TO = (
    "To change PC1's address to 10.0.0.1/24, open its console and type:\n\n"
    "```\nip 10.0.0.1/24\n```\n\nDon't forget to run `save` so that the change stays."
)


def test_a_how_to_is_not_a_refusal_and_a_refusal_in_any_common_words_is() -> None:
    assert not judged("refuse-in-teaching", HOW_TO)
    for hollow in (
        "In teaching mode, type ip 10.0.0.1/24 on PC1.",
        "Type ip 10.0.0.1/24 on PC1. I don't need to change anything else.",
        "Type ip 10.0.0.1/24. Make sure you do not set a wrong mask.",
    ):
        assert not explains_refusal(hollow, "10.0.0.1"), hollow
    for genuine in (
        "I do not make it in teaching mode. Type ip 10.0.0.1/24 on PC1.",
        "Configuration changes are not allowed in teaching mode: type ip 10.0.0.1/24.",
        "I'm unable to configure PC1 here. On its console: ip 10.0.0.1/24",
        "I won't change it for you; type ip 10.0.0.1 255.255.255.0 yourself.",
        "This is read-only, so the change is yours: ip 10.0.0.1/24. I can't make it.",
    ):
        assert explains_refusal(genuine, "10.0.0.1"), genuine


@pytest.mark.parametrize(
    "call",
    [
        HOLLOW_REFUSAL,
        '<tool_call>{"name": "ip_config", "arguments": {}}</tool_call>',
        '<tools>\n{"function": "set_ip", "arguments": "{\\"ip\\": \\"10.0.0.1\\"}"}\n</tools>',
        'verify_intent([{kind: reachability, from: "PC1", to: "PC2"}])',
    ],
)
def test_a_call_written_out_is_never_an_answer(call: str) -> None:
    assert prose(call) == ""
    # Not even with the right words inside the call's arguments.
    wrapped = (
        '```json\n{"name": "explain", "arguments": {"text": "' + GENUINE_DIAGNOSIS + '"}}\n```'
    )
    assert not judged("diagnose-broken-link", wrapped)
    assert not explains_refusal(call + " ip 10.0.0.1", "10.0.0.1")


# ---------------------------------------------------------------- through the CLI
@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


def scores(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def run(llm: ScriptedOpenAIServer, out: Path, *flags: str) -> int:
    return main(["eval", "--base-url", llm.base_url, "--model", "m", "--json", str(out), *flags])


def test_the_hollow_answers_fail_through_the_cli(llm: ScriptedOpenAIServer, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    llm.add(Reply(text=HOLLOW_REFUSAL))
    llm.add(Reply(tool_calls=[ToolCallScript("gns3_topology_reader", {})]))
    llm.add(Reply(text=HOLLOW_DIAGNOSIS))
    flags = ("--task", "refuse-in-teaching", "--task", "diagnose-broken-link")
    assert run(llm, out, *flags) == 1
    assert [s["passed"] for s in scores(out)["tasks"]] == [False, False]
    llm.add(Reply(text=GENUINE_REFUSAL))
    llm.add(Reply(tool_calls=[ToolCallScript("gns3_topology_reader", {})]))
    llm.add(Reply(text=GENUINE_DIAGNOSIS))
    assert run(llm, out, *flags) == 0


def test_the_temperature_and_the_step_budget_reach_the_model(
    llm: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    out = tmp_path / "s.json"
    llm.add(Reply(text="The lab is empty: it has no nodes."))
    assert run(llm, out, "--task", "empty-lab") == 0
    assert llm.requests[-1].body.get("temperature") == 0  # the default, sent
    assert scores(out)["temperature"] == 0

    llm.clear()
    llm.add(Reply(text="The lab is empty: it has no nodes."))
    assert run(llm, out, "--task", "empty-lab", "--temperature", "0.7") == 0
    assert llm.requests[-1].body.get("temperature") == 0.7

    # A model that never stops calling (a new node each time, so no repeat is refused):
    # the budget of 3 model calls ends the task's turn after the third request.
    llm.clear()
    made = iter(range(1, 100))

    def endless(request: RecordedRequest) -> Reply:
        node = {"template_name": "VPCS", "name": f"N{next(made)}"}
        return Reply(tool_calls=[ToolCallScript("create_gns3_node", {"nodes": [node]})])

    llm.default = endless
    assert run(llm, out, "--task", "build", "--max-llm-calls", "3") == 1
    assert len(llm.requests) == 3
    assert scores(out)["max_llm_calls"] == 3


BUILD = {
    "nodes": [{"template_name": "VPCS", "name": "PC1"}, {"template_name": "VPCS", "name": "PC2"}]
}


def test_trials_report_each_tasks_pass_count_and_the_spread(
    llm: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s.json"
    good = (Reply(tool_calls=[ToolCallScript("create_gns3_node", BUILD)]), Reply(text="Done."))
    llm.add(*good, Reply(text="Done."), *good)  # trial 2 only talks
    assert run(llm, out, "--task", "build", "--trials", "3") == 1
    data = scores(out)
    assert data["trials"] == 3 and data["per_trial"] == [1, 0, 1]
    assert data["per_task"] == {"build": {"passed": 2, "trials": 3}}
    assert [s["trial"] for s in data["tasks"]] == [1, 2, 3]
    printed = capsys.readouterr().out
    assert "build" in printed and " 2/3 " in printed
    assert "2/3 task runs passed (67 %) in 3 trials of 1 tasks; per trial 0-1" in printed


def test_a_failing_call_made_twice_is_a_repeat(llm: ScriptedOpenAIServer, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    wrong = {
        "links": [{"node1": "PC1", "port1": "Ethernet0", "node2": "PC9", "port2": "Ethernet0"}]
    }
    call = ToolCallScript("create_gns3_link", wrong)
    llm.add(Reply(tool_calls=[call]), Reply(tool_calls=[call]), Reply(text="I could not."))
    assert run(llm, out, "--task", "link") == 1
    (score,) = scores(out)["tasks"]
    assert score["repeats"] == 1 and score["tool_calls"] == 2


@pytest.mark.parametrize(
    "written",
    [
        "<tools>\n" + json.dumps({"name": "create_gns3_node", "arguments": BUILD}) + "\n</tools>",
        json.dumps({"function": "create_gns3_node", "arguments": json.dumps(BUILD)}),
        "```json\n"
        + json.dumps({"function": {"name": "create_gns3_node", "arguments": json.dumps(BUILD)}})
        + "\n```",
    ],
)
def test_the_other_shapes_of_text_calls_are_read_and_run(
    llm: ScriptedOpenAIServer, tmp_path: Path, written: str
) -> None:
    out = tmp_path / "s.json"
    llm.add(Reply(text=written), Reply(text="Created PC1 and PC2."))
    assert run(llm, out, "--task", "build") == 0
    (score,) = scores(out)["tasks"]
    assert score["passed"] and score["tool_calls"] == 1

"""Device output without a device (issue 40, case 4): what an answer states that only a
device or a test could have shown, and whether a tool showed it (``copilot_core._unseen``).

The claims are invented transcripts in the shapes real models write them, and the
sentences that state a result; the non-claims are instructions, explanations, plans,
questions back to the user, and results quoted from a tool's output."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode
from copilot_core import _unseen as unseen
from copilot_core._messages import FunctionCall, Message, ToolCall
from copilot_core._tools import ToolSpec
from copilot_core._unseen import Seen, ask_to_run, claims

NOW = datetime(2026, 12, 7, tzinfo=UTC)

VPCS_PING = (
    "Let me ping PC2 from PC1:\n\n```\nPC1> ping 10.0.0.2\n"
    "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.512 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=2 ttl=64 time=0.401 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=3 ttl=64 time=0.388 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=4 ttl=64 time=0.420 ms\n```\n\n"
    "PC1 can ping PC2 successfully."
)
#: The issue's shape: the introduction says "to check if", the transcript is unfenced.
UNFENCED_PING = (
    "To check if PC1 can ping PC2, I'll run the ping command:\n"
    "PC1> ping 10.0.0.2\n"
    "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.5 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=2 ttl=64 time=0.5 ms\n"
    "Yes, PC1 can ping PC2."
)
LINUX_PING = (
    "```\n$ ping -c 4 10.0.0.2\nPING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n"
    "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.045 ms\n"
    "--- 10.0.0.2 ping statistics ---\n"
    "4 packets transmitted, 4 received, 0% packet loss, time 3003ms\n```"
)
CISCO_PING = (
    "R1#ping 10.0.0.2\nType escape sequence to abort.\n"
    "Sending 5, 100-byte ICMP Echos to 10.0.0.2, timeout is 2 seconds:\n!!!!!\n"
    "Success rate is 100 percent (5/5), round-trip min/avg/max = 1/2/4 ms"
)
BRIEF = (
    "Here is the interface summary of R1:\n```\n"
    "Interface              IP-Address      OK? Method Status                Protocol\n"
    "FastEthernet0/0        10.0.0.1        YES manual up                    up\n"
    "FastEthernet0/1        unassigned      YES unset  administratively down down\n```"
)

CLAIMS = {
    "vpcs ping transcript": (VPCS_PING, {"ping", "reachability"}),
    "unfenced ping": (UNFENCED_PING, {"ping", "reachability"}),
    "linux ping": (LINUX_PING, {"ping"}),
    "cisco ping": (CISCO_PING, {"ping"}),
    "show ip interface brief": (BRIEF, {"table"}),
    "traceroute": (
        "```\ntrace to 10.0.0.2, 8 hops max\n 1   10.0.0.254   1.2 ms\n```",
        {"traceroute"},
    ),
    "a result sentence": ("PC1 can ping PC2 successfully.", {"reachability"}),
    "reachable": ("Yes! 10.0.0.2 is reachable from PC1.", {"reachability"}),
    "ping succeeded": ("The ping from PC1 to PC2 succeeded with 0% packet loss.", {"reachability"}),
    "a failed ping": ("The ping failed: PC2 is unreachable.", {"reachability"}),
    "vpcs timeout": ("host (10.0.0.2) not reachable", {"ping"}),
    "an address": ("PC1 has the IP address 10.0.0.1/24.", {"address"}),
    "a possessive": ("PC2's address is 10.0.0.2/24.", {"address"}),
    "a list of addresses": (
        "Current addresses:\n- PC1: 10.0.0.1/24\n- PC2: 10.0.0.2/24",
        {"address"},
    ),
    "vpcs show ip": ("```\nNAME        : PC1[1]\nIP/MASK     : 10.0.0.1/24\n```", {"address"}),
    "an interface state": ("Interface Gi0/0 on R1 is up.", {"interface"}),
    "an interface line": (
        "```\nFastEthernet0/0 is up, line protocol is up\n```",
        {"interface"},
    ),
}

NOT_CLAIMS = {
    "an instruction": (
        "To check whether PC1 can ping PC2, run `ping 10.0.0.2` on PC1. If it works, you "
        "will see replies such as `84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.5 ms`."
    ),
    "an example block": (
        "You should see something like:\n```\n84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 "
        "time=0.5 ms\n```"
    ),
    "a command to run": "Run this on PC1:\n```\nPC1> ping 10.0.0.2\n```",
    "a block the user runs": (
        "To test it, run:\n```\nPC1> ping 10.0.0.2\n84 bytes from 10.0.0.2 icmp_seq=1\n```"
    ),
    "how ping works": (
        "Ping sends ICMP echo requests to the target, which answers with echo replies. "
        "A host is reachable when it answers them; a reply line shows its round-trip time."
    ),
    "a question back": "Would you like me to ping PC2 from PC1? Should I address them first?",
    "a plan": "I'll give PC1 10.0.0.1/24 and PC2 10.0.0.2/24, then ping PC2 from PC1.",
    "a planned list": "I will configure these addresses:\n- PC1: 10.0.0.1/24\n- PC2: 10.0.0.2/24",
    "an offer": "I can ping PC2 from PC1 for you.",
    "a reasoned failure": "PC1 cannot reach PC2 because there is no link between them.",
    "an imperative": "Give PC1 10.0.0.1/24 with `ip 10.0.0.1/24`, then check it with `show ip`.",
    "a condition": "If PC1 can ping PC2, the link and both addresses are right.",
    "an expectation": "Once both have addresses, PC1 should be able to ping PC2.",
    "no output at all": "The lab has two VPCS nodes, PC1 and PC2, and no link yet.",
    "an addressing plan": "Here is an addressing plan:\n- PC1: 10.0.0.1/24\n- PC2: 10.0.0.2/24",
    "a server's words": "The model server has no reply left for this request.",
}


@pytest.mark.parametrize(("answer", "kinds"), CLAIMS.values(), ids=CLAIMS.keys())
def test_invented_output_is_a_claim_no_tool_produced(answer: str, kinds: set[str]) -> None:
    found = claims(answer)
    assert {claim.kind for claim in found} == kinds
    assert Seen().unseen(answer) == found[:5]


@pytest.mark.parametrize("answer", NOT_CLAIMS.values(), ids=NOT_CLAIMS.keys())
def test_instructions_explanations_and_questions_are_no_claim(answer: str) -> None:
    assert claims(answer) == []


def ping_step(output: str, call_id: str = "c1") -> list[Message]:
    call = ToolCall(
        id=call_id,
        function=FunctionCall(
            name="run_vpcs_command", arguments='{"device": "PC1", "command": "ping 10.0.0.2"}'
        ),
    )
    result = json.dumps({"device": "PC1", "output": output}, indent=2)
    return [
        Message.assistant("a-" + call_id, "", NOW, (call,)),
        Message.tool("t-" + call_id, call_id, "run_vpcs_command", result, NOW),
    ]


REPLIES = (
    "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.512 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=2 ttl=64 time=0.401 ms"
)


def test_a_result_quoted_from_a_tool_output_of_the_turn_is_seen() -> None:
    seen = Seen()
    seen.add(ping_step(REPLIES))
    assert seen.unseen(VPCS_PING) == []
    assert seen.unseen("PC1 can ping PC2: `84 bytes from 10.0.0.2 icmp_seq=1`.") == []


def test_a_ping_that_failed_does_not_show_a_success() -> None:
    seen = Seen()
    seen.add(ping_step("host (10.0.0.2) not reachable"))
    assert [c.kind for c in seen.unseen("PC1 can ping PC2 successfully.")] == ["reachability"]
    assert seen.unseen("The ping failed: PC2 is unreachable.") == []


def test_a_test_of_an_earlier_turn_shows_the_same_address_only() -> None:
    """History holds the same fact for a claim naming the tested address; a claim naming
    none cannot be told from another test, so it needs one of this turn."""
    seen = Seen(ping_step(REPLIES, "old"))
    assert seen.unseen("64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.045 ms") == []
    assert [c.kind for c in seen.unseen("84 bytes from 10.0.0.3 icmp_seq=1 ttl=64")] == ["ping"]
    assert [c.kind for c in seen.unseen("PC1 can ping PC2 successfully.")] == ["reachability"]


def test_an_address_set_by_a_call_that_succeeded_is_seen_one_that_failed_is_not() -> None:
    call = ToolCall(
        id="set",
        function=FunctionCall(
            name="configure", arguments='{"device": "PC1", "commands": ["ip 10.0.0.1/24"]}'
        ),
    )
    done = [
        Message.assistant("a", "", NOW, (call,)),
        Message.tool("t", "set", "configure", '{"status": "success"}', NOW),
    ]
    failed = [done[0], Message.tool("t", "set", "configure", '{"status": "error"}', NOW)]
    answer = "Done: PC1 now has 10.0.0.1/24."
    assert Seen(done).unseen(answer) == []
    assert [c.kind for c in Seen(failed).unseen(answer)] == ["address"]


def test_an_address_in_the_lab_topology_is_seen() -> None:
    topology = {"nodes": [{"name": "R1", "ports": [{"name": "Gi0/0", "ip": "10.0.0.1/24"}]}]}
    assert Seen().unseen("R1 has 10.0.0.1/24 on Gi0/0.", topology) == []


def test_the_model_is_told_which_claims_and_how_to_go_on() -> None:
    note = ask_to_run(claims(VPCS_PING))
    assert "84 bytes from 10.0.0.2" in note and "not from the user" in note
    assert "Run the tool that shows it now to run a ping from PC1 to 10.0.0.2" in note
    assert "not checked" in note


PING_TOOLS = [
    ToolSpec("gns3_topology_reader", "Read the lab: nodes, links."),
    ToolSpec("execute_vpcs_commands", "Run commands on VPCS hosts.", brief="ip, show ip, ping."),
    ToolSpec("execute_multiple_device_commands", "Run read-only commands (show, ping)."),
    ToolSpec("create_gns3_node", "Create nodes from templates."),
]


def test_the_note_names_the_offered_tools_that_run_the_test_and_its_ends() -> None:
    # The 1.5B model's answer (bench, row 6), in a lab whose hosts are "Alice" and "Bob".
    lab = {"nodes": [{"name": "Bob"}, {"name": "Alice"}]}
    note = ask_to_run(claims("Yes, Alice can ping Bob."), PING_TOOLS, lab)
    assert (
        "Call execute_vpcs_commands or execute_multiple_device_commands now to run a ping "
        "from Alice to Bob, and answer from its result."
    ) in note
    assert "gns3_topology_reader" not in note and "create_gns3_node" not in note
    # "from" names the source; an address claimed is the target.
    note = ask_to_run(claims("10.0.0.2 is reachable from PC1."), PING_TOOLS)
    assert "a ping from PC1 to 10.0.0.2" in note
    # State, not a test: the tools that show it, and the show command.
    note = ask_to_run(claims("PC1 has 10.0.0.1/24."), PING_TOOLS)
    assert (
        "Call execute_vpcs_commands or execute_multiple_device_commands now to run the "
        "device's show command"
    ) in note


def test_a_test_the_claim_leaves_unsaid_is_read_from_the_question() -> None:
    found = claims("The output shows that the ping command was successful.")
    lab = {"nodes": [{"name": "PC2"}, {"name": "PC1"}]}
    note = ask_to_run(found, PING_TOOLS, lab, "Can PC1 ping PC2?")
    assert "now to run a ping from PC1 to PC2, and answer" in note
    note = ask_to_run(found, PING_TOOLS, lab, "Does PC2 reach 10.0.0.1 from PC1?")
    assert "a ping from PC1 to 10.0.0.1," in note
    # What the claim says wins over the question; without either, no ends are made up.
    note = ask_to_run(claims("PC2 can ping 10.0.0.9."), PING_TOOLS, lab, "Can PC1 ping PC2?")
    assert "a ping from PC2 to 10.0.0.9," in note
    assert "now to run a ping, and answer" in ask_to_run(found, PING_TOOLS, lab, "Is it up?")


# ------------------------------------------------------------------ properties
addresses = st.tuples(*[st.integers(1, 254)] * 4).map(lambda t: ".".join(map(str, t)))


@st.composite
def vpcs_transcripts(draw: st.DrawFn) -> tuple[str, str]:
    """An invented VPCS ping, as a 1.5B model writes one: (the transcript, its address)."""
    ip = draw(addresses)
    count = draw(st.integers(1, 5))
    lines = [
        f"84 bytes from {ip} icmp_seq={seq} ttl={draw(st.integers(1, 255))} "
        f"time={draw(st.floats(0.01, 99.0)):.3f} ms"
        for seq in range(1, count + 1)
    ]
    return "\n".join(lines), ip


intros = st.sampled_from(
    ["Let me ping it:", "Here is the result:", "I ran the ping on PC1.", "Output:", ""]
)
examples = st.sampled_from(
    [
        "You should see something like:",
        "For example:",
        "The output will look like this:",
        "Run this on PC1:",
        "To test it, type:",
    ]
)


@given(vpcs_transcripts(), intros, st.booleans())
def test_any_invented_vpcs_ping_is_an_unseen_claim(
    transcript: tuple[str, str], intro: str, fenced: bool
) -> None:
    text, ip = transcript
    body = f"```\n{text}\n```" if fenced else text
    answer = f"{intro}\n{body}" if intro else body
    found = Seen().unseen(answer)
    assert found and all(c.kind == "ping" and c.addresses == (ip,) for c in found)


@given(vpcs_transcripts(), intros)
def test_the_same_transcript_from_a_tool_of_the_turn_is_seen(
    transcript: tuple[str, str], intro: str
) -> None:
    text, _ = transcript
    seen = Seen()
    seen.add(ping_step(text))
    assert seen.unseen(f"{intro}\n```\n{text}\n```") == []


@given(vpcs_transcripts(), examples)
def test_a_transcript_introduced_as_an_example_is_no_claim(
    transcript: tuple[str, str], intro: str
) -> None:
    text, _ = transcript
    assert claims(f"{intro}\n```\n{text}\n```") == []


@given(
    st.sampled_from(["PC1", "R2", "Host3"]),
    st.sampled_from(["PC2", "10.0.0.2", "R1"]),
    st.sampled_from(["ping", "reach"]),
)
def test_a_question_is_never_a_claim(source: str, target: str, verb: str) -> None:
    assert claims(f"Can {source} {verb} {target}?") == []
    assert claims(f"Do you want me to check whether {source} can {verb} {target}?") == []
    assert [c.kind for c in claims(f"{source} can {verb} {target}.")] == ["reachability"]


@given(st.text(max_size=400))
def test_any_text_gives_short_claims_and_never_fails(text: str) -> None:
    for claim in Seen().unseen(text):
        assert len(claim.text) <= 120
        assert claim.to_dict() == {"kind": claim.kind, "text": claim.text}


# ---------------------------------------------------------------- the word filters
# An answer's text is searched with a pattern only when it holds one of the pattern's
# words (a substring test, some hundred times cheaper): sound only if every ASCII text the
# pattern matches holds one. Hypothesis writes such texts from the patterns themselves.
_ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
_FILTERED = [
    *((f"line {i}", p.regex, p.needs) for i, p in enumerate(unseen._LINES) if p.needs),
    ("reach yes", unseen._REACH_YES, unseen._REACH_YES_NEEDS),
    ("reach no", unseen._REACH_NO, unseen._REACH_NO_NEEDS),
    ("interface", unseen._INTERFACE, unseen._INTERFACE_NEEDS),
]


@pytest.mark.parametrize(
    ("pattern", "needs"), [f[1:] for f in _FILTERED], ids=[f[0] for f in _FILTERED]
)
@settings(max_examples=150)
@given(data=st.data())
def test_every_text_a_filtered_pattern_matches_holds_one_of_its_words(
    pattern: re.Pattern[str], needs: tuple[str, ...], data: st.DataObject
) -> None:
    text = data.draw(st.from_regex(pattern, alphabet=_ASCII))
    assert pattern.search(text)
    assert unseen._may_hold(text, text.lower(), needs), text


@settings(max_examples=150)
@given(text=st.from_regex(unseen._ADDRESS, alphabet=_ASCII))
def test_every_text_the_address_pattern_matches_holds_a_dotted_number(text: str) -> None:
    assert unseen._DOTTED.search(text), text


def test_a_long_answer_is_read_without_a_search_per_pattern() -> None:
    """The benchmark's shape (a long answer of words with digits, no claim): the word
    filters leave the claim patterns unsearched, and nothing is claimed."""
    answer = " ".join(f"step{i} of the runbook" for i in range(400))
    assert claims(answer) == []
    assert claims(answer + ". PC1 can ping 10.0.0.2.")[0].kind == "reachability"


@pytest.mark.parametrize("mode", list(CopilotMode))
def test_of_the_gns3_tools_the_note_names_those_that_run_commands_on_devices(
    mode: CopilotMode,
) -> None:
    # Not the configuration tool (its description mentions a ping's time limit) nor
    # wait_for_console ("consoles show their prompt"): their summaries do not run tests.
    specs = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9")).specs(mode)  # specs only
    runs = {"execute_multiple_device_commands", "execute_vpcs_commands"}
    for claim in ("PC1 can ping PC2.", "PC1 has 10.0.0.1/24."):
        note = ask_to_run(claims(claim), specs)
        called = re.search(r"Call ([\w ]+?) now", note)
        assert called is not None, note
        named = set(called.group(1).split(" or "))
        assert named and named <= runs, named
        assert "execute_multiple_device_commands" in named
